"""ROS-free tests of the emulated Micromodem's transmit options (issue 13): PPS / TXTRIG transmit
queues (and SIGUSR1 as the TXTRIG pulse of the emulator process), acknowledgements, JANUS, clock
sources."""

import signal
import socket
import subprocess
import sys
import time

import pytest
from sim_nmea_capture import emulator_pair

from acomms_driver.micromodem import acks, janus, nmea
from acomms_driver.micromodem.modem_status import clock_sources


@pytest.fixture
def pair():
    yield from emulator_pair(delay_s=0.05)


def _tfp(queue, dest=2, ack=0, data="aabb"):
    return nmea.format_sentence("CCTFP", [queue, 0, dest, 1, 1, ack, 0, "", data])


def test_pps_queue_starts_at_the_next_whole_second(pair):
    a, out, _, _ = pair
    a.handle_line(_tfp(2))
    xst = nmea.parse_xst(out.wait_for("CAXST", 3.0).fields)
    fraction = xst["time"] % 1.0
    assert min(fraction, 1.0 - fraction) < 1e-3, xst["time"]
    assert a.counters["tx_released_pps"] == 1


def test_txtrig_queue_waits_for_the_pulse_and_the_modem_stays_busy(pair):
    a, out, _, _ = pair
    a.handle_line(_tfp(3))
    with pytest.raises(AssertionError):
        out.wait_for("CATXF", 0.3)
    a.handle_line(_tfp(0))  # busy while a packet is held
    assert out.wait_for("CAERR").fields[1] == "TFP"
    assert a.pulse_txtrig() and not a.pulse_txtrig()
    out.wait_for("CATXF")


def test_acknowledgements_fdp_and_legacy(pair):
    a, out, b, out_b = pair
    a.handle_line(_tfp(0, ack=1, data="11" * 80))
    received = out_b.wait_for("CARFP")
    assert received.fields[6] == "1"  # the ack flag as heard
    cdr = acks.parse_cacdr(out.wait_for("CACDR").fields)
    assert (cdr["src"], cdr["dest"], cdr["dataframe_ack"]) == (2, 1, 0b11)
    a.handle_line(_tfp(0, dest=9, ack=1))  # not addressed to b: no acknowledgement
    out_b.wait_for("CACST")
    with pytest.raises(AssertionError):
        out.wait_for("CACDR", 0.4)
    a.handle_line(nmea.format_sentence("CCCYC", [0, 1, 2, 1, 1, 1]))
    out.wait_for("CADRQ")
    a.handle_line(nmea.format_sentence("CCTXD", [1, 2, 1, "22" * 10]))
    assert acks.parse_caack(out.wait_for("CAACK").fields)["frame_num"] == 1


def test_janus_round_trip_and_clock_sources(pair):
    a, out, b, out_b = pair
    b.pps_source = "EXT"
    a.handle_line(nmea.format_sentence("CCTJN", [0, 2, 0, "", "cafe"]))
    assert out.wait_for("CATJN").fields[4] == "CAFE"
    reception = janus.parse_jrx(out_b.wait_for("CAJRX").fields)
    assert (reception.src, reception.dest, reception.cargo) == (1, 2, b"\xca\xfe")
    cst = nmea.parse_cst(out_b.wait_for("CACST").fields)
    assert clock_sources(cst["toa_mode"]) == ("RTC", "EXT")
    a.handle_line(nmea.format_sentence("CCTJN", [0, 2, 0, "", "00" * 300]))
    assert "cargo limit" in out.wait_for("CAERR").fields[3]
    b.handle_line(nmea.format_sentence("CCTMQ", []))
    assert list(out_b.wait_for("CATMQ").fields[1:]) == ["RTC", "EXT"]


def test_sigusr1_pulses_txtrig_of_the_emulator_process():
    proc = subprocess.Popen([sys.executable, "-m", "acomms_sim.emulator.micromodem_emulator",
                             "--src", "1", "--tcp-port", "0", "--airtime-scale", "0.02"],
                            stdout=subprocess.PIPE, text=True)
    try:
        port = int(proc.stdout.readline().strip().rsplit(":", 1)[1])
        with socket.create_connection(("127.0.0.1", port), timeout=3) as sock:
            sock.sendall(_tfp(3).encode())
            time.sleep(0.3)
            proc.send_signal(signal.SIGUSR1)
            data, end = b"", time.monotonic() + 5.0
            while b"$CATXF" not in data and time.monotonic() < end:
                data += sock.recv(4096)
        assert b"$CATXF" in data
    finally:
        proc.terminate()
        proc.wait(5)
