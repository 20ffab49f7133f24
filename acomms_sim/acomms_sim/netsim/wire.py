"""netsim_manager's line protocol: `NETSIM|{protobuf full name}|{base64 of the message}\\n`.

ROS-free. `encode_line(message)` frames a protobuf message; `decode_line(line)` parses one line
into a message of a known type or raises `WireError` whose `kind` names what was wrong (the
counter a server or client increments); `LineSplitter` (tcp_serving's) cuts a byte stream into
lines and drops over-long ones (counted) without losing the lines after them.
"""

from __future__ import annotations

import base64
import binascii

from google.protobuf.message import DecodeError

from acomms_sim.netsim.proto import netsim_pb2

# A request with a few NavUpdates is ~100 bytes; the servers' 64 KiB line limit leaves room for
# many and stops a peer from growing our buffer without bound.
from acomms_sim.tcp_serving import MAX_LINE_BYTES, LineSplitter  # noqa: F401 - this API

PREFIX = b"NETSIM"
DEFAULT_MANAGER_PORT = 61999

MESSAGE_TYPES = {cls.DESCRIPTOR.full_name: cls for cls in (
    netsim_pb2.NetSimManagerRequest, netsim_pb2.NetSimManagerResponse,
    netsim_pb2.NavUpdate, netsim_pb2.ReceiveStats)}

# WireError kinds (each a counter name)
BAD_FRAMING = "bad_framing"
UNKNOWN_NAME = "unknown_message_name"
BAD_BASE64 = "bad_base64"
BAD_PROTOBUF = "bad_protobuf"
LINE_TOO_LONG = "line_too_long"


class WireError(ValueError):
    def __init__(self, kind: str, reason: str):
        super().__init__(reason)
        self.kind = kind


def encode_line(message) -> bytes:
    """One protocol line (with its newline) carrying message."""
    data = base64.b64encode(message.SerializeToString())
    return b"|".join((PREFIX, message.DESCRIPTOR.full_name.encode("ascii"), data)) + b"\n"


def decode_line(line: bytes, expected: type | None = None):
    """The message a line carries (trailing CR/LF ignored); WireError saying what is wrong.

    expected: the only message type accepted (another known name is UNKNOWN_NAME too).
    """
    if len(line) > MAX_LINE_BYTES:
        raise WireError(LINE_TOO_LONG, f"line of {len(line)} bytes (limit {MAX_LINE_BYTES})")
    parts = line.rstrip(b"\r\n").split(b"|")
    if len(parts) != 3 or parts[0] != PREFIX:
        raise WireError(BAD_FRAMING, f"not NETSIM|name|base64: {_preview(line)}")
    name = parts[1].decode("ascii", errors="replace")
    cls = MESSAGE_TYPES.get(name)
    if cls is None or (expected is not None and cls is not expected):
        raise WireError(UNKNOWN_NAME, f"unexpected message name {name[:80]!r}")
    try:
        data = base64.b64decode(parts[2], validate=True)
    except (binascii.Error, ValueError) as exc:
        raise WireError(BAD_BASE64, f"{name}: bad base64 ({exc})") from None
    message = cls()
    try:
        message.ParseFromString(data)
    except DecodeError as exc:
        raise WireError(BAD_PROTOBUF, f"{name}: cannot decode {len(data)} bytes ({exc})") \
            from None
    if not message.IsInitialized():
        missing = ", ".join(message.FindInitializationErrors())
        raise WireError(BAD_PROTOBUF, f"{name}: missing required fields {missing}")
    return message


def _preview(line: bytes) -> str:
    return repr(line[:60]) + ("..." if len(line) > 60 else "")
