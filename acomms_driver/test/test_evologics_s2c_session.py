"""S2CSession (ROS-free) against two emulated S2C modems on ptys: address set at connection,
an instant message and a burst delivered with their reports, USBL fixes on the USBL side,
RECVSTART (extended notifications turned on at connection) before each reception, a ping
answered with AT?T's travel time, stray replies and hostile lines counted and skipped."""

import math
import threading
import time

import pytest

from acomms_core.modems.profile import PacketRefused
from acomms_driver.evologics import at_protocol as at
from acomms_driver.evologics.s2c_session import S2CCallbacks, S2CSession, S2CSettings, outgoing
from acomms_driver.micromodem.modem_link import SerialLink
from acomms_sim.emulator import evologics_emulator as emulator


def _wait(predicate, timeout_s=10.0):
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.02)
    return predicate()


@pytest.fixture
def sessions():
    specs = [emulator.parse_modem("1:0,0,2:usbl"), emulator.parse_modem("2:300,0,20")]
    backend, served = emulator.start_modems(specs, usbl_seed=5)
    events = {name: [] for name in ("a", "b")}
    lock = threading.Lock()
    made = {}
    for name, (_, server) in zip(events, served, strict=True):
        def record(*args, _name=name):
            with lock:
                events[_name].append(args)
        callbacks = S2CCallbacks(
            on_packet=lambda item, r=record: r("packet", item),
            on_sent=lambda packet, r=record: r("sent", packet),
            on_delivery=lambda report, r=record: r("delivery", report),
            on_usbl=lambda fix, r=record: r("usbl", fix),
            on_raw=lambda way, data, r=record: r("raw", way, data),
            on_reception_start=lambda r=record: r("start", None))
        path = server.path
        made[name] = S2CSession(S2CSettings(lambda p=path: SerialLink(p, 115200),
                                            reconnect_initial_s=0.1), callbacks)
        made[name].start()
    yield made, events, served, backend
    for session in made.values():
        session.stop()
    for model, server in served:
        server.close()
        model.close()
    backend.close()


def _of(events, kind):
    return [e[1] for e in list(events) if e[0] == kind]


def test_instant_message_delivered_with_report_and_usbl_fix(sessions):
    made, events, _, _ = sessions
    assert _wait(lambda: made["a"].connected and made["b"].connected)
    assert made["a"].modem_address == 1 and made["b"].modem_address == 2
    made["a"].queue_packet(outgoing(2, b"\x00hi\n"))
    assert _wait(lambda: _of(events["b"], "packet") and _of(events["a"], "delivery"))
    assert _of(events["b"], "packet")[0].data == b"\x00hi\n"
    assert _of(events["a"], "delivery")[0] == at.DeliveryReport(True, "im", 2)
    assert _of(events["a"], "sent")[0].kind == "im"
    assert _wait(lambda: _of(events["a"], "usbl"))
    fix = next(f for f in _of(events["a"], "usbl") if isinstance(f, at.UsblLong))
    assert fix.remote == 2 and fix.slant_range_m == pytest.approx(300.5, abs=10.0)
    assert any(e[1] == "to_modem" and e[2].startswith(b"AT*SENDIM") for e in events["a"]
               if e[0] == "raw")


def test_reception_start_comes_before_the_packet(sessions):
    made, events, served, _ = sessions
    assert _wait(lambda: made["a"].connected and made["b"].connected)
    assert all(model.extended for model, _ in served), "AT@ZX1 not sent at connection"
    made["a"].queue_packet(outgoing(2, b"hello"))
    assert _wait(lambda: _of(events["b"], "packet"))
    kinds = [e[0] for e in events["b"] if e[0] in ("start", "packet")]
    assert kinds[:2] == ["start", "packet"], kinds
    assert made["b"].counters["reception_starts"] >= 1


def test_ping_answers_the_modems_travel_time(sessions):
    made, events, _, backend = sessions
    assert _wait(lambda: made["a"].connected and made["b"].connected)
    travel_time_s, reason = made["a"].ping(2, 8.0)
    assert reason == ""
    slant_m = math.dist((0.0, 0.0, 0.0), backend.relative_enu(1, 2))
    assert travel_time_s == pytest.approx(slant_m / 1500.0, abs=1e-3)
    assert any(e[1] == "to_modem" and e[2] == b"AT?T\n" for e in events["a"] if e[0] == "raw")
    assert not _of(events["a"], "delivery") and not _of(events["a"], "sent"), \
        "a ping is not a queued packet: no ack, no transmit"
    assert _wait(lambda: _of(events["b"], "packet"))
    assert _of(events["b"], "packet")[0].data == b"\x00"


def test_ping_refusals_and_failure(sessions):
    made, _, served, backend = sessions
    assert _wait(lambda: made["a"].connected)
    served[0][0].ack_timeout_s = 0.5
    assert made["a"].ping(255, 1.0)[0] is None and made["a"].ping(1, 1.0)[0] is None
    assert "64" in made["a"].ping(2, 1.0, bytes(65))[1]
    backend.set_position(9, *emulator.offset_position(*emulator.ORIGIN, 300.0, 0.0), 20.0)
    travel_time_s, reason = made["a"].ping(9, 8.0)  # nobody at 9: FAILEDIM
    assert travel_time_s is None and "FAILEDIM" in reason, reason
    assert made["a"].counters["ping_failed"] == 1


def test_burst_for_a_large_packet(sessions):
    made, events, _, _ = sessions
    assert _wait(lambda: made["a"].connected and made["b"].connected)
    data = bytes(range(256)) * 2
    made["a"].queue_packet(outgoing(2, data))
    assert _wait(lambda: _of(events["b"], "packet") and _of(events["a"], "delivery"))
    assert _of(events["b"], "packet")[0].data == data
    assert _of(events["a"], "delivery")[0].kind == "burst"


def test_address_is_set_at_connection_and_stray_lines_are_counted(sessions):
    made, _, served, backend = sessions
    assert _wait(lambda: made["b"].connected)
    made["b"].stop()
    backend.set_position(7, *emulator.offset_position(*emulator.ORIGIN, 300.0, 0.0), 20.0)
    session = S2CSession(S2CSettings(lambda: SerialLink(served[1][1].path, 115200), address=7))
    session.start()
    try:
        assert _wait(lambda: session.connected) and session.modem_address == 7
        served[1][1].write_bytes(b"42\r\n\xff\xfe garbage\r\nUSBLLONG,1,2\r\n"
                                 b"RECVSTART,zz\r\nRECVEND,1,2\r\nSENDSTART,x,im,1,0\r\n")
        assert _wait(lambda: session.counters["unexpected_replies"] == 1
                     and session.reader.counters["refused_bad_fields"] == 4)
        counters = session.all_counters()
        assert counters["reader_refused_not_ascii"] == 1
        assert counters["reader_refused_bad_fields"] == 4
        assert session.counters["reception_starts"] == 0
        assert session.connected
    finally:
        session.stop()


def test_a_modem_refusing_extended_notifications_still_connects(sessions):
    made, _, served, _ = sessions
    assert _wait(lambda: made["b"].connected)
    made["b"].stop()
    model = served[1][0]
    model.extended = False
    model._set_extended = lambda command: model._reply("ERROR NOT SUPPORTED", command)
    session = S2CSession(S2CSettings(lambda: SerialLink(served[1][1].path, 115200)))
    session.start()
    try:
        assert _wait(lambda: session.connected) and session.modem_address == 2
        assert session.counters["extended_notifications_refused"] == 1 and not model.extended
    finally:
        session.stop()


def test_outgoing_refuses_what_the_modem_cannot_send():
    assert outgoing(255, b"x").ack is False and outgoing(3, b"x").ack is True
    with pytest.raises(PacketRefused, match="1024"):
        outgoing(3, bytes(1025))
    with pytest.raises(PacketRefused):
        outgoing(3, b"")
