"""The udp_link_driver's datagram: one modem packet, ping or ping reply per UDP datagram.

Layout (network byte order, 11-byte header, no handshake, no retransmission):

| offset | size | field |
|---|---|---|
| 0 | 1 | magic 0xAC |
| 1 | 1 | kind: 1 packet, 2 ping, 3 ping reply |
| 2 | 2 | src (int16) |
| 4 | 2 | dest (int16) |
| 6 | 1 | packet_type (int8) |
| 7 | 1 | miniframe_rate (int8) |
| 8 | 1 | dataframe_rate (int8) |
| 9 | 2 | number of miniframe bytes (uint16) |
| 11 | ... | miniframe bytes, then dataframe bytes |

A ping carries its 4-byte ping id and payload as miniframe bytes; the reply echoes them.

`decode` refuses (DatagramError with a short `reason`, counted by the link as `refused_<reason>`)
what is not ours or cannot become a ROS message: `short`, `bad_header`, `truncated`,
`address` (src or dest outside 0..255), `oversize` (a frame past the int16 byte ranges of
ReceivedPacket), `ping_size` (a ping or reply that is not a 4-byte id plus at most 32 bytes,
the Micromodem ping payload limit, with no dataframe).
"""

from __future__ import annotations

import struct

from acomms_driver.micromodem.packet_rules import MAX_ADDRESS, ModemPacket
from acomms_driver.micromodem.pings import MAX_PING_PAYLOAD_BYTES

MAGIC = 0xAC
KIND_PACKET, KIND_PING, KIND_PING_REPLY = 1, 2, 3
KINDS = (KIND_PACKET, KIND_PING, KIND_PING_REPLY)
HEADER = struct.Struct("!BBhhbbbH")
HEADER_BYTES = HEADER.size
PING_ID_BYTES = 4
MAX_FRAME_BYTES = 2**15 - 1   # ReceivedPacket's minibytes_valid / databytes_valid are int16


class DatagramError(ValueError):
    """A datagram that is not ours, is damaged or cannot be represented; `reason` names which."""

    def __init__(self, reason: str, text: str):
        super().__init__(text)
        self.reason = reason


def encode(kind: int, packet: ModemPacket) -> bytes:
    mini, data = bytes(packet.miniframe_bytes), bytes(packet.dataframe_bytes)
    return HEADER.pack(MAGIC, kind, packet.src, packet.dest, packet.packet_type,
                       packet.miniframe_rate, packet.dataframe_rate, len(mini)) + mini + data


def decode(datagram: bytes) -> tuple[int, ModemPacket]:
    if len(datagram) < HEADER_BYTES:
        raise DatagramError("short", f"{len(datagram)} bytes: shorter than the {HEADER_BYTES}-"
                            "byte header")
    magic, kind, src, dest, packet_type, mini_rate, data_rate, num_mini = \
        HEADER.unpack_from(datagram)
    if magic != MAGIC or kind not in KINDS:
        raise DatagramError("bad_header",
                            f"not a udp_link datagram (magic {magic:#x}, kind {kind})")
    body = datagram[HEADER_BYTES:]
    if num_mini > len(body):
        raise DatagramError("truncated", f"{num_mini} miniframe bytes announced, "
                            f"{len(body)} present")
    packet = ModemPacket(src, dest, packet_type, mini_rate, data_rate, body[:num_mini],
                         body[num_mini:])
    _check(kind, packet)
    return kind, packet


def _check(kind: int, packet: ModemPacket) -> None:
    for name in ("src", "dest"):
        value = getattr(packet, name)
        if not 0 <= value <= MAX_ADDRESS:
            raise DatagramError("address", f"{name} {value} outside 0..{MAX_ADDRESS}")
    num_mini, num_data = len(packet.miniframe_bytes), len(packet.dataframe_bytes)
    if kind == KIND_PACKET:
        if max(num_mini, num_data) > MAX_FRAME_BYTES:
            raise DatagramError("oversize", f"{num_mini} miniframe + {num_data} dataframe "
                                f"bytes: a frame over {MAX_FRAME_BYTES} bytes")
    elif num_data or not PING_ID_BYTES <= num_mini <= PING_ID_BYTES + MAX_PING_PAYLOAD_BYTES:
        raise DatagramError("ping_size", f"ping of {num_mini} + {num_data} bytes (a "
                            f"{PING_ID_BYTES}-byte id and at most {MAX_PING_PAYLOAD_BYTES} "
                            "payload bytes)")
