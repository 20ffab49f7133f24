"""Delivery matching (ROS-free): which sent message did an arrival at a vehicle carry?

The runner publishes each traffic entry (a `Stream`: topic, source vehicle, destinations) and
tells the matcher what it sent under a match key: the header stamp in seconds for stamped types
(the codec may round it), else the message's content as a string
(`acomms_bringup.run.traffic.match_key`). When a message comes out of a vehicle's
packet_dispatch_node, `DeliveryMatcher.arrived` finds the sent message and books the arrival in
the run record (`acomms_bringup.run.report.RunRecord`):

- `delivered`: the first arrival of a message at one of its destinations (latency = arrival time
  − publish time); a broadcast message is delivered once to each destination;
- `duplicate`: the same message again at the same destination (not counted again);
- `overheard`: a message at a vehicle that is not one of its destinations;
- `unmatched`: no sent message fits (unknown content, or no stamp within the stream's
  tolerance).

Matching rules: streams are tried in the given order, skipping the receiver's own stream; a
stamp key matches the sent message with the nearest stamp when it is closer than the stream's
`stamp_tolerance_s`; a content key matches exactly. Messages with identical content cannot be
told apart: an arrival counts for the newest one sent with that content. Late arrivals (a
message that arrives after newer ones of the same stream were sent) match their own message.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Sequence

from acomms_bringup.run.report import Delivery, RunRecord, SentMessage

MatchKey = float | str
MAX_STAMP_TOLERANCE_S = 1.0


def stamp_tolerance_s(period_s: float) -> float:
    """How far an arrival's stamp may be from the sent one: below half the publish period (so
    neighbouring messages cannot be confused) and at most 1 s (codec rounding)."""
    return min(MAX_STAMP_TOLERANCE_S, period_s / 2.0)


@dataclasses.dataclass(frozen=True)
class Stream:
    """One traffic entry as the matcher sees it."""

    topic: str  # the label in the report (the traffic entry's topic)
    source: str
    destinations: tuple[str, ...]
    stamp_tolerance_s: float = MAX_STAMP_TOLERANCE_S


class Outcome(enum.Enum):
    DELIVERED = "delivered"
    DUPLICATE = "duplicate"
    OVERHEARD = "overheard"
    UNMATCHED = "unmatched"


class DeliveryMatcher:
    """Books sent messages and arrivals into a RunRecord (see the module docstring)."""

    def __init__(self, record: RunRecord):
        self.record = record
        self._sent: dict[Stream, dict[MatchKey, SentMessage]] = {}
        self._delivered: set[tuple[str, str, str, int]] = {
            (d.topic, d.source, d.destination, d.seq) for d in record.deliveries}

    def sent(self, stream: Stream, key: MatchKey, seq: int, sent_s: float) -> SentMessage:
        """Book message number `seq` of the stream, published at `sent_s` with this key."""
        message = SentMessage(stream.topic, stream.source, seq, sent_s, stream.destinations)
        self._sent.setdefault(stream, {})[key] = message
        self.record.sent.append(message)
        return message

    def find(self, receiver: str, streams: Sequence[Stream], key: MatchKey) -> SentMessage | None:
        """The sent message an arrival at `receiver` with this key carries, or None."""
        for stream in streams:
            if stream.source == receiver:
                continue
            found = self._find_in(stream, key)
            if found is not None:
                return found
        return None

    def _find_in(self, stream: Stream, key: MatchKey) -> SentMessage | None:
        sent = self._sent.get(stream, {})
        if isinstance(key, str):
            return sent.get(key)
        stamps = [k for k in sent if not isinstance(k, str)]
        if not stamps:
            return None
        nearest = min(stamps, key=lambda stamp: abs(stamp - key))
        return sent[nearest] if abs(nearest - key) < stream.stamp_tolerance_s else None

    def arrived(self, receiver: str, streams: Sequence[Stream], key: MatchKey,
                received_s: float) -> Outcome:
        """Book an arrival at `receiver` on a topic that carries these streams."""
        match = self.find(receiver, streams, key)
        if match is None:
            label = streams[0].topic if streams else "?"
            self.record.unmatched[f"{label} at {receiver}"] += 1
            return Outcome.UNMATCHED
        if receiver not in match.destinations:
            self.record.overheard[f"{match.topic} at {receiver}"] += 1
            return Outcome.OVERHEARD
        identity = (match.topic, match.source, receiver, match.seq)
        if identity in self._delivered:
            return Outcome.DUPLICATE
        self._delivered.add(identity)
        self.record.deliveries.append(Delivery(match.topic, match.source, receiver, match.seq,
                                               match.sent_s, received_s))
        return Outcome.DELIVERED
