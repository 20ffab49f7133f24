"""Bridge timing without ROS: latest-only decimation, times after the run's start, renamed
parameters.

- `LatestOnly`: keeps the newest message of each topic; each period of a topic (the node's timer,
  node clock) takes the newest one not yet taken. Counters: received, forwarded, decimated
  (superseded before a period took it) per topic, and idle periods (nothing new).
- `run_start_s` / `seconds_until`: a time "N s after the start" is counted from a start stamp on
  the node clock (the scenario's `clock.start_time` in a simulation, which the stack passes;
  otherwise the node's activation), never compared with the clock's absolute reading.
- `renamed_parameter`: the value of a parameter that has an old, deprecated name too.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

COUNTED = ("received", "forwarded", "decimated")


class LatestOnly:
    """The newest message per topic, handed out once per period (see the module docstring)."""

    def __init__(self, topics: Iterable[str]):
        self.topics = tuple(topics)
        self.latest: dict[str, Any] = {}
        self.counts = {f"{topic}_{what}": 0 for topic in self.topics for what in COUNTED}
        self.counts["idle_periods"] = 0

    def _known(self, topic: str) -> str:
        if topic not in self.topics:   # a caller bug (e.g. a timer passing its TimerInfo)
            raise KeyError(f"unknown topic {topic!r}; topics: {', '.join(self.topics)}")
        return topic

    def record(self, topic: str, msg: Any) -> None:
        """A message arrived; it replaces (decimates) one no period has taken yet."""
        self._known(topic)
        self.counts[f"{topic}_received"] += 1
        if topic in self.latest:
            self.counts[f"{topic}_decimated"] += 1
        self.latest[topic] = msg

    def period(self, topic: str) -> Any | None:
        """A period of `topic` ended: the message to forward, or None (idle period)."""
        msg = self.latest.pop(self._known(topic), None)
        if msg is None:
            self.counts["idle_periods"] += 1
        else:
            self.counts[f"{topic}_forwarded"] += 1
        return msg

    def clear(self) -> None:
        self.latest.clear()


def run_start_s(configured_start_s: float, activation_s: float) -> float:
    """Node-clock time of the run's start: the configured one when >= 0, else the activation."""
    return configured_start_s if configured_start_s >= 0 else activation_s


def seconds_until(after_start_s: float, start_s: float, now_s: float) -> float | None:
    """Seconds from now_s until start_s + after_start_s (0 when that has passed); None for
    never (after_start_s < 0)."""
    if after_start_s < 0:
        return None
    return max(0.0, start_s + after_start_s - now_s)


def renamed_parameter(values: Mapping[str, Any], old: str, new: str) -> tuple[Any, str | None]:
    """The value of parameter `new`, or of its deprecated name `old` when that one is set (not
    None); with the deprecation note to log in that case."""
    if values.get(old) is None:
        return values[new], None
    return values[old], (f"parameter {old} is deprecated, use {new}: {old}={values[old]!r} "
                         f"taken as {new}")
