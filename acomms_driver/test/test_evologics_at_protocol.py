"""EvoLogics AT protocol: parse/format, length framing of binary data, hostile input counted."""

import math
import random

import pytest

from acomms_driver.evologics import at_protocol as at
from acomms_driver.evologics.at_stream import AtStreamReader


def test_sendim_format_and_host_parse_roundtrip_with_binary_data():
    data = b"\x00\r\n,ack\xff"
    line = at.format_sendim(3, data, ack=True)
    assert line == b"AT*SENDIM,8,3,ack," + data + b"\n"
    reader = AtStreamReader("host")
    (command,) = reader.feed(line)
    assert command == at.Command("*SENDIM", "", ("8", "3", "ack"), data)


def test_format_refuses_what_the_modem_would():
    with pytest.raises(at.AtFormatError, match="65 bytes"):
        at.format_sendim(1, b"x" * 65)
    with pytest.raises(at.AtFormatError, match="address 256"):
        at.format_sendim(256, b"x")
    with pytest.raises(at.AtFormatError, match="1025"):
        at.format_send(1, b"x" * 1025)
    assert at.format_send(2, b"ab") == b"AT*SEND,2,2,ab\n"
    assert at.format_command("?AL") == b"AT?AL\n"
    assert at.format_command("!AL", "7", data_mode=True) == b"+++AT!AL7\n"


def test_settings_commands_parse():
    reader = AtStreamReader("host")
    items = reader.feed(b"AT?AL\r\nAT!AL12\nAT@ZX1\n+++AT?AL\n")
    assert items == [at.Command("?AL"), at.Command("!AL", "12"), at.Command("@ZX", "1"),
                     at.Command("?AL", data_mode=True)]


def test_modem_notifications_with_units():
    data = b"hi\n\x01"
    stream = (b"OK\r\nERROR WRONG FORMAT\r\nBUSY BACKOFF STATE\r\n3\r\n"
              b"RECVIM,4,2,1,ack,12500,-45,180,1503,0.12," + data + b"\r\n"
              b"RECV,3,2,1,13900,-50,200,2001,-0.5,abc\r\n"
              b"DELIVEREDIM,2\r\nFAILEDIM,4\r\nDELIVERED,3,2\r\nFAILED,10,5\r\n"
              b"USBLLONG,10.5,10.25,2,1.0,2.0,-3.0,4.0,5.0,-6.0,0.01,0.02,1.5,5000,-40,190,0.12\r\n"
              b"USBLANGLES,10.5,10.25,2,0.5,-0.2,1.1,-0.3,0.0,0.0,0.7,-40,190,0.2\r\n"
              b"SENDSTART,2,im,12500,0\r\n")
    items = AtStreamReader("modem").feed(stream)
    assert [r.kind for r in items[:4]] == ["ok", "error", "busy", "value"]
    recvim = items[4]
    assert recvim == at.InstantMessage(2, 1, True, 12500, -45, 180, 1503, 0.12, data)
    assert items[5] == at.BurstData(2, 1, 13900, -50, 200, 2001, -0.5, b"abc")
    assert items[6:10] == [at.DeliveryReport(True, "im", 2), at.DeliveryReport(False, "im", 4),
                           at.DeliveryReport(True, "burst", 2, 3),
                           at.DeliveryReport(False, "burst", 5, 10)]
    usbl = items[10]
    assert (usbl.remote, usbl.east_m, usbl.north_m, usbl.up_m, usbl.propagation_time_us,
            usbl.accuracy_m) == (2, 4.0, 5.0, -6.0, 5000, 0.12)
    assert usbl.slant_range_m == pytest.approx(math.sqrt(16 + 25 + 36))
    assert items[11].bearing_rad == 1.1 and items[11].accuracy_m == 0.2
    assert items[12] == at.Notification("SENDSTART", ("2", "im", "12500", "0"))


def test_data_mode_replies_and_notifications_framed_by_length():
    body = b"RECVIM,3,2,1,noack,12500,-45,180,1503,0.0,\r\n!"
    stream = (b"+++AT*SENDIM:2:OK\r\n+++AT?AL:1:3\r\n+++AT:13:DELIVEREDIM,3\r\n"
              + b"+++AT:%d:" % len(body) + body + b"\r\n")
    items = AtStreamReader("modem").feed(stream)
    assert items[0] == at.Reply("OK", "*SENDIM") and items[1] == at.Reply("3", "?AL")
    assert items[2] == at.DeliveryReport(True, "im", 3)
    assert items[3].data == b"\r\n!" and items[3].ack is False
    assert at.format_reply("OK", "*SENDIM", data_mode=True) == b"+++AT*SENDIM:2:OK\r\n"
    assert at.format_notification("DELIVEREDIM", [3], data_mode=True) == (
        b"+++AT:13:DELIVEREDIM,3\r\n")


def test_byte_by_byte_feed_gives_the_same_items():
    stream = (at.format_notification("RECVIM", [5, 2, 1, "ack", 1, -40, 100, 10, "0.0"], b"a\nbc")
              + b"OK\r\n" + b"+++AT:13:DELIVEREDIM,3\r\n")
    whole = AtStreamReader("modem").feed(stream)
    reader = AtStreamReader("modem")
    pieces = [item for i in range(len(stream)) for item in reader.feed(stream[i:i + 1])]
    assert pieces == whole and len(whole) == 3


def test_hostile_lines_counted_by_reason_and_reader_recovers():
    reader = AtStreamReader("modem", max_frame_bytes=256)
    hostile = (b"RECVIM,x,2,1,ack,1,1,1,1,0,zz\r\n"          # bad length
               b"RECVIM,2,2,1,ack,1,1,1,1,0,zzzz\r\n"        # data longer than its length
               b"USBLLONG,1,2\r\n"                          # too few fields
               b"\xff\xfe\r\n"                              # not ascii
               + b"A" * 300 + b"\r\n"                       # too long
               b"+++AT:zz:OK\r\n")                          # bad data-mode header
    assert reader.feed(hostile) == []
    assert reader.counters["refused_bad_length"] == 1
    assert reader.counters["refused_missing_terminator"] == 1
    assert reader.counters["refused_bad_fields"] == 1
    assert reader.counters["refused_not_ascii"] == 1
    assert reader.counters["refused_too_long"] == 1
    assert reader.counters["refused_bad_data_mode"] == 1
    assert reader.feed(b"DELIVEREDIM,7\r\n") == [at.DeliveryReport(True, "im", 7)]


def test_random_bytes_never_raise_and_buffer_stays_bounded():
    rng = random.Random(31)
    reader = AtStreamReader("modem", max_frame_bytes=512)
    for _ in range(2000):
        chunk = bytes(rng.choice(b"RECVIM,+++AT:0123456789\r\n\xff ack") for _ in range(64))
        reader.feed(chunk)
        assert reader.buffered_bytes <= 512 + 64 + 100
    assert sum(v for k, v in reader.counters.items() if k.startswith("refused_")) > 0
    assert reader.feed(b"\nOK\r\n")[-1] == at.Reply("OK")


def test_older_firmware_recvim_without_propagation_time():
    old = b"RECVIM,3,2,1,noack,12500,-45,180,0.1250,a,b\r\n"   # data "a,b" holds a comma
    new = b"RECVIM,3,2,1,noack,12500,-45,180,1503,0.1250,a,b\r\n"
    items = AtStreamReader("modem").feed(old + new + b"+++AT:%d:" % (len(old) - 2) + old)
    assert [(i.propagation_time_us, i.velocity_mps, i.data) for i in items] == [
        (-1, 0.125, b"a,b"), (1503, 0.125, b"a,b"), (-1, 0.125, b"a,b")]
