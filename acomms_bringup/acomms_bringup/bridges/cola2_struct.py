"""cola2_comms' 37-byte navigation struct, both directions, without ROS.

Girona's cola2_comms exchanges one packed struct (no padding) per direction, optionally followed by
user custom bytes:

=======  ======  ===========================  ===============================================
offset   C type  surface -> AUV ('U', USBL)   AUV -> surface ('S', status)
=======  ======  ===========================  ===============================================
0        char    sender id ``'U'``            sender id ``'S'``
1        double  timestamp (UNIX s)           timestamp (UNIX s)
9        double  latitude (deg)               latitude (deg)
17       double  longitude (deg)              longitude (deg)
25       float   depth (m)                    depth (m)
29       float   USBL accuracy (m)            heading
33       int32   command                      safety supervisor status code
37       bytes   custom data (optional)       custom data (optional)
=======  ======  ===========================  ===============================================

Byte order: a parameter (`little` | `big`). The default is **little-endian**, because cola2_comms
packs the struct with the host's native order and the computers of Sparus II / Girona 500 (x86,
ARM) are little-endian; `big` serves a peer that packs in network order.
"""

from __future__ import annotations

import dataclasses
import struct

SENDER_USBL = b"U"      # surface -> AUV
SENDER_VEHICLE = b"S"   # AUV -> surface
BYTE_ORDERS = {"little": "<", "big": ">"}
_FIELDS = "cdddffi"     # sender, time, latitude, longitude, depth, accuracy|heading, code
STRUCT_BYTES = struct.calcsize("<" + _FIELDS)   # 37


class Cola2StructError(ValueError):
    """Bytes that are not a cola2 struct of the expected sender; the message says why."""


@dataclasses.dataclass(frozen=True)
class Cola2Struct:
    """One struct: `value` is the USBL accuracy ('U') or the heading ('S'); `code` the command
    ('U') or the safety status ('S'); `custom` the bytes after the struct."""

    sender: bytes
    time_s: float
    latitude_deg: float
    longitude_deg: float
    depth_m: float
    value: float
    code: int
    custom: bytes = b""


def struct_format(byte_order: str) -> str:
    try:
        return BYTE_ORDERS[byte_order] + _FIELDS
    except KeyError:
        raise Cola2StructError(f"byte_order must be one of {sorted(BYTE_ORDERS)}, "
                               f"got {byte_order!r}") from None


def pack(item: Cola2Struct, byte_order: str = "little") -> bytes:
    """The struct's bytes followed by its custom bytes; Cola2StructError if a field cannot be
    represented (e.g. a code outside int32)."""
    if item.sender not in (SENDER_USBL, SENDER_VEHICLE):
        raise Cola2StructError(f"sender must be 'U' or 'S', got {item.sender!r}")
    try:
        head = struct.pack(struct_format(byte_order), item.sender, item.time_s,
                           item.latitude_deg, item.longitude_deg, item.depth_m, item.value,
                           item.code)
    except (struct.error, OverflowError) as exc:
        raise Cola2StructError(f"cannot pack {item}: {exc}") from None
    return head + bytes(item.custom)


def unpack(data: bytes, byte_order: str = "little", expect: bytes | None = None) -> Cola2Struct:
    """Parse the struct at the start of data (the rest is custom data); Cola2StructError if it
    is too short or not from the expected sender."""
    data = bytes(data)
    if len(data) < STRUCT_BYTES:
        raise Cola2StructError(f"{len(data)} bytes is shorter than the {STRUCT_BYTES}-byte "
                               "cola2 struct")
    fields = struct.unpack(struct_format(byte_order), data[:STRUCT_BYTES])
    sender = fields[0]
    if sender not in (SENDER_USBL, SENDER_VEHICLE):
        raise Cola2StructError(f"sender id {sender!r} is neither 'U' nor 'S'")
    if expect is not None and sender != expect:
        raise Cola2StructError(f"sender id {sender!r}, expected {expect!r}")
    return Cola2Struct(sender, *fields[1:], custom=data[STRUCT_BYTES:])
