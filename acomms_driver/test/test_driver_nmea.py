"""ROS-free tests of the NMEA layer and packet validation, including a 100k-line fuzz stream."""

import random

import pytest

from acomms_driver.micromodem import nmea
from acomms_driver.micromodem.micromodem_client import (
    PACKET_TYPE_FDP,
    PACKET_TYPE_FSK,
    PACKET_TYPE_LEGACY_PSK,
    ModemPacket,
    validate_packet,
)


def test_checksum_and_format_match_a_known_sentence():
    # $CCCFQ,SRC*3A is the sentence pyacomms writes for a SRC query.
    assert nmea.format_sentence("CCCFQ", ["SRC"]) == "$CCCFQ,SRC*3A\r\n"
    from acomms.micromodem import nmeaChecksum
    assert nmea.checksum("CACFG,SRC,1") == nmeaChecksum("CACFG,SRC,1")


def test_parse_line_accepts_valid_and_rejects_the_rest():
    sentence = nmea.parse_line(b"$CACFG,SRC,1*" + nmea.checksum("CACFG,SRC,1").encode() + b"\r\n")
    assert sentence.type == "CACFG" and sentence.fields == ("SRC", "1")
    with pytest.raises(nmea.ChecksumError):
        nmea.parse_line("$CACFG,SRC,1*00")
    for bad in ("CACFG,SRC,1*1F", "$CACFG,SRC,1", "$CACFG,SRC,1*ZZ", "$CACFG,SRC,1*1234ABC",
                "$ca,x*" + nmea.checksum("ca,x"), b"$CAC\xffFG*00",
                "$CA\x01X*" + nmea.checksum("CA\x01X"), "$*00"):
        with pytest.raises(nmea.MalformedSentenceError):
            nmea.parse_line(bad)


def test_crc32_checksums_are_checked_like_xor_ones():
    # 8 hex digits: the Micromodem's CRC-32K; pyacomms' own check drops the last digit.
    line = nmea.format_sentence("CACFG", ["SRC", "1"], crc32=True)
    assert line == "$CACFG,SRC,1*D6B51847\r\n"
    sentence = nmea.parse_line(line)
    assert sentence.fields == ("SRC", "1")
    assert sentence.xor_line == nmea.format_sentence("CACFG", ["SRC", "1"])
    with pytest.raises(nmea.ChecksumError):
        nmea.parse_line("$CACFG,SRC,1*D6B51846")


def test_reader_splits_cr_only_lf_only_and_crlf_lines():
    reader = nmea.NmeaReader()
    one, two = nmea.format_sentence("CATXF", [1]), nmea.format_sentence("CACFG", ["SRC", 1])
    stream = (one.replace("\r\n", "\r") + two.replace("\r\n", "\n") + one + "\r\r"
              + two.replace("\r\n", "\r")).encode()
    out = []
    for i in range(0, len(stream), 5):  # line ends split across reads too
        out += reader.feed(stream[i:i + 5])
    assert [s.type for s in out] == ["CATXF", "CACFG", "CATXF", "CACFG"]
    assert reader.counters == nmea.LineCounters(lines=4, valid=4)


@pytest.mark.parametrize("text", ["1e999", "-1e999", "inf", "nan", "Infinity"])
def test_non_finite_numbers_are_malformed_not_overflow(text):
    fields = nmea.format_cst({name: 1 for name in nmea.CST_FIELD_NAMES})
    for index in (1, 9, 21, 30):  # int and float fields
        bad = list(fields)
        bad[index] = text
        with pytest.raises(nmea.MalformedSentenceError, match="finite"):
            nmea.parse_cst(bad)
    with pytest.raises(nmea.MalformedSentenceError):
        nmea.parse_cst([text])
    xst = nmea.format_xst({})
    xst[9] = text
    with pytest.raises(nmea.MalformedSentenceError):
        nmea.parse_xst(xst)


def test_cst_shift_fields_follow_whoi_order():
    # WHOI's CACST: ..., agn, shift_ainp (previous buffer), shift_ain (current), shift_mfd, ...
    fields = ["8", "0", "20240101000000.0", "0", "1", "2", "3", "4", "5", "61", "62", "63", "64"]
    fields += ["1"] * 21
    cst = nmea.parse_cst(fields)
    assert (cst["agn"], cst["shift_ainp"], cst["shift_ain"], cst["shift_mfd"]) == (5, 61, 62, 63)
    assert nmea.format_cst(cst)[9:11] == ["61", "62"]


def test_reader_joins_chunks_and_counts_overlong_lines():
    reader = nmea.NmeaReader(max_line_length=100)
    line = nmea.format_sentence("CATXF", [1]).encode()
    out = []
    for i in range(len(line)):
        out += reader.feed(line[i:i + 1])
    assert [s.type for s in out] == ["CATXF"]
    out = reader.feed(b"$" + b"A" * 250 + b"\r\n" + line + b"\r\n\r\n")
    assert [s.type for s in out] == ["CATXF"]
    assert reader.counters == nmea.LineCounters(lines=3, valid=2, overlong=1)


def test_cst_roundtrip_and_legacy_versions():
    values = {name: i for i, name in enumerate(nmea.CST_FIELD_NAMES)}
    values.update(version_number=8, mode=1, toa=1700000000.25, snr_in=12.5, snr_out=7.25,
                  mse=-11.5, dop=0.5, snr_sym=3.0)
    fields = nmea.format_cst(values)
    parsed = nmea.parse_cst(fields)
    assert parsed == pytest.approx(values)
    # The fractional second is scaled right (pyacomms reads ".25" as 25 microseconds).
    assert nmea.parse_cst(fields)["toa"] % 1 == pytest.approx(0.25)
    # A v6 CST has no v8 extras; a packet timeout (mode 2) stops after the TOA and is kept.
    v6 = nmea.parse_cst(["6"] + fields[1:30])
    assert v6["version_number"] == 6 and v6["sequence_number"] == -1 and v6["src"] == values["src"]
    timeout = nmea.parse_cst(["6", "2", "20240101000000.0"])
    assert timeout["mode"] == 2
    with pytest.raises(nmea.MalformedSentenceError):
        nmea.parse_cst(["8", "0", "20240101000000.0", "x"])


def test_xst_roundtrip():
    values = {name: i + 1 for i, name in enumerate(nmea.XST_FIELD_NAMES)}
    values.update(version_number=7, time=1700000000.5)
    assert nmea.parse_xst(nmea.format_xst(values)) == pytest.approx(values)
    with pytest.raises(nmea.MalformedSentenceError):
        nmea.parse_xst(["7", "20240101"])


def test_frame_lists_roundtrip():
    frames = [(True, b"\x01\x02"), (False, b""), (True, bytes(range(64)))]
    assert nmea.parse_frames(nmea.format_frames(frames)) == frames
    with pytest.raises(nmea.MalformedSentenceError):
        nmea.parse_frames("1;2")


@pytest.mark.parametrize("packet, legacy, tdp, expected", [
    (ModemPacket(dest=2, packet_type=PACKET_TYPE_FDP, miniframe_rate=1, dataframe_rate=5,
                 miniframe_bytes=b"x" * 96, dataframe_bytes=b"y" * 2048), False, False, None),
    (ModemPacket(dest=2, packet_type=PACKET_TYPE_FDP, miniframe_rate=1, dataframe_rate=1,
                 dataframe_bytes=b"y" * 193), False, False, "193 dataframe bytes"),
    (ModemPacket(dest=2, miniframe_rate=2, dataframe_rate=1), False, False, "miniframe rate 2"),
    (ModemPacket(dest=2, miniframe_bytes=b"x" * 97), False, False, "97 miniframe bytes"),
    (ModemPacket(dest=300), False, False, "dest 300"),
    (ModemPacket(dest=2, miniframe_bytes=b"x"), False, True, "use_tdp"),
    (ModemPacket(dest=2, packet_type=PACKET_TYPE_LEGACY_PSK, dataframe_rate=1,
                 dataframe_bytes=b"y" * 192), False, False, None),
    (ModemPacket(dest=2, packet_type=PACKET_TYPE_LEGACY_PSK, dataframe_rate=0,
                 dataframe_bytes=b"y"), False, False, "rate 0 is FSK"),
    (ModemPacket(dest=2, packet_type=PACKET_TYPE_FSK, dataframe_bytes=b"y" * 33), False, False,
     "33 dataframe bytes"),
    (ModemPacket(dest=2, dataframe_rate=6, dataframe_bytes=b"y" * 10), True, False, None),
    (ModemPacket(dest=2, dataframe_rate=6, miniframe_bytes=b"m", dataframe_bytes=b"y"), True,
     False, "no miniframe bytes"),
    (ModemPacket(dest=2, packet_type=7), False, False, "unknown packet_type"),
])
def test_validate_packet(packet, legacy, tdp, expected):
    reason = validate_packet(packet, legacy, tdp)
    if expected is None:
        assert reason is None
    else:
        assert reason is not None and expected in reason


def _fuzz_stream(rng: random.Random, total: int):
    """(chunks of bytes, expected counters, expected valid sentence types in order)."""
    types = ["CACST", "CAXST", "CARFP", "CATXF", "CACFG", "CAREV", "CACYC", "CADRQ", "CARXD",
             "CAMSG", "CAERR", "CACMR", "CACMA", "SNTTA", "XYZZY"]
    printable = "".join(chr(c) for c in range(0x20, 0x7F) if chr(c) not in "$*,")
    lines, expected, valid_types = [], nmea.LineCounters(), []
    for _ in range(total):
        kind = rng.random()
        fields = ["".join(rng.choice(printable) for _ in range(rng.randint(0, 12)))
                  for _ in range(rng.randint(0, 8))]
        sentence_type = rng.choice(types)
        good = nmea.format_sentence(sentence_type, fields).rstrip("\r\n").encode()
        expected.lines += 1
        if kind < 0.4:
            lines.append(good)
            expected.valid += 1
            valid_types.append(sentence_type)
        elif kind < 0.6:  # wrong checksum, still two hex digits
            wrong = (int(good[-2:], 16) ^ rng.randint(1, 255))
            lines.append(good[:-2] + f"{wrong:02X}".encode())
            expected.bad_checksum += 1
        elif kind < 0.75:  # random bytes that do not start with '$'
            junk = bytes(rng.randint(0, 255) for _ in range(rng.randint(1, 80)))
            junk = junk.replace(b"\n", b"").replace(b"\r", b"") or b"x"
            lines.append(junk if junk[:1] != b"$" else b"#" + junk)
            expected.malformed += 1
        elif kind < 0.85:  # truncated: the checksum is cut off
            lines.append(good[:good.rfind(b"*")])
            expected.malformed += 1
        elif kind < 0.95:  # one byte flipped to a control / non-ASCII byte
            position = rng.randint(1, good.rfind(b"*") - 1) if good.rfind(b"*") > 1 else 1
            lines.append(good[:position] + bytes([rng.choice([0, 7, 0x1B, 0x80, 0xFF])])
                         + good[position + 1:])
            expected.malformed += 1
        elif kind < 0.999:  # type field broken
            body = good[1:good.rfind(b"*")].lower()
            lines.append(b"$" + body + b"*" + nmea.checksum(body.decode()).encode())
            if body[:1].isalpha() and body.split(b",")[0].upper() == body.split(b",")[0]:
                expected.valid += 1  # nothing lower-cased (only digits): still valid
                valid_types.append(body.split(b",")[0].decode())
            else:
                expected.malformed += 1
        else:  # far too long
            lines.append(b"$CARFP," + b"A" * (nmea.MAX_LINE_LENGTH + 10))
            expected.overlong += 1
    stream = b"\r\n".join(lines) + b"\r\n"
    chunks, position = [], 0
    while position < len(stream):
        size = rng.randint(1, 4096)
        chunks.append(stream[position:position + size])
        position += size
    return chunks, expected, valid_types


def test_fuzz_100k_lines_counters_match():
    rng = random.Random(20240607)
    chunks, expected, valid_types = _fuzz_stream(rng, 100_000)
    reader = nmea.NmeaReader()
    got = []
    for chunk in chunks:
        got += [s.type for s in reader.feed(chunk)]
    assert reader.counters == expected
    assert got == valid_types
    assert expected.valid > 30_000 and expected.bad_checksum > 15_000
    assert expected.malformed > 30_000 and expected.overlong > 10


@pytest.mark.parametrize("fields, packet_type", [
    (["5"], 5), (["1", "extra"], 1), ([], -1), (["9"], -1), (["x"], -1), ([""], -1)])
def test_carxp_gives_the_packet_type_when_it_has_one(fields, packet_type):
    assert nmea.parse_rxp(fields) == {"packet_type": packet_type}
