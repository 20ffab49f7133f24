"""Inclusive block ranges [(start, end), ...] <-> sets of block numbers."""

from __future__ import annotations

from collections.abc import Iterable


def to_ranges(blocks: Iterable[int]) -> list[tuple[int, int]]:
    """Sorted, merged inclusive ranges covering exactly `blocks`."""
    ranges: list[tuple[int, int]] = []
    for block in sorted(set(blocks)):
        if ranges and block == ranges[-1][1] + 1:
            ranges[-1] = (ranges[-1][0], block)
        else:
            ranges.append((block, block))
    return ranges


def from_ranges(ranges: Iterable[tuple[int, int]]) -> set[int]:
    blocks: set[int] = set()
    for start, end in ranges:
        blocks.update(range(start, end + 1))
    return blocks


def complement(ranges: Iterable[tuple[int, int]], size: int) -> list[tuple[int, int]]:
    """The ranges of [0, size) not covered by `ranges` (which must be sorted and disjoint)."""
    missing, cursor = [], 0
    for start, end in ranges:
        if start > cursor:
            missing.append((cursor, start - 1))
        cursor = max(cursor, end + 1)
    if cursor < size:
        missing.append((cursor, size - 1))
    return missing


def span(ranges: list[tuple[int, int]]) -> tuple[int, int]:
    """(first block, last block) of sorted ranges; (0, 0) when empty."""
    return (ranges[0][0], ranges[-1][1]) if ranges else (0, 0)
