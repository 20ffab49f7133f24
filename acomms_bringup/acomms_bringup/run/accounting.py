"""Reconciled message accounting (ROS-free): what became of every sent message, per destination.

The runner hands each vehicle's `MessageQueues` a `QueueLedger` as its observer (an additive hook
of `acomms_core.queue.message_queue`): the ledger ties the queue's own message numbers to the
runner's sent messages (`report.SentMessage`, found by the message's match key) and books what
the queue did with them (queued, packed into a packet, expired, dropped because the queue was
full, refused). At the end `message_fates` gives every (message, destination) exactly one fate:

- delivered: came out of the destination's packet_dispatch_node (which of several equal
  messages: `matching`; the other fates are `transport_fates`, what became of its packet);
- lost_noise, lost_collision, lost_half_duplex: its packet reached the destination and was not
  decoded, for that cause (`report.Reception.loss_cause`);
- lost_bad_frame: its packet was partly decoded and the message was in a failed frame;
- not_published: its packet was decoded at the destination but the message never came out;
- in_flight: its packet was sent and its reception not evaluated when the run ended;
- not_transmitted: packed, but no transmission of that packet (held by the MAC or the modem at
  the end, or refused by the modem);
- expired: removed by the queue's ttl_seconds;
- dropped_queue_full: dropped by a full queue (a LIFO queue drops its oldest message);
- refused: the queue refused it on arrival (cannot encode, can never fit, queue inactive);
- queued_at_end: still in the queue when the run ended;
- unknown: the queue never reported it (its vehicle ran in another process).

So sent = sum of the fates, per topic, source and destination (`accounting_rows`).
"""

from __future__ import annotations

import dataclasses
from collections import Counter, deque
from collections.abc import Callable

FATES = ("delivered", "lost_noise", "lost_collision", "lost_half_duplex", "lost_bad_frame",
         "not_published", "in_flight", "not_transmitted", "expired", "dropped_queue_full",
         "refused", "queued_at_end", "unknown")
TRANSMIT_MATCH_S = 1e-3  # a reception belongs to a transmission when the start times agree


@dataclasses.dataclass
class PackedPacket:
    """One packet a vehicle's queue filled: its bytes and the messages (topic, source, seq)."""

    vehicle: str
    time_s: float
    payload: bytes
    messages: list[tuple[str, str, int]]


@dataclasses.dataclass
class Ledger:
    """What the queues did with the sent messages (kept in the RunRecord)."""

    fates: dict[tuple[str, str, int], str | int] = dataclasses.field(default_factory=dict)
    packets: list[PackedPacket] = dataclasses.field(default_factory=list)


class QueueLedger:
    """A `MessageQueues.observer` for one vehicle: books its queue's events into a Ledger.

    `identify(topic, msg)` returns the SentMessage a queued ROS message is (or None); it runs
    while the queue holds its lock, under `lock`."""

    def __init__(self, vehicle: str, ledger: Ledger, identify: Callable, lock):
        self.vehicle, self.ledger, self.identify, self.lock = vehicle, ledger, identify, lock
        self._by_seq: dict[int, tuple[str, str, int]] = {}

    def __call__(self, event: str, **facts) -> None:
        with self.lock:
            if event == "queued":
                sent = self.identify(facts["topic"], facts["msg"])
                if sent is not None:
                    key = (sent.topic, sent.source, sent.seq)
                    self._by_seq[facts["seq"]] = key
                    self.ledger.fates[key] = "queued_at_end"
            elif event == "refused":
                sent = self.identify(facts["topic"], facts["msg"])
                if sent is not None:
                    self.ledger.fates[(sent.topic, sent.source, sent.seq)] = facts["reason"]
            elif event in ("expired", "dropped_queue_full"):
                key = self._by_seq.pop(facts["seq"], None)
                if key is not None:
                    self.ledger.fates[key] = event
            elif event == "packed":
                keys = [self._by_seq.pop(seq) for seq in facts["seqs"] if seq in self._by_seq]
                for key in keys:
                    self.ledger.fates[key] = len(self.ledger.packets)
                self.ledger.packets.append(PackedPacket(self.vehicle, facts["time_s"],
                                                        bytes(facts["payload"]), keys))


def packet_transmissions(ledger: Ledger, transmissions: list) -> dict[int, object]:
    """Packet index -> the transmission that carried it: the first transmission of the same
    vehicle with the same bytes at or after the packing time not claimed by an earlier packet
    (packets are booked in time order)."""
    waiting: dict[tuple[str, bytes], deque] = {}
    for transmission in sorted(transmissions, key=lambda t: t.start_s):
        waiting.setdefault((transmission.vehicle, transmission.payload), deque()).append(
            transmission)
    found: dict[int, object] = {}
    for index, packet in enumerate(ledger.packets):
        candidates = waiting.get((packet.vehicle, packet.payload))
        while candidates and candidates[0].start_s < packet.time_s - TRANSMIT_MATCH_S:
            candidates.popleft()
        if candidates:
            found[index] = candidates.popleft()
    return found


def _reception_fate(reception) -> str:
    cause = reception.loss_cause
    if cause is not None:
        return f"lost_{cause}"
    return "lost_bad_frame" if reception.outcome == "partial" else "not_published"


def transport_fates(record) -> dict[tuple[str, str, int, str], tuple[str, float | None]]:
    """(topic, source, seq, destination) -> (what became of the message's packet at that
    destination, deliveries left aside: one of FATES but delivered; when that packet was (partly)
    decoded there, else None), for every sent message."""
    ledger: Ledger = record.ledger
    carried = packet_transmissions(ledger, record.transmissions)
    receptions = {}
    for r in record.receptions:
        receptions.setdefault((r.vehicle, r.src), []).append(r)
    fates = {}
    for m in record.sent:
        booked = ledger.fates.get((m.topic, m.source, m.seq), "unknown")
        for destination in m.destinations:
            key = (m.topic, m.source, m.seq, destination)
            if not isinstance(booked, int):
                fates[key] = (booked if booked in FATES else "refused", None)
            elif booked not in carried:
                fates[key] = ("not_transmitted", None)
            else:
                sent = carried[booked]
                heard = [r for r in receptions.get((destination, sent.src), [])
                         if abs(r.transmit_s - sent.start_s) < TRANSMIT_MATCH_S]
                fate = _reception_fate(heard[0]) if heard else "in_flight"
                decoded_s = heard[0].arrival_s + heard[0].duration_s if heard else None
                fates[key] = (fate, decoded_s if fate in ("not_published", "lost_bad_frame")
                              else None)
    return fates


def message_fates(record) -> dict[tuple[str, str, int, str], str]:
    """(topic, source, seq, destination) -> one of FATES, for every sent message."""
    delivered = {(d.topic, d.source, d.seq, d.destination) for d in record.deliveries}
    return {key: "delivered" if key in delivered else fate
            for key, (fate, _decoded_s) in transport_fates(record).items()}


def accounting_rows(record) -> list[dict]:
    """Per topic, source and destination: sent and the count of every fate (they add up)."""
    counts: dict[tuple[str, str, str], Counter] = {}
    for (topic, source, _seq, destination), fate in message_fates(record).items():
        counts.setdefault((topic, source, destination), Counter())[fate] += 1
    rows = []
    for (topic, source, destination), counter in sorted(counts.items()):
        rows.append({"topic": topic, "source": source, "destination": destination,
                     "sent": sum(counter.values()), **{f: counter[f] for f in FATES}})
    return rows
