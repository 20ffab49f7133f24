"""The packet-codec seam: how messages are framed into one modem packet, and back.

A packet codec turns [(message codec id, message bits)] into (miniframe bytes, dataframe bytes)
and a received packet back into messages. The queue asks it every size question (how many payload
bits a budget holds, what one message costs in the packet) and never assumes a layout; the
dispatch node asks it whether a packet's header bytes are its own, then to decode.

Implementations: `RosPacketCodec` (`ros`, ros_acomms' layout, in `ros_packet_codec`). A new
packet codec is one module with a class satisfying `PacketCodec` plus one registration in
`acomms_core.codecs.registry` (built in) or a `register_packet_codec` call in the module itself
(loaded from `custom_packet_codec_paths`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol, runtime_checkable

from bitstring import Bits


@dataclasses.dataclass
class PacketDecodeResult:
    """What came out of one packet: messages in packet order and what could not be used."""

    messages: list = dataclasses.field(default_factory=list)  # [(codec id, rclpy message)]
    unknown_ids: int = 0
    checksum_failures: int = 0
    invalid_bytes: int = 0
    decode_errors: int = 0
    errors: list = dataclasses.field(default_factory=list)    # human-readable reasons
    # further dispatch_status counters by name (e.g. acomms_core.security's auth_* outcomes)
    counters: dict = dataclasses.field(default_factory=dict)
    # the SRC the messages came from when it is not the packet's (a relayed packet's origin)
    src: int | None = None


@runtime_checkable
class PacketCodec(Protocol):
    """What the queue and the dispatch node need from a packet codec (ROS-free).

    Built by its registered factory as `factory(miniframe_header=bytes, dataframe_header=bytes,
    **options)`, where options are the codec YAML keys the codec registered.
    """

    name: str
    # The message codec ids this layout can carry (the config refuses others), e.g. range(256).
    message_ids: range

    def payload_capacity_bits(self, num_miniframe_bytes: int, num_dataframe_bytes: int) -> int:
        """Payload bits a packet with these frame budgets holds; 0 if the codec cannot use it."""

    def total_capacity_bits(self, num_packet_bytes: int) -> int:
        """Payload bits of the best packet of that many bytes in total, however the bytes are
        split between miniframe and dataframe (the queue refuses messages that exceed it)."""

    def message_cost_bits(self, message_bits: int) -> int:
        """Payload bits one message of `message_bits` occupies (its framing included);
        non-decreasing in message_bits, so message_cost_bits(0) is the cheapest message."""

    def pack(self, messages: Iterable[tuple[int, Bits]], num_miniframe_bytes: int,
             num_dataframe_bytes: int) -> tuple[bytes, bytes]:
        """(miniframe bytes, dataframe bytes) for [(codec id, message bits)] in that order;
        ValueError if their summed cost exceeds payload_capacity_bits."""

    def headers_match(self, miniframe: bytes, dataframe: bytes) -> bool:
        """Whether a received packet carries this codec's header bytes."""

    def decode(self, miniframe: bytes, dataframe: bytes, message_codecs: Mapping[int, object],
               received_packet=None, minibytes_valid: Sequence[int] = (),
               databytes_valid: Sequence[int] = ()) -> PacketDecodeResult:
        """Every message that can be trusted, the rest counted; never raises on bad bits.
        minibytes_valid / databytes_valid: flat [start, end) pairs of bytes the modem received
        intact (both empty: every byte is valid)."""


def valid_byte_mask(num_bytes: int, ranges: Sequence[int]) -> list[bool]:
    """[start, end) pairs (flat list) -> one bool per byte."""
    mask = [False] * num_bytes
    for i in range(0, len(ranges) - 1, 2):
        start, end = max(int(ranges[i]), 0), min(int(ranges[i + 1]), num_bytes)
        for j in range(start, end):
            mask[j] = True
    return mask
