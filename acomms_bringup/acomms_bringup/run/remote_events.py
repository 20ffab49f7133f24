"""What a participant's queues and dispatch nodes did, carried to acomms_run over ROS (ROS-free).

In one process the runner hears each vehicle's message queue (`accounting.QueueLedger`, the
fates of its messages) and packet_dispatch_node (the SRC of every arrival's packet) through
their observer hooks (`observers`). A vehicle run by an `acomms_participant` (another process,
maybe another machine) has the same hooks: `RemoteObserver` turns each event into one JSON line
(`encode`) that the participant publishes on `REMOTE_EVENTS_TOPIC` (std_msgs/String, reliable,
in order), and the runner's recorder hands every line to `RemoteEvents`, which books it exactly
as the in-process hooks would have (`decode`): queue events into that vehicle's QueueLedger
(the ROS message replaced by its match key), dispatch sources into `Recorder.on_dispatched_key`.
So the accounting and the matching of a partitioned run are those of one process.
"""

from __future__ import annotations

import json
from collections.abc import Callable

REMOTE_EVENTS_TOPIC = "/acomms_run/remote_events"
REMOTE_EVENTS_DEPTH = 10000  # lines kept for a late subscriber (transient local)


def encode(kind: str, vehicle: str, event: str = "", **facts) -> str:
    """One event as a JSON line: kind 'queue' (event, facts with `key` instead of the ROS
    message, `payload` as hex) or 'dispatch' (facts: topic, src, key)."""
    if "payload" in facts:
        facts["payload"] = bytes(facts["payload"]).hex()
    return json.dumps({"kind": kind, "vehicle": vehicle, "event": event, "facts": facts},
                      separators=(",", ":"))


def decode(line: str) -> tuple[str, str, str, dict]:
    """(kind, vehicle, event, facts) of an `encode`d line; ValueError if it is not one."""
    try:
        data = json.loads(line)
        kind, vehicle, event, facts = (data["kind"], data["vehicle"], data["event"],
                                       dict(data["facts"]))
    except (json.JSONDecodeError, KeyError, TypeError) as exc:
        raise ValueError(f"not a remote event line ({exc}): {line[:80]!r}") from None
    if "payload" in facts:
        facts["payload"] = bytes.fromhex(facts["payload"])
    if "seqs" in facts:
        facts["seqs"] = list(facts["seqs"])
    return kind, vehicle, event, facts


class RemoteObserver:
    """A participant's observer of one vehicle's queue and dispatch node: `publish(line)`
    each event. `key(msg)`: the message's match key (`traffic.match_key`)."""

    def __init__(self, vehicle: str, publish: Callable[[str], None], key: Callable):
        self.vehicle, self.publish, self.key = vehicle, publish, key

    def __call__(self, event: str, **facts) -> None:
        """A `MessageQueues.observer`."""
        if "msg" in facts:
            facts["key"] = self.key(facts.pop("msg"))
        self.publish(encode("queue", self.vehicle, event, **facts))

    def dispatched(self, topic: str, src: int, message) -> None:
        """A packet_dispatch_node's observer."""
        self.publish(encode("dispatch", self.vehicle, topic=topic, src=int(src),
                            key=self.key(message)))


class RemoteEvents:
    """The runner's side: books decoded lines. `ledgers`: vehicle -> its QueueLedger (whose
    `identify` takes the match key in place of the message); `dispatched(topic, src, key)`."""

    def __init__(self, ledgers: dict, dispatched: Callable[[str, int, object], None]):
        self.ledgers, self.dispatched = ledgers, dispatched
        self.refused = 0  # lines that were not events of a known vehicle

    def __call__(self, line: str) -> None:
        try:
            kind, vehicle, event, facts = decode(line)
        except ValueError:
            self.refused += 1
            return
        if kind == "dispatch":
            self.dispatched(facts["topic"], int(facts["src"]), facts["key"])
        elif kind == "queue" and vehicle in self.ledgers:
            if "key" in facts:
                facts["msg"] = facts.pop("key")
            self.ledgers[vehicle](event, **facts)
        else:
            self.refused += 1
