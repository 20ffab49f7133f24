"""ROS-free tests of the emulated Micromodem's session side (issue 13): clock, reboots, revision
reports, statistics switches, transponder pings and the faults tests ask for."""

import time

import pytest
from sim_nmea_capture import emulator_pair

from acomms_driver.micromodem import nmea
from acomms_driver.micromodem.modem_status import format_clock_time, parse_clock_time


@pytest.fixture
def pair():
    yield from emulator_pair(delay_s=0.05)


def test_cctms_sets_the_clock_at_the_next_second_and_refuses_a_doubled_z(pair):
    a, out, _, _ = pair
    target = int(time.time()) + 2
    a.handle_line(nmea.format_sentence("CCTMS", [format_clock_time(target), 0]))
    reply = out.wait_for("CATMS")
    assert reply.fields[0] == "0" and parse_clock_time(reply.fields[1]) == target
    assert a.clock_set and abs(a.modem_time() - time.time() - a.clock_offset_s) < 1e-3
    assert 0.5 < a.clock_offset_s < 2.5
    a.handle_line(nmea.format_sentence("CCTMQ", []))
    assert abs(parse_clock_time(out.wait_for("CATMQ").fields[0]) - a.modem_time()) < 0.5
    a.handle_line(nmea.format_sentence("CCTMS", [format_clock_time(target) + "Z", 0]))
    assert out.wait_for("CAERR").fields[1] == "TMS"


def test_reboot_loses_the_transmission_and_announces_itself(pair):
    a, out_a, _, out_b = pair
    a.airtime_scale = 1.0
    a.handle_line(nmea.format_sentence("CCCFG", ["BR1", "5"]))
    a.handle_line(nmea.format_sentence("CCTFP", [2, 1, 1, 0, 0, "", "AA"]))
    a.reboot()
    assert out_a.wait_for("CAREV").fields[1] == "INIT"
    assert out_a.wait_for("CAREV").fields[1:] == ("AUV", a.config["info.firmware_version"])
    assert a.config["BR1"] == "3" and "CATXF" not in out_a.types()
    a.airtime_scale = 0.02
    a.handle_line(nmea.format_sentence("CCTFP", [2, 1, 1, 0, 0, "", "BB"]))  # not busy any more
    assert out_a.wait_for("CATXF")


def test_statistics_switches_and_heartbeat_inside_a_cycle(pair):
    a, out_a, b, out_b = pair
    b.handle_line(nmea.format_sentence("CCCFG", ["CST", "0"]))
    a.handle_line(nmea.format_sentence("CCCFG", ["XST", "0"]))
    a.heartbeat_mid_cycle = True
    a.handle_line(nmea.format_sentence("CCCYC", [0, 1, 2, 1, 0, 1]))
    assert out_a.wait_for("CACYC") and out_a.wait_for("CAREV").fields[1] == "AUV"
    assert out_a.wait_for("CADRQ")
    a.handle_line(nmea.format_sentence("CCTXD", [1, 2, 0, "AA" * 8]))
    assert out_a.wait_for("CATXF")
    assert out_b.wait_for("CARXD")
    time.sleep(0.2)
    assert "CAXST" not in out_a.types() and "CACST" not in out_b.types()
    assert b.counters["silenced_output"] == 1 and a.counters["silenced_output"] == 1


def test_faults_on_demand_and_output_format(pair):
    a, out, _, _ = pair
    a.reject_sentences["CCTFP"] = 1
    a.handle_line(nmea.format_sentence("CCTFP", [2, 1, 1, 0, 0, "", "AA"]))
    error = out.wait_for("CAERR")
    assert error.fields[1] == "TFP" and "refused" in error.fields[3]
    lines = []
    a.output = lines.append
    a.line_end, a.crc32 = "\r", True
    a.handle_line(nmea.format_sentence("CCCFQ", ["SRC"]))
    assert lines == [nmea.format_sentence("CACFG", ["SRC", "1"], crc32=True, line_end="\r")]
    assert lines[0].endswith("*D6B51847\r")


def test_transponder_ping_reports_enabled_transponders(pair):
    a, out, _, _ = pair
    a.transponders = {"A": 1.5, "B": 0.25}
    a.handle_line(nmea.format_sentence("CCPDT", [1, 1, 0, 0, 3000, 0, 1, 1, 0]))
    fields = out.wait_for("SNTTA").fields
    assert fields[:4] == ("", "0.2500", "", "")
