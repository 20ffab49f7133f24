"""A periodic poll's time grid (ROS-free): let a node wake only when something can happen, yet
act at exactly the times its periodic timer would have; and the integer-nanosecond time
conversions every stepping clock, node and test shares (exact, unlike float seconds).

A timer with period `period_ns` started at `anchor_ns` fires at anchor + k·period. A node that
knows its next event (a simulated modem's next arrival, a MAC's next transmit opportunity) can
sleep until the first grid time at or after it (`grid_deadline_ns`), so a deterministic clock
jumps straight there, and the work happens at the same grid time as with the periodic poll.
"""

from __future__ import annotations

import dataclasses

NS_PER_S = 1_000_000_000
GRID_TOLERANCE_NS = 1000  # event times within this of a grid time count as on it (float rounding)


def seconds_to_ns(seconds: float) -> int:
    return int(round(seconds * NS_PER_S))


def ns_to_seconds(ns: int) -> float:
    return ns / NS_PER_S


def stamp_ns(stamp) -> int:
    """A builtin_interfaces Time (anything with sec and nanosec) in integer nanoseconds."""
    return int(stamp.sec) * NS_PER_S + int(stamp.nanosec)


def split_ns(time_ns: int) -> dict:
    """The sec/nanosec fields of a builtin_interfaces Time for time_ns (exact)."""
    return {"sec": time_ns // NS_PER_S, "nanosec": time_ns % NS_PER_S}


def grid_deadline_ns(event_ns: int, now_ns: int, anchor_ns: int, period_ns: int) -> int:
    """The first grid time at or after event_ns and strictly after now_ns."""
    earliest = max(event_ns, now_ns + 1)
    polls = -(-(earliest - anchor_ns) // period_ns)  # ceiling division
    return anchor_ns + polls * period_ns


@dataclasses.dataclass(frozen=True)
class TimeGrid:
    anchor_ns: int
    period_ns: int

    def next_after(self, now_ns: int) -> int:
        return grid_deadline_ns(now_ns + 1, now_ns, self.anchor_ns, self.period_ns)

    def wake_for(self, event_s: float | None, now_ns: int) -> int:
        """The grid time to wake for an event at event_s (None: the next grid time)."""
        if event_s is None:
            return self.next_after(now_ns)
        event_ns = seconds_to_ns(event_s) - GRID_TOLERANCE_NS
        return grid_deadline_ns(event_ns, now_ns, self.anchor_ns, self.period_ns)

    def latest_at_or_before(self, now_ns: int) -> int:
        return self.anchor_ns + (now_ns - self.anchor_ns) // self.period_ns * self.period_ns
