"""Fragment and ack formats on the wire (ros_acomms' layout, Gallimore et al. 2022).

In a packet, each piece sits in one message slot of the packet codec: the slot's id is a reserved
kind id (session start, continuation or ack; `settings.FragmentationSettings`), then comes the
message codec's 1-byte id, then the header and data below. All fields are big-endian bit fields:

- session start, 14 bytes: session id 8 b, src 8 b, dest 8 b, timestamp 32 b (unix s), block size
  in bits 8 b, message size in blocks 16 b, first block 16 b, last block 16 b; then the blocks
  first..last;
- continuation, 5 bytes: session id 8 b, first block 16 b, last block 16 b; then the blocks (their
  size is the session's block size, known from its start header);
- ack, >= 6 bytes: flag 1 b (1: the ranges are what arrived, ACK; 0: what is missing, NACK),
  number of ranges 7 b (1..127), session id 8 b, then (start 16 b, end 16 b) per inclusive range.

Every block is `block_size_bits` long; the message is zero-padded to whole blocks. Blocks are
numbered 0 .. size-1; block 0 always travels under a start header, so "block 0 acknowledged"
means a start header arrived, and a NACK naming block 0 (the null ack) asks for the start header
again. A start header may carry any blocks (the sender repeats it until block 0 is acked).
"""

from __future__ import annotations

import dataclasses

from bitstring import BitArray, Bits, ConstBitStream, ReadError

CODEC_ID_BITS = 8
START_HEADER_BITS = 112
CONTINUATION_HEADER_BITS = 40
ACK_HEADER_BITS = 16
ACK_RANGE_BITS = 32
MAX_ACK_RANGES = 127
MAX_BLOCKS = 2 ** 16          # block numbers are 16-bit
MAX_BLOCK_SIZE_BITS = 255     # the block size field is 8-bit


class WireError(ValueError):
    """A piece that cannot be read; `counter` names what went wrong (a receiver counter)."""

    def __init__(self, counter: str, reason: str):
        super().__init__(reason)
        self.counter = counter


@dataclasses.dataclass(frozen=True)
class StartHeader:
    session_id: int
    src: int
    dest: int
    timestamp_s: int
    block_size_bits: int
    size_blocks: int
    first_block: int
    last_block: int

    def same_session(self, other: StartHeader) -> bool:
        """Whether `other` starts the same transfer (not a new session reusing the id)."""
        return (self.dest, self.timestamp_s, self.block_size_bits, self.size_blocks) == (
            other.dest, other.timestamp_s, other.block_size_bits, other.size_blocks)


@dataclasses.dataclass(frozen=True)
class ContinuationHeader:
    session_id: int
    first_block: int
    last_block: int


@dataclasses.dataclass(frozen=True)
class Fragment:
    """One start or continuation piece; data is None for a continuation whose session (hence
    block size) the receiver does not know: the rest of its packet cannot be read."""

    codec_id: int
    header: StartHeader | ContinuationHeader
    data: Bits | None

    @property
    def is_start(self) -> bool:
        return isinstance(self.header, StartHeader)

    @property
    def session_id(self) -> int:
        return self.header.session_id

    @property
    def block_count(self) -> int:
        return self.header.last_block - self.header.first_block + 1


@dataclasses.dataclass(frozen=True)
class Ack:
    codec_id: int
    session_id: int
    is_ack: bool                      # True: ranges arrived (ACK); False: ranges missing (NACK)
    ranges: tuple[tuple[int, int], ...]

    @property
    def is_null(self) -> bool:
        """A NACK naming block 0: the start header never arrived."""
        return not self.is_ack and bool(self.ranges) and self.ranges[0][0] == 0


def piece_bits(block_count: int, block_size_bits: int, is_start: bool) -> int:
    """Bits of one start/continuation piece after the slot id (codec id + header + blocks)."""
    header = START_HEADER_BITS if is_start else CONTINUATION_HEADER_BITS
    return CODEC_ID_BITS + header + block_count * block_size_bits


def ack_bits(range_count: int) -> int:
    return CODEC_ID_BITS + ACK_HEADER_BITS + ACK_RANGE_BITS * range_count


def encode_fragment(fragment: Fragment) -> Bits:
    header = fragment.header
    if fragment.is_start:
        fields = [(8, header.session_id), (8, header.src), (8, header.dest),
                  (32, header.timestamp_s), (8, header.block_size_bits), (16, header.size_blocks),
                  (16, header.first_block), (16, header.last_block)]
    else:
        fields = [(8, header.session_id), (16, header.first_block), (16, header.last_block)]
    bits = BitArray(uint=fragment.codec_id, length=CODEC_ID_BITS)
    for length, value in fields:
        bits.append(Bits(uint=value, length=length))
    bits.append(fragment.data)
    return Bits(bits)


def encode_ack(ack: Ack) -> Bits:
    if not 1 <= len(ack.ranges) <= MAX_ACK_RANGES:
        raise ValueError(f"an ack holds 1..{MAX_ACK_RANGES} ranges, not {len(ack.ranges)}")
    bits = BitArray(uint=ack.codec_id, length=CODEC_ID_BITS)
    bits.append(Bits(uint=int(ack.is_ack), length=1))
    bits.append(Bits(uint=len(ack.ranges), length=7))
    bits.append(Bits(uint=ack.session_id, length=8))
    for start, end in ack.ranges:
        bits.append(Bits(uint=start, length=16))
        bits.append(Bits(uint=end, length=16))
    return Bits(bits)


def _read(stream: ConstBitStream, fmt: str, what: str):
    try:
        return stream.read(fmt)
    except ReadError:
        raise WireError("pieces_truncated", f"{what} is truncated") from None


def read_start(stream: ConstBitStream) -> Fragment:
    codec_id = _read(stream, "uint:8", "start header")
    values = [_read(stream, f"uint:{n}", "start header") for n in (8, 8, 8, 32, 8, 16, 16, 16)]
    header = StartHeader(*values)
    if header.block_size_bits == 0 or header.size_blocks == 0:
        raise WireError("pieces_corrupt", f"session {header.session_id}: start header with "
                        f"block size {header.block_size_bits} bits, {header.size_blocks} blocks")
    _check_range(header.session_id, header.first_block, header.last_block, header.size_blocks)
    length = (header.last_block - header.first_block + 1) * header.block_size_bits
    data = _read(stream, f"bits:{length}",
                 f"session {header.session_id} blocks {header.first_block}..{header.last_block}")
    return Fragment(codec_id, header, Bits(data))


def read_continuation(stream: ConstBitStream, block_size_of) -> Fragment:
    """block_size_of(session id) -> the session's block size, or None when it is unknown."""
    codec_id = _read(stream, "uint:8", "continuation header")
    header = ContinuationHeader(*(_read(stream, f"uint:{n}", "continuation header")
                                  for n in (8, 16, 16)))
    _check_range(header.session_id, header.first_block, header.last_block, MAX_BLOCKS)
    block_size = block_size_of(header.session_id)
    if block_size is None:
        stream.pos = len(stream)   # the block size is unknown: nothing after it can be read
        return Fragment(codec_id, header, None)
    data = _read(stream, f"bits:{(header.last_block - header.first_block + 1) * block_size}",
                 f"session {header.session_id} blocks {header.first_block}..{header.last_block}")
    return Fragment(codec_id, header, Bits(data))


def read_ack(stream: ConstBitStream) -> Ack:
    codec_id = _read(stream, "uint:8", "ack")
    is_ack, count, session_id = (_read(stream, f"uint:{n}", "ack") for n in (1, 7, 8))
    if count == 0:
        raise WireError("acks_invalid", f"session {session_id}: ack without ranges")
    ranges = tuple((_read(stream, "uint:16", "ack range"), _read(stream, "uint:16", "ack range"))
                   for _ in range(count))
    previous_end = -1
    for start, end in ranges:
        if start > end or start <= previous_end:
            raise WireError("acks_invalid", f"session {session_id}: ack ranges {list(ranges)} "
                            "are not sorted and disjoint")
        previous_end = end
    return Ack(codec_id, session_id, bool(is_ack), ranges)


def _check_range(session_id: int, first: int, last: int, size: int) -> None:
    if not first <= last < size:
        raise WireError("pieces_corrupt", f"session {session_id}: blocks {first}..{last} "
                        f"outside 0..{size - 1}")
