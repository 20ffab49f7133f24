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
  they reported, whether any of them did work (`work`: what a participant sent to other
  processes, its service traffic) and their cumulative counts of deliveries sent to and
  received from other processes (`acomms_sim.clock.crossing`);
- `Settlement`: when a step is settled (no message between processes in flight), so the
  conductor moves time on; until then it repeats the step at the same time.
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
    counts: dict[str, tuple[int, int]] = dataclasses.field(default_factory=dict)

    def answer(self, name: str, step_id: int, next_event_ns: int | None, work: int,
               sent: int = 0, received: int = 0) -> bool:
        """Record a Tock (`sent`, `received`: the participant's cumulative deliveries to and
        from other processes); False (ignored) for another step or an unregistered one."""
        if step_id != self.step_id or name not in self.participants:
            return False
        self.next_events_ns[name] = next_event_ns
        self.work[name] = self.work.get(name, 0) + work  # a repeated answer adds, never hides
        before = self.counts.get(name, (0, 0))  # counts only grow: a repeated answer's latest
        self.counts[name] = (max(before[0], sent), max(before[1], received))
        return True

    def totals(self) -> tuple[int, int]:
        """(sent, received) summed over the participants that answered."""
        return (sum(sent for sent, _ in self.counts.values()),
                sum(received for _, received in self.counts.values()))

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


UNBALANCED_ROUNDS = 3  # rounds in which nothing moved before a step settles unbalanced
UNBALANCED_WAIT_S = 0.05  # and wall seconds since the first of them (wall clock)


@dataclasses.dataclass
class Settlement:
    """When the conductor may move time on: the four-counter rule of distributed termination
    detection. Every round is a wave of snapshots, one per process (its cumulative deliveries
    `sent` to and `received` from other processes, taken after its drain), each wave after the
    previous one. The step is settled when the round is quiet and the deliveries sent, summed
    over this round, equal those received summed over the previous round (of this step or the
    one before): counts only grow and nothing is received that was not sent, so no message was
    in flight between the two waves and nothing was sent since. A step without traffic between
    processes settles in one round; the rounds cannot be fooled by a message published just
    before a Tick and landing after it.

    Counts that never balance (a delivery lost: a full KEEP_LAST queue, a best-effort drop, a
    subscription destroyed before taking it; a subscriber outside the run that is not a known
    observer; a message from a publisher outside the run) would hold the step for ever: after
    `UNBALANCED_ROUNDS` rounds in which nothing moved and `UNBALANCED_WAIT_S` wall seconds the
    step settles anyway, the difference is accepted from then on (`offset`) and `unbalanced`
    counts it (not at the first step: what was published before the counting began)."""

    unbalanced_rounds: int = UNBALANCED_ROUNDS
    unbalanced_wait_s: float = UNBALANCED_WAIT_S
    offset: int = 0  # sent - received accepted by unbalanced settlements (added to received)
    unbalanced: int = 0  # steps settled without balance (the first step's not counted)
    steps: int = 0  # steps settled
    _received_before: int | None = None  # the previous round's received total (+ offset)
    _last: tuple[int, int] | None = None
    _stalled: int = 0
    _stalled_since: float = 0.0

    def settled(self, quiet: bool, sent: int, received: int, wall_s: float) -> bool:
        """One more round ended with these totals (all processes); True: the step is settled.
        `quiet`: nobody did any work since its previous snapshot."""
        received += self.offset
        before, self._received_before = self._received_before, received
        last, self._last = self._last, (sent, received)
        if quiet and before is not None and sent == before == received:
            return self._settle()
        if not quiet or last != (sent, received):
            self._stalled = 0
            return False
        self._stalled += 1
        if self._stalled == 1:
            self._stalled_since = wall_s
        if (self._stalled < self.unbalanced_rounds
                or wall_s - self._stalled_since < self.unbalanced_wait_s):
            return False
        self.offset += sent - received  # from now on the difference is not in flight
        self._received_before, self._last = sent, (sent, sent)
        self.unbalanced += self.steps > 0
        return self._settle()

    def _settle(self) -> bool:
        self._stalled = 0
        self.steps += 1
        return True


@dataclasses.dataclass
class StepStats:
    """Counts of a deterministic run (reported in the summary)."""

    steps: int = 0
    callbacks: int = 0
    rounds: int = 0
    unbalanced: int = 0  # steps settled without their deliveries balancing (`Settlement`)
