"""EvoLogics S2C AT command protocol: parse and format, ROS-free.

What this module knows (facts from EvoLogics' public AT command documentation as used by
EvoLogics/evins and public drivers; the code is our own):

Host -> modem (command mode; a command ends with a line feed, `\\r\\n` accepted):
- `AT*SENDIM,<len>,<dest>,<ack|noack>,<data>`  instant message (<= 64 bytes)
- `AT*SEND,<len>,<dest>,<data>`                burst data (<= 1024 bytes per command)
- `AT?AL` -> `<addr>`, `AT!AL<addr>` -> `OK`   local address; `AT?AM` highest address
- `AT@ZX1` extended notifications on (SENDSTART/SENDEND/RECVSTART/RECVEND/USBL...)
- `AT?T` -> `<us>`: the signal propagation time (one way, microseconds) measured with the last
  delivered message with acknowledgement (queried after `DELIVEREDIM`)
- `AT!L<0..3>` source level, `AT?S` status, `ATO` back to data mode, `ATZ<n>` resets
Replies: `OK`, `ERROR <reason>`, `BUSY <reason>` or a value (e.g. `3` for `AT?AL`).

Modem -> host notifications (asynchronous, in any order with replies):
- `RECVIM,<len>,<src>,<dest>,<ack|noack>,<duration us>,<rssi dB>,<integrity>,<propagation time
  us>,<relative velocity m/s>,<data>` (older firmware: no propagation time; parsed as -1)
- `RECV,<len>,<src>,<dest>,<bitrate bps>,<rssi dB>,<integrity>,<propagation time us>,<relative
  velocity m/s>,<data>`
- `DELIVEREDIM,<dest>` / `FAILEDIM,<dest>`: the instant message's acknowledgement (or none);
  `DELIVERED,<bytes>,<dest>` / `FAILED,<bytes>,<dest>` for burst data
- `USBLLONG,<current time s>,<measurement time s>,<remote>,<X>,<Y>,<Z>,<E>,<N>,<U>,<roll>,<pitch>,
  <yaw>,<propagation time us>,<rssi dB>,<integrity>,<accuracy m>`: X/Y/Z in the USBL head's frame,
  E/N/U motion-compensated, metres; roll/pitch/yaw radians
- `USBLANGLES,<current time s>,<measurement time s>,<remote>,<local bearing>,<local elevation>,
  <bearing>,<elevation>,<roll>,<pitch>,<yaw>,<rssi dB>,<integrity>,<accuracy m>`: radians
- extended notifications (`AT@ZX1`), fields checked: `RECVSTART` (no fields: the modem
  synchronised on an arriving packet), `RECVEND,<timestamp us>,<duration us>,<rssi dB>,
  <integrity>`, `SENDSTART,<dest>,<type>,<duration us>,<delay us>`, `SENDEND,<dest>,<type>,
  <timestamp us>,<duration us>`; these and `PHYON`, `PHYOFF`, ... are kept as `Notification`

Data mode (`+++` escape): the host writes `+++AT<command>`; the modem answers
`+++AT<command>:<len>:<reply>` and notifies `+++AT:<len>:<notification>`; `<len>` frames the
payload, so these are framed by length too.

Binary payloads: `<data>` may hold any byte (line feeds included). Every framed kind whose
length is known (`RECVIM`, `RECV`, `AT*SENDIM`, `AT*SEND`, data-mode `+++AT...:<len>:`) is cut by
its length, never by a line end. Buffers are bounded (`MAX_FRAME_BYTES`); a refused line is
counted by reason in `counters` and skipped; nothing raises out of `feed`.
"""

from __future__ import annotations

import dataclasses
import re

MAX_IM_BYTES = 64
MAX_BURST_BYTES = 1024
MAX_FRAME_BYTES = 2048  # longest line accepted (a full burst + header fits)
BROADCAST_ADDRESS = 255
ACK, NOACK = "ack", "noack"

# Framed kinds: prefix -> number of comma-separated fields before <data> (the first is <len>).
MODEM_FRAMED = {"RECVIM,": 9, "RECV,": 8, "RECVIMS,": 9, "RECVPBM,": 8}
# Older firmware omits <propagation time> before <relative velocity> in these (the velocity is
# always printed with a decimal point, which tells the two layouts apart).
WITHOUT_PROPAGATION_TIME = ("RECVIM,", "RECVIMS,", "RECVPBM,")
HOST_FRAMED = {"AT*SENDIM,": 3, "AT*SEND,": 2, "AT*SENDIMS,": 3, "AT*SENDPBM,": 2}
_DATA_MODE = re.compile(rb"\+\+\+AT([^:\r\n]{0,32}):(\d{1,5}):")
_COMMAND = re.compile(r"AT([*?!@&]?[A-Z]*)(.*)", re.S)


class AtFormatError(ValueError):
    """A value that cannot be put in an AT command (the message says why)."""


# ---------------------------------------------------------------------------- parsed items
@dataclasses.dataclass(frozen=True)
class Reply:
    """A reply to the last command: OK, ERROR <reason>, BUSY <reason> or a value."""

    text: str
    command: str = ""  # known in data mode only (`+++AT?AL:1:3`)

    @property
    def kind(self) -> str:
        head = self.text.split(" ", 1)[0]
        return {"OK": "ok", "ERROR": "error", "BUSY": "busy"}.get(head, "value")


@dataclasses.dataclass(frozen=True)
class InstantMessage:
    src: int
    dest: int
    ack: bool
    duration_us: int
    rssi_db: int
    integrity: int
    propagation_time_us: int
    velocity_mps: float
    data: bytes


@dataclasses.dataclass(frozen=True)
class BurstData:
    src: int
    dest: int
    bit_rate_bps: int
    rssi_db: int
    integrity: int
    propagation_time_us: int
    velocity_mps: float
    data: bytes


@dataclasses.dataclass(frozen=True)
class DeliveryReport:
    """DELIVEREDIM/FAILEDIM (kind "im") or DELIVERED/FAILED (kind "burst", with bytes)."""

    delivered: bool
    kind: str
    dest: int
    num_bytes: int = -1


@dataclasses.dataclass(frozen=True)
class UsblLong:
    current_time_s: float
    measurement_time_s: float
    remote: int
    x_m: float
    y_m: float
    z_m: float
    east_m: float
    north_m: float
    up_m: float
    roll_rad: float
    pitch_rad: float
    yaw_rad: float
    propagation_time_us: int
    rssi_db: int
    integrity: int
    accuracy_m: float

    @property
    def slant_range_m(self) -> float:
        return (self.east_m ** 2 + self.north_m ** 2 + self.up_m ** 2) ** 0.5


@dataclasses.dataclass(frozen=True)
class UsblAngles:
    current_time_s: float
    measurement_time_s: float
    remote: int
    local_bearing_rad: float
    local_elevation_rad: float
    bearing_rad: float
    elevation_rad: float
    roll_rad: float
    pitch_rad: float
    yaw_rad: float
    rssi_db: int
    integrity: int
    accuracy_m: float


@dataclasses.dataclass(frozen=True)
class Notification:
    """Any other notification (SENDSTART, SENDEND, RECVSTART, RECVEND, PHYON, ...)."""

    name: str
    fields: tuple[str, ...]


@dataclasses.dataclass(frozen=True)
class Command:
    """A host command as the modem reads it: `AT!AL3` -> name "!AL", value "3"."""

    name: str
    value: str = ""
    args: tuple[str, ...] = ()
    data: bytes = b""
    data_mode: bool = False  # written with the +++ escape


_USBLLONG_TYPES = (float, float, int) + (float,) * 9 + (int, int, int, float)
_USBLANGLES_TYPES = (float, float, int) + (float,) * 7 + (int, int, float)
_NOTIFICATIONS = ("SENDSTART", "SENDEND", "RECVSTART", "RECVEND", "RECVFAILED", "RECVSRV",
                  "PHYON", "PHYOFF", "BITRATE", "SRCLEVEL", "STATUS", "DROPCNT", "EXPIREDIMS",
                  "CANCELEDIM", "CANCELEDIMS", "CANCELEDPBM", "RADDR", "USBLPHYD", "USBLPHYP")


# extended notifications whose fields are checked (a malformed one is refused, counted)
_CHECKED_NOTIFICATIONS = {"RECVSTART": (), "RECVEND": (int, int, int, int),
                          "SENDSTART": (int, str, int, int), "SENDEND": (int, str, int, int)}


def _typed(types, fields):
    if len(fields) != len(types):
        raise ValueError(f"{len(fields)} fields, expected {len(types)}")
    return [kind(value) for kind, value in zip(types, fields, strict=True)]


def _ack_flag(text: str) -> bool:
    if text not in (ACK, NOACK):
        raise ValueError(f"ack flag {text!r}")
    return text == ACK


def parse_framed_notification(prefix: str, fields: list[str], data: bytes):
    """RECVIM / RECV (RECVIMS, RECVPBM kept as Notification) from their header fields."""
    if prefix in WITHOUT_PROPAGATION_TIME and len(fields) == MODEM_FRAMED[prefix] - 1:
        fields = [*fields[:-1], "-1", fields[-1]]  # older firmware: propagation time unknown
    if prefix == "RECVIM,":
        src, dest = int(fields[1]), int(fields[2])
        return InstantMessage(src, dest, _ack_flag(fields[3]), int(fields[4]), int(fields[5]),
                              int(fields[6]), int(fields[7]), float(fields[8]), data)
    if prefix == "RECV,":
        return BurstData(int(fields[1]), int(fields[2]), int(fields[3]), int(fields[4]),
                         int(fields[5]), int(fields[6]), float(fields[7]), data)
    return Notification(prefix[:-1], tuple(fields) + (data.hex(),))


def parse_modem_line(text: str, command: str = ""):
    """One complete unframed modem line (no line end) -> a parsed item; ValueError if bad."""
    name, _, rest = text.partition(",")
    fields = rest.split(",") if rest else []
    if name in ("DELIVEREDIM", "FAILEDIM"):
        (dest,) = _typed((int,), fields)
        return DeliveryReport(name == "DELIVEREDIM", "im", dest)
    if name in ("DELIVERED", "FAILED"):
        count, dest = _typed((int, int), fields)
        return DeliveryReport(name == "DELIVERED", "burst", dest, count)
    if name == "USBLLONG":
        return UsblLong(*_typed(_USBLLONG_TYPES, fields))
    if name == "USBLANGLES":
        return UsblAngles(*_typed(_USBLANGLES_TYPES, fields))
    if name in _CHECKED_NOTIFICATIONS:
        _typed(_CHECKED_NOTIFICATIONS[name], fields)
        return Notification(name, tuple(fields))
    if name in _NOTIFICATIONS:
        return Notification(name, tuple(fields))
    if not text or not text.isprintable():
        raise ValueError("empty or unprintable line")
    return Reply(text, command)


def parse_command(text: str, data: bytes = b"", data_mode: bool = False) -> Command:
    """A host command line (without line end; framed data separately) -> Command."""
    match = _COMMAND.fullmatch(text)
    if match is None or not match.group(1):
        raise ValueError("not an AT command")
    name, rest = match.groups()
    if rest.startswith(","):
        return Command(name, "", tuple(rest[1:].split(",")) if rest[1:] else (), data, data_mode)
    return Command(name, rest, (), data, data_mode)


# ---------------------------------------------------------------------------- formatting
def _check_address(dest: int) -> int:
    if not isinstance(dest, int) or not 0 <= dest <= BROADCAST_ADDRESS:
        raise AtFormatError(f"address {dest!r} is not 0..{BROADCAST_ADDRESS}")
    return dest


def format_sendim(dest: int, data: bytes, ack: bool = True, data_mode: bool = False) -> bytes:
    """`AT*SENDIM,<len>,<dest>,<ack|noack>,<data>`; AtFormatError above 64 bytes."""
    if not 1 <= len(data) <= MAX_IM_BYTES:
        raise AtFormatError(f"instant message of {len(data)} bytes (1..{MAX_IM_BYTES})")
    header = f"AT*SENDIM,{len(data)},{_check_address(dest)},{ACK if ack else NOACK},"
    return _escaped(header.encode() + bytes(data), data_mode)


def format_send(dest: int, data: bytes, data_mode: bool = False) -> bytes:
    """`AT*SEND,<len>,<dest>,<data>` (burst data); AtFormatError above 1024 bytes."""
    if not 1 <= len(data) <= MAX_BURST_BYTES:
        raise AtFormatError(f"burst of {len(data)} bytes (1..{MAX_BURST_BYTES})")
    header = f"AT*SEND,{len(data)},{_check_address(dest)},"
    return _escaped(header.encode() + bytes(data), data_mode)


def format_command(name: str, value: str = "", data_mode: bool = False) -> bytes:
    """A settings command: format_command("?AL"), format_command("!AL", "3"), ("@ZX", "1")."""
    text = f"AT{name}{value}"
    if _COMMAND.fullmatch(text) is None or not text.isprintable():
        raise AtFormatError(f"bad command {text!r}")
    return _escaped(text.encode(), data_mode)


def _escaped(body: bytes, data_mode: bool) -> bytes:
    return (b"+++" if data_mode else b"") + body + b"\n"


def format_reply(text: str, command: str = "", data_mode: bool = False) -> bytes:
    """A modem reply line; in data mode `+++AT<command>:<len>:<text>`."""
    return _modem_out(text.encode(), command, data_mode)


def format_notification(name: str, fields=(), data: bytes | None = None,
                        data_mode: bool = False) -> bytes:
    """A modem notification: `NAME,f1,f2,...[,data]` (floats given as str by the caller)."""
    parts = [name, *(str(f) for f in fields)]
    body = ",".join(parts).encode()
    if data is not None:
        body += b"," + bytes(data)
    return _modem_out(body, "", data_mode)


def _modem_out(body: bytes, command: str, data_mode: bool) -> bytes:
    if data_mode:
        return b"+++AT" + command.encode() + b":" + str(len(body)).encode() + b":" + body + b"\r\n"
    return body + b"\r\n"
