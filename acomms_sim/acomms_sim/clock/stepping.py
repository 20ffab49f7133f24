"""Deterministic stepping without ROS: where the next step goes, how long a warp-throttled step
may take in wall time, watchdogs, and the conductor's bookkeeping of one Tick/Tock round.

The deterministic clock works in integer nanoseconds of simulated time (what rclpy timers and
/clock use), so every process computes the same step times:
- `next_step_ns(now, deadlines, end)`: the earliest pending deadline after `now`, at most `end`
  (idle stretches cost nothing: time jumps straight there);
- `WarpThrottle`: at most `warp` × real time (`warp=None`: as fast as possible), never ahead of
  the nodes (the throttle only ever waits);
- `Watchdog`: one bounded wall-clock wait with a description of what is awaited;
- `TockRound`: which registered participants answered step `step_id`, the earliest next event
  they reported, and whether any of them still did work (`work`: what a participant sent to
  other processes; then the conductor repeats the step at the same time until a round is quiet,
  so messages crossing processes are not missed).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable

from acomms_core.time_grid import (  # noqa: F401 - re-exported for the clock's users
    NS_PER_S,
    ns_to_seconds,
    seconds_to_ns,
    split_ns,
    stamp_ns,
)

DEFAULT_STEP_TIMEOUT_S = 30.0  # wall seconds one step (drain, or a Tock round) may take
WARP_MAX = "max"


class StepTimeout(RuntimeError):
    """A step did not complete in time; the message names who and the simulated time."""


def next_step_ns(now_ns: int, deadlines_ns: Iterable[int | None], end_ns: int) -> int:
    """The next simulated time to step to: the earliest deadline strictly after now, capped at
    end. Deadlines at or before now were due in the step just drained (or are None) and are
    ignored."""
    future = [d for d in deadlines_ns if d is not None and d > now_ns]
    return min([end_ns, *future]) if end_ns > now_ns else now_ns


def parse_warp(text: str) -> float | None:
    """'max' (as fast as possible) -> None; else a positive number of sim seconds per wall s."""
    if text.strip().lower() == WARP_MAX:
        return None
    value = float(text)
    if not value > 0 or not math.isfinite(value):
        raise ValueError(f"warp must be > 0 or '{WARP_MAX}', got {text}")
    return value


@dataclasses.dataclass
class WarpThrottle:
    """At most `warp` simulated seconds per wall second (None: no limit)."""

    warp: float | None

    def wall_time_allowed_s(self, sim_elapsed_s: float) -> float:
        """The wall time (since the start) before which sim time may not reach sim_elapsed_s."""
        return 0.0 if self.warp is None else sim_elapsed_s / self.warp

    def wait_s(self, sim_elapsed_s: float, wall_elapsed_s: float) -> float:
        """How long to wait before stepping to sim_elapsed_s (never negative)."""
        return max(0.0, self.wall_time_allowed_s(sim_elapsed_s) - wall_elapsed_s)


@dataclasses.dataclass
class Watchdog:
    """One bounded wait: `arm(what, now)`, then `expired(now)`; `message` says what was awaited."""

    timeout_s: float = DEFAULT_STEP_TIMEOUT_S
    what: str = ""
    armed_at: float | None = None

    def arm(self, what: str, now: float) -> None:
        self.what, self.armed_at = what, now

    def disarm(self) -> None:
        self.armed_at = None

    def expired(self, now: float) -> bool:
        return self.armed_at is not None and now - self.armed_at > self.timeout_s

    def message(self, sim_s: float) -> str:
        return (f"{self.what} did not finish within {self.timeout_s:g} wall s "
                f"at simulated time {sim_s:.3f} s")


@dataclasses.dataclass
class TockRound:
    """The answers to one Tick (step_id) from the registered participants."""

    step_id: int
    participants: frozenset[str]
    next_events_ns: dict[str, int | None] = dataclasses.field(default_factory=dict)
    work: dict[str, int] = dataclasses.field(default_factory=dict)

    def answer(self, name: str, step_id: int, next_event_ns: int | None, work: int) -> bool:
        """Record a Tock; False (ignored) for another step or an unregistered participant."""
        if step_id != self.step_id or name not in self.participants:
            return False
        self.next_events_ns[name] = next_event_ns
        self.work[name] = self.work.get(name, 0) + work  # a repeated answer adds, never hides
        return True

    def missing(self) -> list[str]:
        return sorted(self.participants - set(self.next_events_ns))

    @property
    def complete(self) -> bool:
        return not self.missing()

    @property
    def quiet(self) -> bool:
        """Complete and nobody did any work: every message between processes has landed."""
        return self.complete and not any(self.work.values())

    def next_event_ns(self) -> list[int | None]:
        return list(self.next_events_ns.values())


@dataclasses.dataclass
class StepStats:
    """Counts of a deterministic run (reported in the summary)."""

    steps: int = 0
    callbacks: int = 0
    rounds: int = 0
