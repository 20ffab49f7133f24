"""The Micromodem client (ROS-free) against the emulator's real-modem behaviours (issue 13).

Each case is driven through `MicromodemModel` served on TCP: hostile numeric fields, the clock
($CCTMS / $CATMS), $CAERR refusing a transmit, a reboot with a packet in flight, a $CAREV heartbeat
inside a legacy cycle, statistics switched off, partial packets, CR-only lines and CRC32
checksums, log rotation, $CAACK and transponder pings.
"""

import collections
import os
import re
import threading
import time

import pytest

from acomms_driver.micromodem import nmea
from acomms_driver.micromodem.client_config import ClientCallbacks, ClientSettings
from acomms_driver.micromodem.micromodem_client import MicromodemClient
from acomms_driver.micromodem.modem_link import TcpClientLink
from acomms_driver.micromodem.packet_rules import (
    PACKET_TYPE_FDP,
    PACKET_TYPE_LEGACY_PSK,
    ModemPacket,
)
from acomms_sim.emulator.micromodem_emulator import TcpServer
from acomms_sim.emulator.micromodem_model import LoopbackBackend, MicromodemModel

SCALE = 0.02


def wait_until(predicate, timeout=5.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.01)
    return predicate()


class Rig:
    """Modem a (served on TCP, driven by the client) and modem b on one loopback channel."""

    def __init__(self, tmp_path, frame_errors=None, config_a=None, **settings):
        self.backend = LoopbackBackend(delay_s=0.05, frame_errors=frame_errors)
        self.a = MicromodemModel(1, self.backend, airtime_scale=SCALE, config=config_a)
        self.b = MicromodemModel(2, self.backend, airtime_scale=SCALE)
        self.server = TcpServer(self.a)
        self.server.start()
        self.events = collections.defaultdict(list)
        self.lock = threading.Lock()
        callbacks = ClientCallbacks(**{name: self._recorder(name) for name in (
            "on_packet_rx", "on_transmit", "on_log", "on_ack", "on_tx_failed")})
        options = dict(handshake_timeout_s=1.0, reconnect_initial_s=0.1, reconnect_max_s=0.5,
                       log_dir=str(tmp_path / "logs"), config_query="ALL")
        options.update(settings)
        self.client = MicromodemClient(ClientSettings(
            link_factory=lambda: TcpClientLink("127.0.0.1", self.server.port), **options),
            callbacks)

    def _recorder(self, name):
        def record(*args):
            with self.lock:
                self.events[name].append(args)
        return record

    def start(self):
        self.client.start()
        assert wait_until(lambda: self.client.connected, 10.0), self.client.last_reason
        return self

    def host_lines(self):
        return [line.split("*")[0].lstrip("$") for line in self.a.host_sentences]

    def close(self):
        self.client.close()
        self.server.close()
        for model in (self.a, self.b):
            model.close()
        self.backend.close()


@pytest.fixture
def rig_factory(tmp_path):
    rigs = []

    def make(**kwargs):
        rig = Rig(tmp_path, **kwargs)
        rigs.append(rig)
        return rig

    yield make
    for rig in rigs:
        rig.close()


def fdp(data=b"payload", rate=1, dest=2, mini=b""):
    return ModemPacket(dest=dest, packet_type=PACKET_TYPE_FDP, miniframe_rate=1,
                       dataframe_rate=rate, miniframe_bytes=mini, dataframe_bytes=data)


def b_sends(rig, data=b"from b", rate=1):
    rig.b.handle_line(nmea.format_sentence("CCTFP", [1, 1, rate, 0, 0, "", data.hex()]))


def test_hostile_numbers_cost_one_line_each(rig_factory):
    """`$CACST,1e999` and friends: counted, and the reader keeps working."""
    rig = rig_factory().start()
    hostile = {"CACST": [["1e999"], ["8", "inf"] + ["1"] * 32, ["6", "0", "x", "nan"]],
               "CAXST": [["7", "20240101", "000000.0"] + ["1e999"] * 14],
               "CAACK": [["1e999", "2", "1", "1"]], "CATMS": [["1e999", "inf"]],
               "CAERR": [["1e999"]], "SNTTA": [["inf", "1e999", "nan", "", "x"]],
               "CAREV": [[]], "CACFG": [["SRC", "1e999"]]}
    lines = [nmea.format_sentence(kind, fields).encode()
             for kind, variants in hostile.items() for fields in variants]
    before = rig.client.reader.counters.valid
    for line in lines:
        rig.server.write_bytes(line)
    assert wait_until(lambda: rig.client.reader.counters.valid >= before + len(lines), 5.0)
    b_sends(rig, b"after the hostile lines")
    assert wait_until(lambda: rig.events["on_packet_rx"], 5.0)
    assert bytes(rig.events["on_packet_rx"][0][0].packet.dataframe_bytes) == \
        b"after the hostile lines"
    assert rig.client.counters["unparseable_sentences"] >= 5
    assert rig.client.link.reader_alive and rig.client.connected


def test_clock_is_set_with_one_z_just_after_a_second_and_checked(rig_factory):
    rig = rig_factory(set_modem_time=True, clock_skew_allowed_s=0.3).start()
    assert wait_until(lambda: rig.client.status.clock_set, 5.0)
    sent = [line for line in rig.host_lines() if line.startswith("CCTMS")]
    assert len(sent) == 1
    assert re.fullmatch(r"CCTMS,\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ,0", sent[0]), sent
    assert rig.a.clock_set and abs(rig.client.status.clock_offset_s) < 0.3
    assert abs(rig.a.clock_offset_s) < 0.3  # the modem clock now follows the host's


def test_refused_clock_set_is_reported(rig_factory):
    rig = rig_factory(set_modem_time=True)
    rig.a.reject_sentences["CCTMS"] = 10
    rig.start()
    assert wait_until(lambda: rig.client.counters["clock_set_failures"] == 1, 15.0)
    assert not rig.client.status.clock_set and rig.client.status.errors >= 2
    assert "TMS" in str(rig.client.status.last_error)
    assert any("modem clock not set" in args[1] for args in rig.events["on_log"])


def test_caerr_releases_the_refused_packet_at_once(rig_factory):
    rig = rig_factory(tx_timeout_s=60.0).start()
    rig.a.reject_sentences["CCTFP"] = 1
    started = time.monotonic()
    assert rig.client.queue_packet(fdp(b"refused"))[0]
    assert rig.client.queue_packet(fdp(b"second"))[0]
    assert wait_until(lambda: rig.client.counters["tx_rejected_by_modem"] == 1, 5.0)
    assert wait_until(lambda: rig.events["on_transmit"], 5.0)
    assert time.monotonic() - started < 10.0
    assert bytes(rig.events["on_transmit"][0][0].dataframe_bytes) == b"second"
    assert bytes(rig.events["on_tx_failed"][0][0].dataframe_bytes) == b"refused"
    assert "TFP" in rig.events["on_tx_failed"][0][1]
    assert rig.client.queue_length() == 0 and rig.client.counters["tx_timeouts"] == 0


def test_reboot_with_packet_in_flight_rehandshakes_and_resends(rig_factory):
    rig = rig_factory(set_modem_time=True, modem_config={"pwramp.txlevel": 1}).start()
    assert wait_until(lambda: rig.client.status.clock_set, 5.0)
    rig.a.airtime_scale = 0.5  # ~2.3 s on air: the reboot lands mid-packet
    assert rig.client.queue_packet(fdp(b"in flight at the reboot"))[0]
    assert wait_until(lambda: rig.client.counters["tx_handed_to_modem"] == 1, 5.0)
    rig.a.airtime_scale = SCALE
    before = len(rig.host_lines())
    rig.a.reboot(reset_config=True)
    assert rig.a.config["pwramp.txlevel"] == "3" and not rig.a.clock_set
    assert wait_until(lambda: rig.events["on_transmit"], 10.0)
    assert bytes(rig.events["on_transmit"][0][0].dataframe_bytes) == b"in flight at the reboot"
    counters = rig.client.counters
    assert counters["tx_requeued_after_reboot"] == 1 and counters["rehandshakes"] == 1
    assert counters["tx_handed_to_modem"] == 2 and counters["disconnects"] == 0
    after = rig.host_lines()[before:]
    assert after[0] == "CCCFQ,SRC" and "CCCFG,pwramp.txlevel,1" in after
    assert any(line.startswith("CCTMS") for line in after)
    assert rig.a.config["pwramp.txlevel"] == "1" and rig.a.clock_set
    assert rig.client.status.reboots == 1 and rig.client.link_state == "connected"


def test_heartbeat_between_cacyc_and_cadrq_keeps_legacy_psk_going(rig_factory):
    rig = rig_factory(use_legacy_packets=True).start()
    rig.a.heartbeat_mid_cycle = True
    data = bytes(range(100))
    assert rig.client.queue_packet(ModemPacket(dest=2, packet_type=PACKET_TYPE_LEGACY_PSK,
                                               dataframe_rate=1, dataframe_bytes=data))[0]
    assert wait_until(lambda: rig.events["on_transmit"], 5.0)
    lines = rig.host_lines()
    assert f"CCTXD,1,2,0,{data[:64].hex()}" in lines and f"CCTXD,1,2,0,{data[64:].hex()}" in lines
    assert rig.client.status.sentence_counts["CAREV"] >= 1


def test_legacy_cycle_survives_a_preempted_link_thread(rig_factory):
    """The modem's $CACYC/$CADRQ can be read before the link thread, having written $CCCYC, has
    moved pyacomms to WaitingForCacyc (a loaded machine): the cycle must still be sent."""
    rig = rig_factory(use_legacy_packets=True).start()
    link = rig.client.protocol.link
    write_line = link.write_line

    def preempted_write_line(line):
        written = write_line(line)
        if line.startswith("$CCCYC"):
            time.sleep(0.5)  # $CACYC and the first $CADRQ arrive and are read meanwhile
        return written

    link.write_line = preempted_write_line
    request_frame = rig.a._request_frame

    def slow_request_frame():  # the modem takes 0.3 s to ask for each frame
        time.sleep(0.3)
        request_frame()

    rig.a._request_frame = slow_request_frame
    data = bytes(range(100))
    assert rig.client.queue_packet(ModemPacket(dest=2, packet_type=PACKET_TYPE_LEGACY_PSK,
                                               dataframe_rate=1, dataframe_bytes=data))[0]
    assert wait_until(lambda: rig.events["on_transmit"], 5.0), rig.client.status.sentence_counts
    lines = rig.host_lines()
    assert f"CCTXD,1,2,0,{data[:64].hex()}" in lines and f"CCTXD,1,2,0,{data[64:].hex()}" in lines


def test_statistics_outputs_are_enforced_and_parameters_logged(rig_factory):
    """A modem with CST/XST/REV off would receive silently: the handshake turns them on."""
    rig = rig_factory(config_a={"CST": "0", "XST": "0", "REV": "0"}).start()
    assert (rig.a.config["CST"], rig.a.config["XST"], rig.a.config["REV"]) == ("1", "1", "1")
    # "connected" can come before the handshake's last query is written (a loaded machine)
    assert wait_until(lambda: "CCCFQ,ALL" in rig.host_lines(), 5.0), rig.host_lines()
    lines = rig.host_lines()
    assert lines.index("CCCFG,CST,1") < lines.index("CCCFQ,ALL")
    b_sends(rig, b"heard")
    assert wait_until(lambda: rig.events["on_packet_rx"], 5.0)
    assert rig.events["on_packet_rx"][0][0].cst["src"] == 2
    assert wait_until(lambda: rig.client.status.sentence_counts["CACFG"] > 15, 5.0)
    assert rig.client.unconfirmed_config == []


def _second_frame_bad(receiver, transmission):
    return None, [True, False, True]


@pytest.mark.parametrize("mode, data_ranges, kept", [
    ("ranges", [0, 64, 128, 192], 192), ("truncate", [0, 64], 64)])
def test_partial_packet_keeps_every_good_frame(rig_factory, mode, data_ranges, kept):
    rig = rig_factory(frame_errors=_second_frame_bad, partial_packet_mode=mode).start()
    data = bytes(range(192))
    b_sends(rig, data, rate=1)
    assert wait_until(lambda: rig.events["on_packet_rx"], 5.0)
    received = rig.events["on_packet_rx"][0][0]
    assert received.databytes_valid == data_ranges and not received.complete
    assert bytes(received.packet.dataframe_bytes) == data[:kept]
    assert rig.client.counters["rx_partial"] == 1


def test_cr_only_lines_and_crc32_checksums(rig_factory):
    rig = rig_factory()
    rig.a.line_end, rig.a.crc32 = "\r", True
    rig.start()
    b_sends(rig, b"cr only")
    assert wait_until(lambda: rig.events["on_packet_rx"], 5.0)
    counters = rig.client.reader.counters
    assert counters.bad_checksum == 0 and counters.malformed == 0 and counters.valid > 5
    assert rig.client.counters["pyacomms_errors"] == 0


def test_nmea_log_rotates(rig_factory, tmp_path):
    rig = rig_factory(log_max_bytes=20_000, log_backup_count=2).start()
    line = nmea.format_sentence("CAMSG", ["NOISE", "x" * 100]).encode()
    rig.server.write_bytes(line * 2000)
    assert wait_until(lambda: rig.client.status.sentence_counts["CAMSG"] == 2000, 20.0)
    files = os.listdir(tmp_path / "logs")
    total = sum(os.path.getsize(tmp_path / "logs" / name) for name in files)
    assert len(files) == 3 and total < 3 * 20_000 + 2_000, (files, total)


def test_acks_are_reported(rig_factory):
    rig = rig_factory().start()
    rig.server.write_bytes(nmea.format_sentence("CAACK", [2, 1, 3, 1]).encode())
    assert wait_until(lambda: rig.events["on_ack"], 5.0)
    values = rig.events["on_ack"][0][0]
    assert {k: values[k] for k in ("src", "dest", "frame_num", "ack")} == {
        "src": 2, "dest": 1, "frame_num": 3, "ack": True}
    # ros_acomms' legacy ack fields
    assert (values["ack_type"], values["dataframe_ack"], values["minirate"]) == (1, 1 << 3, -1)


def test_ping_transponders(rig_factory):
    rig = rig_factory().start()
    rig.a.transponders = {"A": 0.5, "C": 1.25, "D": 2.0}
    times, reason = rig.client.ping_transponders([True, True, True, False], 2.0)
    assert reason == "" and times == [0.5, -1.0, 1.25, -1.0]
    assert "CCPDT,1,1,0,0,2000,1,1,1,0" in rig.host_lines()
    assert rig.client.ping_transponders([False] * 4, 1.0) == (None, "no transponder selected")
