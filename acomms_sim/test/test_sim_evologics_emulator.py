"""evologics_emulator: two S2C modems on ptys exchange an instant message with acknowledgement;
the USBL modem reports a fix; a bad --modem is one clear error line."""

import os
import select
import time

import pytest

from acomms_driver.evologics import at_protocol as at
from acomms_driver.evologics.at_stream import AtStreamReader
from acomms_sim.emulator import evologics_emulator as emulator


def _read_until(fd, reader, kind, timeout=8.0):
    items, deadline = [], time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.1)
        if ready:
            items += reader.feed(os.read(fd, 4096))
        if any(isinstance(item, kind) for item in items):
            return items
    raise AssertionError(f"no {kind.__name__} in {items}")


def test_two_modems_on_ptys_exchange_an_instant_message():
    specs = [emulator.parse_modem("1:0,0,2:usbl"), emulator.parse_modem("2:400,0,30")]
    backend, served = emulator.start_modems(specs, usbl_seed=3)
    fds = [os.open(server.path, os.O_RDWR | os.O_NOCTTY) for _, server in served]
    try:
        ship, auv = (AtStreamReader("modem") for _ in fds)
        os.write(fds[0], b"AT?AL\n")
        assert _read_until(fds[0], ship, at.Reply)[0] == at.Reply("1")
        os.write(fds[0], at.format_sendim(2, b"\x00U\n\r", ack=True))
        received = _read_until(fds[1], auv, at.InstantMessage)
        assert [i.data for i in received if isinstance(i, at.InstantMessage)] == [b"\x00U\n\r"]
        items = _read_until(fds[0], ship, at.DeliveryReport)
        items += _read_until(fds[0], ship, at.UsblLong, timeout=2.0) if not any(
            isinstance(i, at.UsblLong) for i in items) else []
        fix = next(i for i in items if isinstance(i, at.UsblLong))
        assert fix.remote == 2 and fix.slant_range_m == pytest.approx(401.0, abs=10.0)
    finally:
        for fd in fds:
            os.close(fd)
        for model, server in served:
            server.close()
            model.close()
        backend.close()


def test_bad_modem_argument_is_one_clear_line(capsys):
    assert emulator.main(["--modem", "1:0,0"]) == 2
    assert capsys.readouterr().err.strip() == (
        "evologics_emulator: --modem '1:0,0': expected ADDRESS:NORTH,EAST,DEPTH[:usbl]")


def test_link_dir_links_each_pty(tmp_path):
    backend, served = emulator.start_modems([emulator.parse_modem("4:0,0,5")],
                                            link_dir=str(tmp_path / "s2c"))
    try:
        (_, server), = served
        assert os.path.realpath(tmp_path / "s2c" / "modem4") == server.path
    finally:
        for model, server in served:
            server.close()
            model.close()
        backend.close()
    assert not os.path.lexists(tmp_path / "s2c" / "modem4")
