"""Ack tracking: what an ack says arrived, and the shortest ack for what arrived.

The receiver chooses the shorter of the two range lists: ACK (the ranges that arrived) or NACK
(the ranges still missing). Two rules keep every ack safe to act on:
- a NACK is only used when block 0 (the start header) arrived, so a NACK naming block 0 is
  always the null ack ("continuations arrived without the start header, send it again");
- a list longer than `max_ranges` is never a NACK (a cut NACK would claim blocks that never
  arrived); a cut ACK list only under-reports, costing at most a repeated block.
"""

from __future__ import annotations

from acomms_core.fragmentation.ranges import complement, from_ranges, to_ranges
from acomms_core.fragmentation.wire import MAX_ACK_RANGES, Ack


def null_ack(codec_id: int, session_id: int) -> Ack:
    return Ack(codec_id, session_id, False, ((0, 0),))


def build_ack(codec_id: int, session_id: int, received, size_blocks: int,
              max_ranges: int = MAX_ACK_RANGES) -> Ack:
    """The shorter of ACK / NACK for the blocks `received` (an iterable of block numbers)."""
    max_ranges = max(1, min(int(max_ranges), MAX_ACK_RANGES))
    arrived = to_ranges(received)
    if not arrived:
        return null_ack(codec_id, session_id)
    missing = complement(arrived, size_blocks)
    if not missing:
        return Ack(codec_id, session_id, True, ((0, size_blocks - 1),))
    nack_allowed = arrived[0][0] == 0 and len(missing) <= max_ranges
    if nack_allowed and len(missing) < len(arrived):
        return Ack(codec_id, session_id, False, tuple(missing))
    return Ack(codec_id, session_id, True, tuple(arrived[:max_ranges]))


def acked_blocks(ack: Ack, size_blocks: int) -> set[int] | None:
    """Blocks the ack says arrived; None for the null ack; ValueError for ranges beyond the
    session's size."""
    if ack.ranges and ack.ranges[-1][1] >= size_blocks:
        raise ValueError(f"ack ranges {list(ack.ranges)} exceed the session's "
                         f"{size_blocks} blocks")
    if ack.is_null:
        return None
    if ack.is_ack:
        return from_ranges(ack.ranges)
    return from_ranges(complement(list(ack.ranges), size_blocks))
