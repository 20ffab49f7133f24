"""ROS-free: acknowledgement and JANUS sentences, config queries, clock sources, and the packet
rules of the transmit queues and JANUS."""

import json
import threading

import pytest

from acomms_driver.micromodem import acks, janus
from acomms_driver.micromodem.config_query import ConfigQueries
from acomms_driver.micromodem.modem_status import ModemStatus, clock_sources
from acomms_driver.micromodem.packet_rules import (
    PACKET_TYPE_FDP,
    PACKET_TYPE_JANUS,
    PACKET_TYPE_LEGACY_PSK,
    QUEUE_PPS,
    QUEUE_TXTRIG,
    ModemPacket,
    PacketRules,
)


def test_ack_sentences():
    legacy = acks.parse_caack(["2", "1", "3", "1"])
    assert (legacy["src"], legacy["dest"], legacy["frame_num"], legacy["ack"]) == (2, 1, 3, True)
    assert (legacy["ack_type"], legacy["dataframe_ack"], legacy["minirate"]) == (1, 0b1000, -1)
    fdp = acks.parse_cacdr(["2026-01-02T03:04:05.5Z", "17", "2", "1", "1", "1", "0x5"])
    assert (fdp["rx_sequence_num"], fdp["miniframe_ack"], fdp["dataframe_ack"]) == (17, 1, 5)
    assert fdp["timestamp"] == pytest.approx(1767323045.5) and fdp["ack"]
    assert not acks.parse_cacdr(["x", "1", "2", "1", "1", "0", "0"])["ack"]
    for bad in (["1", "2"], ["t", "1", "2", "1", "1", "256", "0"], ["t", "1", "2", "1", "1",
                                                                     "z", "0"]):
        with pytest.raises(ValueError):
            (acks.parse_caack if len(bad) < 4 else acks.parse_cacdr)(bad)
    assert acks.frame_mask([True, False, True]) == 0b101


def test_janus_sentences_round_trip():
    fields = [str(f) for f in janus.jrx_fields(3, 4, True, b"cargo")]
    reception = janus.parse_jrx(fields)
    assert (reception.src, reception.dest, reception.ack, reception.cargo) == (3, 4, True,
                                                                               b"cargo")
    assert reception.header_ok and reception.data_ok
    assert int(fields[6]) == 7  # cargo + CRC
    assert janus.parse_jrx([str(f) for f in janus.jrx_fields(3, 4, False, b"")]).cargo == b""
    with pytest.raises(ValueError):
        janus.parse_jrx(["1", "3", "4", "0", "", "1", "9", "00"])
    assert janus.on_air_s(0) == pytest.approx(0.8)
    assert janus.on_air_s(10) == pytest.approx((64 + 96) / 80)
    assert janus.tjn_fields(5, False, b"\x01") == [0, 5, 0, "", "01"]
    assert janus.crc16(b"123456789") == 0x29B1  # CRC-16/CCITT-FALSE check value


def test_config_queries_exact_group_and_timeout():
    queries = ConfigQueries()
    sent = []

    def answer(*pairs):
        def send(name):
            sent.append(name)
            for pair in pairs:
                threading.Timer(0.01, queries.on_config, pair).start()
            return True
        return send

    assert queries.query("SRC", answer(("SRC", "1")), 2.0) == ("1", "")
    value, _ = queries.query("pwramp", answer(("pwramp.a", "1"), ("pwramp.b", "2"),
                                              ("other", "3")), 2.0)
    assert json.loads(value) == {"pwramp.a": "1", "pwramp.b": "2"}
    assert queries.query("X", answer(), 0.2)[1].startswith("no $CACFG reply")
    assert queries.query("X", lambda name: False, 0.2) == (None, "modem not connected")
    assert queries.query("A,B", answer(), 0.2)[0] is None and sent == ["SRC", "pwramp", "X"]


def test_clock_sources_from_cst_and_tmq():
    assert clock_sources(1 | (3 << 2)) == ("RTC", "EXT")
    assert clock_sources(2 | (4 << 2)) == ("user_command", "EXT_SYNC")
    status = ModemStatus()
    status.on_cst_clock(3 | (1 << 2))
    assert (status.snapshot()["clock_source"], status.snapshot()["pps_source"]) == ("GPS", "RTC")
    status.on_clock_query(["2026-01-02T03:04:05Z", "user_command", "EXT"], None)
    assert (status.clock_source, status.pps_source) == ("user_command", "EXT")


@pytest.mark.parametrize(("packet", "rules", "reason"), [
    (ModemPacket(dest=2, packet_type=PACKET_TYPE_FDP, queue=QUEUE_PPS), PacketRules(), None),
    (ModemPacket(dest=2, packet_type=PACKET_TYPE_FDP, queue=QUEUE_TXTRIG), PacketRules(), None),
    (ModemPacket(dest=2, packet_type=PACKET_TYPE_FDP, queue=QUEUE_PPS),
     PacketRules(use_tdp=True), "PPS queue needs a $CCTFP"),
    (ModemPacket(dest=2, packet_type=PACKET_TYPE_LEGACY_PSK, dataframe_bytes=b"x",
                 queue=QUEUE_TXTRIG), PacketRules(), "TXTRIG queue needs"),
    (ModemPacket(dest=2, queue=9), PacketRules(), "unknown transmit queue"),
    (ModemPacket(dest=2, packet_type=PACKET_TYPE_JANUS), PacketRules(), "use_janus_packets"),
    (ModemPacket(dest=2, dataframe_bytes=bytes(256)), PacketRules(use_janus=True), None),
    (ModemPacket(dest=2, dataframe_bytes=bytes(257)), PacketRules(use_janus=True), "cargo"),
    (ModemPacket(dest=2, miniframe_bytes=b"m"), PacketRules(use_janus=True), "miniframe"),
    (ModemPacket(dest=2, queue=QUEUE_PPS), PacketRules(use_janus=True), "goes out as janus"),
])
def test_queue_and_janus_rules(packet, rules, reason):
    result = rules.check(packet)
    assert result is None if reason is None else reason in result
