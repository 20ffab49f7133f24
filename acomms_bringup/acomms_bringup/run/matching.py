"""Delivery matching (ROS-free): which sent message did an arrival at a vehicle carry?

The runner publishes each traffic entry (a `Stream`: topic, source vehicle, destinations) and
tells the matcher what it sent under a match key: the header stamp in seconds for stamped types
(the codec may round it), else the message's content as a string
(`acomms_bringup.run.traffic.match_key`). Sent messages of one stream with the same key (equal
content, or one stamp) form a *class*. When a message comes out of a vehicle's
packet_dispatch_node, `DeliveryMatcher.arrived` finds the sent message and books the arrival in
the run record (`acomms_bringup.run.records.RunRecord`):

- `delivered`: the first arrival of a message at one of its destinations (latency = arrival time
  − publish time); a broadcast message is delivered once to each destination;
- `duplicate`: an arrival at a destination that every message of its class already reached
  (not delivered again; counted in `RunRecord.duplicates`);
- `overheard`: a message at a vehicle that is not one of its destinations;
- `unmatched`: no sent message fits (unknown content, or no stamp within the stream's
  tolerance).

Matching rules:
- Source first: the recorder learns the SRC of the packet each arrival came out of (a hook on
  the in-process packet_dispatch_node), so an arrival from vehicle S matches only messages S
  sent. Without it (the receiver runs in another process) every stream but the receiver's own
  is tried in order; an arrival that fits messages of more than one stream is booked for the
  first and counted in `RunRecord.ambiguous` (a warning in the summary).
- Then the key: a stamp matches the sent message with the nearest stamp when it is closer than
  the stream's `stamp_tolerance_s` (a late arrival matches its own message); a content key
  matches exactly.
- Within a class, arrivals at one destination take its messages in order (FIFO per source,
  topic and destination: what the queue does for one priority); the queue's own intake
  (`queued`) is booked the same way, so the accounting knows which of them each packet carried.
- At the end `reconcile` re-pairs the arrivals of every class of more than one message with what
  the accounting knows: an arrival at time t came out of the last packet holding a message of
  the class that was decoded at the destination by t; messages whose packet was lost, never
  sent or still queued are not candidates. Where that evidence cannot decide (equal messages in
  one packet of which only some came out; no queue ledger; an arrival no decoded packet
  explains) the assignment is FIFO and the messages concerned are counted in
  `RunRecord.indistinct` (a warning in the summary) instead of silently given invented fates.
"""

from __future__ import annotations

import bisect
import dataclasses
import enum
from collections import Counter, defaultdict, deque
from collections.abc import Sequence

from acomms_bringup.run.accounting import transport_fates
from acomms_bringup.run.records import Delivery, RunRecord, SentMessage

MatchKey = float | str
MAX_STAMP_TOLERANCE_S = 1.0
RECEIVE_SLACK_S = 1e-3  # an arrival comes out of a packet decoded at most this much later
NO_EVIDENCE = ("unknown", "in_flight")  # transport fates that neither allow nor rule out arrival
DECODED = ("not_published", "lost_bad_frame")  # its packet was (partly) decoded at the destination


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
        self._sent: dict[Stream, dict[MatchKey, list[SentMessage]]] = {}
        self._queued: Counter = Counter()  # (stream, key) -> messages the queue took in
        self._delivered: set[tuple[str, str, str, int]] = {
            (d.topic, d.source, d.destination, d.seq) for d in record.deliveries}
        self._skip: Counter = Counter()  # (stream, key, receiver) -> delivered prefix length

    @staticmethod
    def _identity(message: SentMessage, receiver: str) -> tuple[str, str, str, int]:
        return (message.topic, message.source, receiver, message.seq)

    def sent(self, stream: Stream, key: MatchKey, seq: int, sent_s: float) -> SentMessage:
        """Book message number `seq` of the stream, published at `sent_s` with this key."""
        message = SentMessage(stream.topic, stream.source, seq, sent_s, stream.destinations, key)
        self._sent.setdefault(stream, {}).setdefault(key, []).append(message)
        self.record.sent.append(message)
        return message

    def _class_key(self, stream: Stream, key: MatchKey) -> MatchKey | None:
        """The key of the stream's class this key belongs to, or None."""
        sent = self._sent.get(stream, {})
        if isinstance(key, str):
            return key if key in sent else None
        stamps = [k for k in sent if not isinstance(k, str)]
        if not stamps:
            return None
        nearest = min(stamps, key=lambda stamp: abs(stamp - key))
        return nearest if abs(nearest - key) < stream.stamp_tolerance_s else None

    def queued(self, stream: Stream, key: MatchKey) -> SentMessage | None:
        """The sent message a queue just took in with this key: the oldest of its class the
        queue has not taken yet (the queue hears the stream in publish order), or None."""
        class_key = self._class_key(stream, key)
        if class_key is None:
            return None
        messages = self._sent[stream][class_key]
        taken = self._queued[(stream, class_key)]
        if taken >= len(messages):
            return None
        self._queued[(stream, class_key)] += 1
        return messages[taken]

    def candidates(self, receiver: str, streams: Sequence[Stream], key: MatchKey,
                   source: str | None = None) -> list[tuple[Stream, MatchKey]]:
        """(stream, class key) of every stream an arrival at `receiver` may come from: the
        source's streams when the source is known, else every stream but the receiver's own."""
        found = []
        for stream in streams:
            allowed = stream.source == source if source is not None else stream.source != receiver
            if not allowed:
                continue
            class_key = self._class_key(stream, key)
            if class_key is not None:
                found.append((stream, class_key))
        return found

    def arrived(self, receiver: str, streams: Sequence[Stream], key: MatchKey,
                received_s: float, source: str | None = None) -> Outcome:
        """Book an arrival at `receiver` on a topic that carries these streams, out of a packet
        sent by vehicle `source` (None: not known)."""
        found = self.candidates(receiver, streams, key, source)
        if not found:
            label = streams[0].topic if streams else "?"
            self.record.unmatched[f"{label} at {receiver}"] += 1
            return Outcome.UNMATCHED
        stream, class_key = found[0]
        if len(found) > 1:
            self.record.ambiguous[f"{stream.topic} at {receiver}"] += 1
        if receiver not in stream.destinations:
            self.record.overheard[f"{stream.topic} at {receiver}"] += 1
            return Outcome.OVERHEARD
        # FIFO: the oldest message of the class not yet delivered here (a stamp class holds one)
        messages = self._sent[stream][class_key]
        position = (stream, class_key, receiver)
        while (self._skip[position] < len(messages)
               and self._identity(messages[self._skip[position]], receiver) in self._delivered):
            self._skip[position] += 1
        match = next((m for m in messages[self._skip[position]:]
                      if self._identity(m, receiver) not in self._delivered), None)
        if match is None:
            self.record.duplicates[f"{stream.topic} at {receiver}"] += 1
            return Outcome.DUPLICATE
        self._delivered.add(self._identity(match, receiver))
        self.record.deliveries.append(Delivery(match.topic, match.source, receiver, match.seq,
                                               match.sent_s, received_s))
        return Outcome.DELIVERED


def reconcile(record: RunRecord) -> None:
    """Re-pair the deliveries of every class of more than one message with the accounting's
    evidence and count what it cannot decide in `record.indistinct` (module docstring).
    Idempotent: the result depends on the arrival times of each class, not on the pairing."""
    classes: dict[tuple, list[SentMessage]] = defaultdict(list)
    for message in record.sent:
        classes[(message.topic, message.source, message.key)].append(message)
    classes = {k: v for k, v in classes.items() if len(v) > 1}
    record.indistinct.clear()
    if not classes:
        return
    transport = transport_fates(record)
    routes: dict[tuple[str, str, str], list[Delivery]] = defaultdict(list)
    for delivery in record.deliveries:
        routes[(delivery.topic, delivery.source, delivery.destination)].append(delivery)
    replaced: dict[int, Delivery] = {}
    for (topic, source, _key), messages in classes.items():
        seqs = {m.seq for m in messages}
        for destination in messages[0].destinations:
            booked = sorted((d for d in routes[(topic, source, destination)] if d.seq in seqs),
                            key=lambda d: (d.received_s, d.seq))
            if not booked:
                continue
            evidence = {m.seq: transport.get((topic, source, m.seq, destination),
                                             ("unknown", None)) for m in messages}
            chosen, guessed = pair_arrivals([d.received_s for d in booked], messages, evidence)
            for delivery, message in zip(booked, chosen, strict=True):
                replaced[id(delivery)] = dataclasses.replace(delivery, seq=message.seq,
                                                             sent_s=message.sent_s)
            if guessed:
                record.indistinct[f"{topic} from {source} to {destination}"] += guessed
    record.deliveries = [replaced.get(id(d), d) for d in record.deliveries]


class _Candidates:
    """One class's messages at one destination, grouped by the accounting's evidence."""

    def __init__(self, messages: list[SentMessage], evidence: dict):
        self.packets: dict[float, deque] = {}  # decoded at -> its messages, in send order
        self.unknown: deque = deque()  # no evidence either way
        self.ruled_out: deque = deque()  # the evidence says not delivered
        for m in messages:
            fate, decoded_s = evidence[m.seq]
            if fate in DECODED:
                self.packets.setdefault(decoded_s, deque()).append(m)
            elif fate in NO_EVIDENCE:
                self.unknown.append(m)
            else:
                self.ruled_out.append(m)
        self.groups = {t: list(group) for t, group in self.packets.items()}
        self.unknown_all = list(self.unknown)
        self.times = sorted(self.packets)

    def take(self, t: float) -> tuple[SentMessage, str]:
        """The message an arrival at t carried and how sure that is: 'sure', 'packet' (one of
        several in its packet), 'unknown' (one of several without evidence), 'contradicted'."""
        index = bisect.bisect_right(self.times, t + RECEIVE_SLACK_S) - 1
        if index >= 0:  # the last packet decoded by t that still has a free message
            group = self.packets[self.times[index]]
            how = "packet" if len(group) > 1 else "sure"
            pick = group.popleft()
            if not group:
                del self.times[index]
            return pick, how
        if self.unknown and self.unknown[0].sent_s <= t:
            how = "unknown" if len(self.unknown) > 1 and self.unknown[1].sent_s <= t else "sure"
            return self.unknown.popleft(), how
        for queue in (self.ruled_out, *(self.packets[k] for k in self.times), self.unknown):
            if queue:
                pick = queue.popleft()
                self.times = [k for k in self.times if self.packets[k]]
                return pick, "contradicted"
        raise ValueError("more arrivals than messages")


def pair_arrivals(times: list[float], messages: list[SentMessage],
                  evidence: dict[int, tuple[str, float | None]]) -> tuple[list[SentMessage], int]:
    """The message each arrival (times in order) carried, among one class's messages (in send
    order), and how many messages' fates are a guess (0: the evidence decided).

    evidence: seq -> (transport fate, when its packet was decoded at the destination or None)."""
    candidates = _Candidates(messages, evidence)
    chosen: list[SentMessage] = []
    uncertain: set[int] = set()
    unknown_until = None
    contradicted = False
    for t in times:
        pick, how = candidates.take(t)
        chosen.append(pick)
        if how == "packet":
            uncertain.update(m.seq for m in candidates.groups[evidence[pick.seq][1]])
        elif how == "unknown":
            unknown_until = t
        elif how == "contradicted":
            contradicted = True
            uncertain.add(pick.seq)
    if unknown_until is not None:
        uncertain.update(m.seq for m in candidates.unknown_all if m.sent_s <= unknown_until)
    left = {m.seq for m in messages} - {m.seq for m in chosen}
    return chosen, len(uncertain) if contradicted or uncertain & left else 0
