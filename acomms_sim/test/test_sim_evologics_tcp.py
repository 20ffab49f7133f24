"""evologics_emulator --tcp-port: S2C modems on TCP ports (raw byte mode). A binary payload with
CR/LF and "+++" inside crosses intact, a reconnecting host replaces the old one with a clean
frame buffer, bad TCP flags are one clear line, the exit summary counts connections."""

import signal
import socket
import subprocess
import sys
import time

import pytest

from acomms_driver.evologics import at_protocol as at
from acomms_driver.evologics.at_stream import AtStreamReader
from acomms_sim.emulator import evologics_emulator as emulator

PAYLOAD = b"\r\n+++AT\x00\n\r+++\xff"
WAIT_S = 8.0


def _read_until(sock, reader, kind, timeout=WAIT_S):
    items, deadline = [], time.monotonic() + timeout
    sock.settimeout(0.1)
    while time.monotonic() < deadline:
        try:
            chunk = sock.recv(4096)
        except TimeoutError:
            chunk = None
        if chunk == b"":
            break
        if chunk:
            items += reader.feed(chunk)
        if any(isinstance(item, kind) for item in items):
            return items
    raise AssertionError(f"no {kind} in {items}")


@pytest.fixture
def modems():
    specs = [emulator.parse_modem("1:0,0,2:usbl"), emulator.parse_modem("2:400,0,30")]
    backend, served = emulator.start_modems(specs, usbl_seed=3, tcp=emulator.TcpServing(0))
    yield served
    emulator.stop_modems(backend, served)


def _connect(server) -> socket.socket:
    return socket.create_connection(("127.0.0.1", server.port), timeout=WAIT_S)


@pytest.mark.parametrize("send", [at.format_sendim, at.format_send], ids=["im", "burst"])
def test_binary_payload_crosses_intact_over_tcp(modems, send):
    (_, ship_server), (_, auv_server) = modems
    assert ship_server.path == f"tcp 127.0.0.1:{ship_server.port}" and ship_server.port > 0
    with _connect(ship_server) as ship, _connect(auv_server) as auv:
        ship_reader, auv_reader = AtStreamReader("modem"), AtStreamReader("modem")
        ship.sendall(send(2, PAYLOAD, True) if send is at.format_sendim else send(2, PAYLOAD))
        items = _read_until(auv, auv_reader, (at.InstantMessage, at.BurstData))
        assert [i.data for i in items if hasattr(i, "data")] == [PAYLOAD]
        report = next(i for i in _read_until(ship, ship_reader, at.DeliveryReport)
                      if isinstance(i, at.DeliveryReport))
        assert report.delivered and not ship_reader.counters.get("refused_bad_fields")


def test_a_new_host_replaces_the_old_with_a_clean_frame_buffer(modems):
    (model, server), _ = modems
    with _connect(server) as old:
        old.sendall(b"AT*SENDIM,30,2,ack,half a fram")  # never completed
        time.sleep(0.2)
        with _connect(server) as new:
            assert old.recv(10) == b"", "the old host was not replaced"
            new.sendall(b"AT?AL\r\n")
            items = _read_until(new, AtStreamReader("modem"), at.Reply)
    assert next(i for i in items if isinstance(i, at.Reply)) == at.Reply("1")
    assert server.counters["clients_replaced"] == 1 and model.counters["tx_im"] == 0


def test_tcp_flags_refused_with_one_line(capsys):
    assert emulator.main(["--modem", "1:0,0,2", "--modem", "2:0,0,2", "--tcp-port",
                          "65535"]) == 2
    assert capsys.readouterr().err.strip() == (
        "evologics_emulator: --tcp-port 65535: modem 2 would be on port 65536, past 65535")
    assert emulator.main(["--modem", "1:0,0,2", "--tcp-port", "0", "--write-timeout",
                          "0"]) == 2
    assert capsys.readouterr().err.strip() == "evologics_emulator: write_timeout_s must be > 0"
    assert emulator.main(["--modem", "1:0,0,2", "--tcp-port", "0", "--link-dir", "/tmp/x"]) == 2
    assert capsys.readouterr().err.strip() == ("evologics_emulator: --link-dir links ptys; with "
                                               "--tcp-port drivers connect to the ports")


def test_command_line_serves_tcp_and_prints_the_summary():
    process = subprocess.Popen(
        [sys.executable, "-m", "acomms_sim.emulator.evologics_emulator", "--modem",
         "3:0,0,5", "--tcp-port", "0"], stdout=subprocess.PIPE, text=True)
    try:
        line = process.stdout.readline()
        assert line.startswith("evologics_emulator: address 3: tcp 127.0.0.1:"), line
        port = int(line.rsplit(":", 1)[1])
        with socket.create_connection(("127.0.0.1", port), timeout=WAIT_S) as sock:
            sock.sendall(b"AT?AL\n")
            assert _read_until(sock, AtStreamReader("modem"), at.Reply)[0] == at.Reply("3")
    finally:
        process.send_signal(signal.SIGTERM)
        out, _ = process.communicate(timeout=WAIT_S)
    assert process.returncode == 0
    assert f"evologics_emulator: address 3 port {port}: connections 1" in out
