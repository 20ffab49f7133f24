"""Bring-up policy of the lifecycle manager, without ROS: names, retries, the next transition.

- `resolve_node_name(name, namespace)`: a managed node given relative (`modem_sim_node`,
  `sub/node`) is resolved in the manager's namespace, as ROS resolves relative names, so a
  launch file can push namespaces around a manager and its nodes together.
- `RetrySchedule` / `Attempts`: every lifecycle service call is retried with exponential
  backoff until a deadline (a lost answer on a loaded machine is normal, not a failure). Only
  the absence of an answer is retried; a node that answers "refused" is not asked again.
- `next_step(states, direction)`: the next transition, decided from states read just before
  (the manager re-reads every state before each transition, so a transition whose answer was
  lost but which happened is never repeated, and one that did not happen is sent again).
  Start-up configures every node in order, then activates every node in order; bring-down
  deactivates then cleans up node by node, in reverse order.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterator, Sequence

STEADY_STATES = ("unconfigured", "inactive", "active")
# Transition states a node passes through (rclpy labels); the manager waits them out.
TRANSITION_STATES = ("configuring", "activating", "deactivating", "cleaningup", "shuttingdown",
                     "errorprocessing")
UP, DOWN = "up", "down"
# (transition label, state it leads to) by the state it starts from, per direction.
_UP_STEPS = {"unconfigured": ("configure", "inactive"), "inactive": ("activate", "active")}
_DOWN_STEPS = {"active": ("deactivate", "inactive"), "inactive": ("cleanup", "unconfigured")}


def is_valid_node_name(name: str) -> bool:
    """A fully qualified (`/ns/node`) or relative (`node`, `ns/node`) node name."""
    return bool(name) and not name.endswith("/") and "//" not in name and name != "/" \
        and not name.startswith("~")


def resolve_node_name(name: str, namespace: str) -> str:
    """The fully qualified name: absolute names as given, relative ones under namespace."""
    if name.startswith("/"):
        return name
    return f"{namespace.rstrip('/')}/{name}"


@dataclasses.dataclass(frozen=True)
class RetrySchedule:
    """Pauses between attempts: first_pause_s, growing by factor, at most max_pause_s."""

    first_pause_s: float = 0.1
    factor: float = 2.0
    max_pause_s: float = 2.0

    def pauses(self) -> Iterator[float]:
        pause = self.first_pause_s
        while True:
            yield pause
            pause = min(self.max_pause_s, pause * self.factor)


class Attempts:
    """Attempts at one step until a deadline: `next_pause_s()` is the pause before the next
    attempt (cut to the time left), or None when the deadline has passed."""

    def __init__(self, deadline_s: float, schedule: RetrySchedule = RetrySchedule(),
                 clock: Callable[[], float] = time.monotonic):
        self._clock = clock
        self._deadline = clock() + deadline_s
        self._pauses = schedule.pauses()
        self.count = 0  # attempts made so far (the caller counts them with `attempted`)

    def attempted(self) -> None:
        self.count += 1

    def remaining_s(self) -> float:
        return max(0.0, self._deadline - self._clock())

    def next_pause_s(self) -> float | None:
        remaining = self.remaining_s()
        if remaining <= 0.0:
            return None
        return min(next(self._pauses), remaining)


@dataclasses.dataclass(frozen=True)
class Step:
    """Move node `index` by `transition` (its label) to state `expected`."""

    index: int
    transition: str
    expected: str


@dataclasses.dataclass(frozen=True)
class Wait:
    """Node `index` is in a transition state: read it again later."""

    index: int
    state: str


@dataclasses.dataclass(frozen=True)
class Blocked:
    """The nodes cannot be moved the way asked; `reason` says which and why."""

    index: int
    reason: str


Plan = Step | Wait | Blocked | None  # None: done


def next_step(states: Sequence[str], direction: str = UP) -> Plan:
    """The next move for nodes in dependency order with these (just read) states.

    UP: configure the first unconfigured node; when none is left, activate the first inactive
    one. DOWN: the last node not yet unconfigured moves one step down (deactivate, then
    cleanup). A node in a transition state is waited for first; any other state (finalized,
    unknown) blocks. None when every node is where the direction wants it.
    """
    for index, state in enumerate(states):
        if state in TRANSITION_STATES:
            return Wait(index, state)
        if state not in STEADY_STATES:
            return Blocked(index, f"cannot {'start' if direction == UP else 'stop'} from "
                                  f"state {state}")
    if direction == UP:
        for wanted in ("unconfigured", "inactive"):
            if wanted in states:
                index = list(states).index(wanted)
                return Step(index, *_UP_STEPS[wanted])
        return None
    for index in reversed(range(len(states))):
        if states[index] in _DOWN_STEPS:
            return Step(index, *_DOWN_STEPS[states[index]])
    return None
