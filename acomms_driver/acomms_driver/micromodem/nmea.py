"""ROS-free Micromodem NMEA layer: strict line framing, checksums, and CST/XST field mapping.

pyacomms (the WHOI `acomms` package) parses modem sentences, but it accepts lines without a
checksum, raises NameError on odd checksum lengths, has no notion of a garbage counter, maps
CACST/CAXST times with a fractional-second bug (".5" becomes 5 microseconds) and drops
packet-timeout CSTs. This module is the gate in front of it: every byte from the modem goes
through `NmeaReader`, which splits lines, rejects garbage and bad checksums with counters, and
hands on only well-formed sentences. `parse_cst` / `parse_xst` map CACST / CAXST fields to the
names of the acomms_interfaces CST / XST messages; `format_cst` / `format_xst` are their
inverses (used by the modem emulator).
"""

from __future__ import annotations

import dataclasses
import datetime
import math
import re
from collections.abc import Iterable, Sequence

# FDP at rate 5 carries 2048 dataframe bytes (4096 hex characters) plus frame bookkeeping; a
# line longer than this is not a Micromodem sentence.
MAX_LINE_LENGTH = 8192

_TYPE_RE = re.compile(r"^[A-Z][A-Z0-9]{1,9}$")
_CHECKSUM_RE = re.compile(r"^(?:[0-9A-Fa-f]{2}|[0-9A-Fa-f]{8})$")
# Reflected form of the 32-bit polynomial the Micromodem uses for its 8-digit checksums
# (CRC-32K, Koopman 0xBA0DC66B); initial value and final XOR 0xFFFFFFFF.
_CRC32_POLY_REFLECTED = 0xD663B05D


def _crc32_table() -> tuple[int, ...]:
    table = []
    for index in range(256):
        value = index
        for _ in range(8):
            value = (value >> 1) ^ _CRC32_POLY_REFLECTED if value & 1 else value >> 1
        table.append(value)
    return tuple(table)


_CRC32_TABLE = _crc32_table()


class NmeaError(ValueError):
    """A line that is not an acceptable NMEA sentence."""


class ChecksumError(NmeaError):
    """Checksum present and well formed, but wrong."""


class MalformedSentenceError(NmeaError):
    """Not a sentence: no '$', no checksum, bad characters, bad type, bad field values."""


def checksum(body: str) -> str:
    """NMEA 0183 checksum (XOR of the characters between '$' and '*'), two upper-case hex digits."""
    value = 0
    for byte in body.encode("ascii"):
        value ^= byte
    return f"{value:02X}"


def checksum32(body: str) -> str:
    """The Micromodem's 8-digit checksum (CRC-32K over the characters between '$' and '*')."""
    value = 0xFFFFFFFF
    for byte in body.encode("ascii"):
        value = (value >> 8) ^ _CRC32_TABLE[(value ^ byte) & 0xFF]
    return f"{~value & 0xFFFFFFFF:08X}"


def format_sentence(sentence_type: str, fields: Iterable[object] = (), crc32: bool = False,
                    line_end: str = "\r\n") -> str:
    """'$TYPE,f1,f2*CS\\r\\n' with the checksum computed (8-digit CRC32 if crc32); None fields
    become empty."""
    body = ",".join([sentence_type] + ["" if f is None else str(f) for f in fields])
    return f"${body}*{checksum32(body) if crc32 else checksum(body)}{line_end}"


@dataclasses.dataclass(frozen=True)
class Sentence:
    """One validated sentence: its type ('CACST'), its fields, and the raw line without CR/LF."""

    type: str
    fields: tuple[str, ...]
    raw: str

    @property
    def xor_line(self) -> str:
        """The sentence with a 2-digit XOR checksum and CR LF (what pyacomms can parse: it
        mis-computes 8-digit checksums)."""
        if self.raw[-3] == "*":
            return self.raw + "\r\n"
        return format_sentence(self.type, self.fields)


def parse_line(line: str | bytes) -> Sentence:
    """Validate and split one line; raises ChecksumError or MalformedSentenceError."""
    if isinstance(line, bytes):
        try:
            line = line.decode("ascii")
        except UnicodeDecodeError:
            raise MalformedSentenceError("non-ASCII bytes") from None
    line = line.strip("\r\n")
    if not line.startswith("$"):
        raise MalformedSentenceError("does not start with '$'")
    star = line.rfind("*")
    if star < 0:
        raise MalformedSentenceError("no checksum")
    body, received = line[1:star], line[star + 1:]
    if not _CHECKSUM_RE.match(received):
        raise MalformedSentenceError(
            f"checksum field {received[:10]!r} is not two or eight hex digits")
    if any(not (0x20 <= ord(c) <= 0x7E) or c in "$*" for c in body):
        raise MalformedSentenceError("control or reserved characters in the sentence")
    expected = checksum(body) if len(received) == 2 else checksum32(body)
    if received.upper() != expected:
        raise ChecksumError(f"checksum {received} != {expected}")
    parts = body.split(",")
    if not _TYPE_RE.match(parts[0]):
        raise MalformedSentenceError(f"bad sentence type {parts[0][:12]!r}")
    return Sentence(parts[0], tuple(p.strip() for p in parts[1:]), line)


def complete_sentence(text: str) -> str:
    """A sentence typed by a user ('$CCCFQ,SRC', with or without its checksum) as a line to send;
    NmeaError with the reason when it is not a valid sentence."""
    text = text.strip()
    if "*" not in text:
        try:
            text = f"{text}*{checksum(text.lstrip('$'))}"
        except UnicodeEncodeError as exc:
            raise MalformedSentenceError(str(exc)) from None
    sentence = parse_line(text)
    return format_sentence(sentence.type, sentence.fields)


@dataclasses.dataclass
class LineCounters:
    """What the reader saw. lines == valid + bad_checksum + malformed + overlong, always."""

    lines: int = 0
    valid: int = 0
    bad_checksum: int = 0
    malformed: int = 0
    overlong: int = 0

    def as_dict(self) -> dict[str, int]:
        return dataclasses.asdict(self)


class NmeaReader:
    """Bytes in, validated sentences out; counts and skips everything else (never raises)."""

    def __init__(self, max_line_length: int = MAX_LINE_LENGTH):
        self.max_line_length = max_line_length
        self.counters = LineCounters()
        self.last_error = ""
        self._partial = bytearray()
        self._discarding = False  # inside an overlong line, until its newline

    def reset(self) -> None:
        """Forget a partial line (after a reconnection)."""
        self._partial.clear()
        self._discarding = False

    def feed(self, data: bytes) -> list[Sentence]:
        """Complete lines in data (ended by CR LF, LF or CR alone) as sentences."""
        sentences = []
        start = 0
        next_lf, next_cr = data.find(b"\n"), data.find(b"\r")
        while True:
            if next_lf < 0 and next_cr < 0:
                self._append(data[start:])
                return sentences
            if next_cr < 0 or 0 <= next_lf < next_cr:
                end, next_lf = next_lf, data.find(b"\n", next_lf + 1)
            else:
                end, next_cr = next_cr, data.find(b"\r", next_cr + 1)
            self._append(data[start:end])
            if self._discarding:
                self._discarding = False
            elif self._partial:
                sentence = self.parse(bytes(self._partial))
                if sentence is not None:
                    sentences.append(sentence)
            self._partial.clear()
            start = end + 1

    def _append(self, chunk: bytes) -> None:
        if self._discarding or not chunk:
            return
        self._partial += chunk
        if len(self._partial) > self.max_line_length:
            self.counters.lines += 1
            self.counters.overlong += 1
            self.last_error = f"line longer than {self.max_line_length} bytes"
            self._partial.clear()
            self._discarding = True

    def parse(self, line: bytes | str) -> Sentence | None:
        """Parse one complete line, updating counters; None for a rejected line.

        Blank lines (a lone CR, CR LF pairs) are not counted: they are framing, not sentences.
        """
        if not line.strip(b"\r\n" if isinstance(line, bytes) else "\r\n"):
            return None
        self.counters.lines += 1
        try:
            sentence = parse_line(line)
        except ChecksumError as exc:
            self.counters.bad_checksum += 1
            self.last_error = str(exc)
            return None
        except NmeaError as exc:
            self.counters.malformed += 1
            self.last_error = str(exc)
            return None
        self.counters.valid += 1
        return sentence


# ---------------------------------------------------------------------------------------------
# Time fields

def parse_compact_time(text: str) -> float:
    """'YYYYMMDDHHMMSS.ffff' (UTC) to Unix seconds; any number of fraction digits; 0.0 if bad."""
    try:
        whole, _, fraction = text.partition(".")
        stamp = datetime.datetime.strptime(whole, "%Y%m%d%H%M%S").replace(
            tzinfo=datetime.timezone.utc)
        return stamp.timestamp() + (float("0." + fraction) if fraction else 0.0)
    except ValueError:
        return 0.0


def format_compact_time(unix_seconds: float) -> str:
    """Unix seconds to 'YYYYMMDDHHMMSS.ffffff' (UTC), the CACST TOA format."""
    stamp = datetime.datetime.fromtimestamp(unix_seconds, tz=datetime.timezone.utc)
    return stamp.strftime("%Y%m%d%H%M%S.%f")


def format_iso_time(unix_seconds: float) -> str:
    """Unix seconds to ISO 8601 UTC with microseconds, as in CACMA/CACMR/CATMS."""
    stamp = datetime.datetime.fromtimestamp(unix_seconds, tz=datetime.timezone.utc)
    return stamp.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


# ---------------------------------------------------------------------------------------------
# CACST / CAXST field mapping (field names are those of acomms_interfaces/msg/CST.msg, XST.msg)

# CACST version >= 6: index in the sentence's fields (0 is the version number). Field 9 is
# SHF_AINPSHIFT (previous input buffer) and 10 SHF_AINSHIFT (current buffer), the order of WHOI's
# Micro-Modem Software Interface Guide CACST table, which Goby's mm_driver (shf_ainpshift then
# shf_ainshift), MOOS-IvP iMicroModem and ros_acomms' CST.msg follow; pyacomms' CycleStats has
# the two swapped.
_CST_V6 = (
    ("mode", 1, int), ("toa", 2, "time"), ("toa_mode", 3, int), ("mfd_peak", 4, int),
    ("mfd_pow", 5, int), ("mfd_ratio", 6, int), ("mfd_spl", 7, int), ("agn", 8, int),
    ("shift_ainp", 9, int), ("shift_ain", 10, int), ("shift_mfd", 11, int),
    ("shift_p2b", 12, int), ("rate_num", 13, int), ("src", 14, int), ("dest", 15, int),
    ("psk_error", 16, int), ("packet_type", 17, int), ("num_frames", 18, int),
    ("bad_frames_num", 19, int), ("snr_rss", 20, int), ("snr_in", 21, float),
    ("snr_out", 22, float), ("snr_sym", 23, float), ("mse", 24, float), ("dqf", 25, int),
    ("dop", 26, float), ("noise", 27, int), ("carrier", 28, int), ("bandwidth", 29, int),
)
# Added by CACST version 8.
_CST_V8 = (("sequence_number", 30, int), ("data_rate", 31, int), ("num_data_frames", 32, int),
           ("num_bad_data_frames", 33, int))
CST_FIELD_NAMES = ("version_number",) + tuple(n for n, _, _ in _CST_V6 + _CST_V8)
CST_VERSION = 8  # the version format_cst writes

_XST = (
    ("toa_mode", 3, int), ("mode", 4, int), ("probe_length", 5, int), ("bandwidth", 6, int),
    ("carrier", 7, int), ("rate_num", 8, int), ("src", 9, int), ("dest", 10, int),
    ("ack", 11, int), ("num_frames_expected", 12, int), ("num_frames_sent", 13, int),
    ("packet_type", 14, int), ("nbytes", 15, int), ("actual_carrier", 16, int),
)
XST_FIELD_NAMES = ("version_number", "time") + tuple(n for n, _, _ in _XST)
XST_VERSION = 7


def _convert(name: str, text: str, kind):
    """One CST / XST field; MalformedSentenceError for anything but a finite number (`1e999`,
    `inf` and `nan` included: they would overflow an int or poison a float field)."""
    if kind == "time":
        return parse_compact_time(text)
    if text == "":
        return kind(0)
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise MalformedSentenceError(f"field {name}={text[:16]!r} is not a finite number")
    return int(value) if kind is int else kind(value)


def parse_rxp(fields: Sequence[str]) -> dict:
    """`$CARXP` (the modem detected a packet still arriving; sent while its `RXP` setting is 1):
    the packet type of its first field when it has one (CST codes 1-5), else -1 (unknown). The
    Micromodem software interface guide names the sentence, not a stable field list: anything
    else in it is ignored."""
    packet_type = -1
    if fields:
        try:
            value = int(fields[0])
        except ValueError:
            value = -1
        packet_type = value if 1 <= value <= 5 else -1
    return {"packet_type": packet_type}


def parse_cst(fields: Sequence[str]) -> dict:
    """CACST fields to a dict keyed by CST message field names (toa in Unix seconds).

    Versions >= 6 are mapped field by field; older firmware (version field absent) is mapped with
    the same layout shifted by one and version_number 0, like pyacomms. Fields a version lacks
    are -1 (v8 extras) or 0. Packet-timeout CSTs (mode 2) are returned too, not dropped.
    """
    if not fields:
        raise MalformedSentenceError("empty CACST")
    values = {name: 0 for name in CST_FIELD_NAMES}
    values.update({name: 0.0 for name in ("toa", "snr_in", "snr_out", "snr_sym", "mse", "dop")})
    values.update({name: -1 for name, _, _ in _CST_V8})
    version = int(_convert("version_number", fields[0], int))
    offset = 0
    if version < 6:  # legacy layout: no version field, no toa_mode
        version, offset = 0, -1
    values["version_number"] = version
    table = _CST_V6 + (_CST_V8 if version >= 8 else ())
    for name, index, kind in table:
        if version == 0 and name == "toa_mode":
            continue
        position = index + offset
        if position < len(fields):
            values[name] = _convert(name, fields[position], kind)
        elif values["mode"] == 2 or name in ("noise", "carrier", "bandwidth"):
            continue  # timeouts and old firmware carry fewer fields
        else:
            raise MalformedSentenceError(f"CACST v{version} has no field {name}")
    return values


def format_cst(values: dict) -> list[str]:
    """CST dict (as from parse_cst) to CACST version 8 fields."""
    fields = [""] * (1 + len(_CST_V6) + len(_CST_V8))
    fields[0] = str(CST_VERSION)
    for name, index, kind in _CST_V6 + _CST_V8:
        value = values.get(name, -1 if (name, index, kind) in _CST_V8 else 0)
        if kind == "time":
            fields[index] = format_compact_time(float(value))
        elif kind is float:
            fields[index] = f"{float(value):.2f}"
        else:
            fields[index] = str(int(value))
    return fields


def parse_xst(fields: Sequence[str]) -> dict:
    """CAXST (version 6-8) fields to a dict keyed by XST message field names (time in Unix s)."""
    if len(fields) < 16:
        raise MalformedSentenceError(f"CAXST has {len(fields)} fields, expected at least 16")
    values = {name: 0 for name in XST_FIELD_NAMES}
    values["version_number"] = int(_convert("version_number", fields[0], int))
    values["time"] = parse_compact_time(fields[1] + fields[2])
    for name, index, kind in _XST:
        if index < len(fields):
            values[name] = _convert(name, fields[index], kind)
    return values


def format_xst(values: dict) -> list[str]:
    """XST dict to CAXST version 7 fields."""
    stamp = format_compact_time(float(values.get("time", 0.0)))
    fields = [str(XST_VERSION), stamp[:8], stamp[8:]] + [""] * len(_XST)
    for name, index, _ in _XST:
        fields[index] = str(int(values.get(name, 0)))
    return fields


# ---------------------------------------------------------------------------------------------
# FDP frame lists ("crc;nbytes;hex;crc;nbytes;hex..." as in CARFP / CARDP)

def format_frames(frames: Iterable[tuple[bool, bytes]]) -> str:
    """[(crc_ok, data), ...] to the CARFP frame-list field."""
    return ";".join(f"{int(bool(ok))};{len(data)};{bytes(data).hex().upper()}"
                    for ok, data in frames)


def parse_frames(text: str) -> list[tuple[bool, bytes]]:
    """CARFP frame-list field to [(crc_ok, data), ...]; MalformedSentenceError if inconsistent."""
    if not text:
        return []
    parts = text.split(";")
    if len(parts) % 3:
        raise MalformedSentenceError("frame list is not crc;nbytes;hex triples")
    frames = []
    for i in range(0, len(parts), 3):
        try:
            data = bytes.fromhex(parts[i + 2])
            frames.append((parts[i] == "1", data))
        except ValueError:
            raise MalformedSentenceError("frame data is not hex") from None
    return frames
