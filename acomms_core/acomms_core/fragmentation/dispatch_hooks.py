"""The dispatch side of fragmentation (ROS-free): pieces read from packets, messages rebuilt.

Per packet, `codecs_for_packet(src)` gives the packet codec's reader an entry for each reserved
id (the `MessageCodec` reading interface: decode(stream, packet), is_fixed_length,
max_length_bits). A continuation's length depends on its session's block size, known from the
start header (an earlier packet or earlier in this one). What was read is handed to `handle`:
fragments to the `Reassembler` (returns the ack to send and, once complete, the message
decoded by its own message codec exactly as an unfragmented one), acks to the caller (the
sender side lives in the queue node).
"""

from __future__ import annotations

import dataclasses
from collections import Counter

from bitstring import ConstBitStream

from acomms_core.codecs.message_codec import DecodeError
from acomms_core.fragmentation.receiver import RECEIVER_COUNTERS, Reassembler, Received
from acomms_core.fragmentation.settings import FragmentationSettings
from acomms_core.fragmentation.wire import (
    WireError,
    encode_ack,
    read_ack,
    read_continuation,
    read_start,
)

# DispatchStatus field -> counter
DISPATCH_COUNTER_FIELDS = {f"fragment_{name}": name for name in RECEIVER_COUNTERS + (
    "acks_heard", "reassembly_failures", "messages_reassembled")}


class _PieceReader:
    """One reserved id's reader, in the shape the packet codec expects of a message codec."""

    is_fixed_length = False
    min_length_bits = 0
    max_length_bits = 1 << 30

    def __init__(self, read, counts: Counter):
        self._read, self._counts = read, counts

    def decode(self, stream: ConstBitStream, received_packet=None):
        try:
            return self._read(stream)
        except WireError as exc:
            self._counts[exc.counter] += 1
            raise DecodeError(str(exc)) from None


@dataclasses.dataclass
class PieceOutcome:
    """What one piece led to: an ack to send ((dest, bytes)), an ack heard from another vehicle
    (bytes, for this vehicle's queue), a complete message (with its codec id) or an error."""

    ack_out: tuple[int, bytes] | None = None
    ack_heard: bytes | None = None
    codec_id: int = 0
    message: object = None
    error: str | None = None
    session: object = None


class FragmentReceiver:
    """Reassembly state of one dispatch node (one caller at a time)."""

    def __init__(self, settings: FragmentationSettings, broadcast_address: int = 255):
        self.settings = settings
        self.reassembler = Reassembler(settings, broadcast_address)
        self.counts = self.reassembler.counts
        for name in ("acks_heard", "reassembly_failures", "messages_reassembled"):
            self.counts[name] = 0

    @property
    def reserved_ids(self) -> tuple[int, int, int]:
        return self.settings.reserved_ids

    def codecs_for_packet(self, src: int) -> dict:
        """{reserved id: reader} for one packet from src."""
        started: dict[int, int] = {}   # session id -> block size, from starts in this packet

        def start(stream):
            fragment = read_start(stream)
            started[fragment.session_id] = fragment.header.block_size_bits
            return fragment

        def block_size(session_id):
            known = self.reassembler.block_size_of(src, session_id)
            return started.get(session_id, known)

        settings = self.settings
        return {settings.start_id: _PieceReader(start, self.counts),
                settings.continuation_id: _PieceReader(
                    lambda stream: read_continuation(stream, block_size), self.counts),
                settings.ack_id: _PieceReader(read_ack, self.counts)}

    def decoders(self, packet_config, src: int) -> dict:
        """The message codecs a packet from src is decoded with: the config's, plus the
        reserved ids' readers when the packet codec carries fragments."""
        codecs = packet_config.codecs_by_id()
        if any(m.allow_fragmentation for m in packet_config.message_codecs):
            codecs.update(self.codecs_for_packet(src))
        return codecs

    def handle(self, src: int, dest: int, codec_id: int, piece, message_codecs, now: float,
               received_packet=None) -> PieceOutcome:
        """One piece read from a packet from src to dest."""
        if codec_id == self.settings.ack_id:
            self.counts["acks_heard"] += 1
            return PieceOutcome(ack_heard=encode_ack(piece).tobytes())
        received: Received = self.reassembler.receive(src, dest, piece, now)
        outcome = PieceOutcome(session=received.session)
        if received.ack is not None:
            self.counts["acks_queued"] += 1
            outcome.ack_out = (received.ack_dest, encode_ack(received.ack).tobytes())
        if received.message_bits is None:
            return outcome
        outcome.codec_id = received.codec_id
        codec = message_codecs.get(received.codec_id)
        try:
            if codec is None or received.codec_id in self.settings.reserved_ids:
                raise DecodeError(f"no message codec id {received.codec_id}")
            outcome.message = codec.decode(ConstBitStream(received.message_bits),
                                           received_packet)
        except DecodeError as exc:
            self.counts["reassembly_failures"] += 1
            outcome.error = f"reassembled message from {src}: {exc}"
            return outcome
        self.counts["messages_reassembled"] += 1
        return outcome

    def expire(self, now: float) -> list[str]:
        return self.reassembler.expire(now)

    def next_expiry_s(self) -> float | None:
        return self.reassembler.next_expiry_s()

    def counters(self) -> dict:
        return {name: self.counts[key] for name, key in DISPATCH_COUNTER_FIELDS.items()}
