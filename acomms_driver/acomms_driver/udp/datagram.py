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
"""

from __future__ import annotations

import struct

from acomms_driver.micromodem.packet_rules import ModemPacket

MAGIC = 0xAC
KIND_PACKET, KIND_PING, KIND_PING_REPLY = 1, 2, 3
KINDS = (KIND_PACKET, KIND_PING, KIND_PING_REPLY)
HEADER = struct.Struct("!BBhhbbbH")
HEADER_BYTES = HEADER.size


class DatagramError(ValueError):
    """A datagram that is not ours or is damaged."""


def encode(kind: int, packet: ModemPacket) -> bytes:
    mini, data = bytes(packet.miniframe_bytes), bytes(packet.dataframe_bytes)
    return HEADER.pack(MAGIC, kind, packet.src, packet.dest, packet.packet_type,
                       packet.miniframe_rate, packet.dataframe_rate, len(mini)) + mini + data


def decode(datagram: bytes) -> tuple[int, ModemPacket]:
    if len(datagram) < HEADER_BYTES:
        raise DatagramError(f"{len(datagram)} bytes: shorter than the {HEADER_BYTES}-byte header")
    magic, kind, src, dest, packet_type, mini_rate, data_rate, num_mini = \
        HEADER.unpack_from(datagram)
    if magic != MAGIC or kind not in KINDS:
        raise DatagramError(f"not a udp_link datagram (magic {magic:#x}, kind {kind})")
    body = datagram[HEADER_BYTES:]
    if num_mini > len(body):
        raise DatagramError(f"{num_mini} miniframe bytes announced, {len(body)} present")
    return kind, ModemPacket(src, dest, packet_type, mini_rate, data_rate, body[:num_mini],
                             body[num_mini:])
