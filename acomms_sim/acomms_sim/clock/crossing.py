"""Count the messages that cross processes, so Tick/Tock rounds know when none is in flight.

A partitioned run repeats a step at the same time until no message between processes is left
in flight (`stepping.Settlement`). Each process counts, cumulatively (`CrossingCounts`):
- `sent`: deliveries to subscriptions in other processes. `watch(nodes)` wraps each publisher's
  `publish`; a publication adds its matched subscriptions less this process's subscriptions on
  its topic (`local`) and less the observers' (nodes that record or watch a run without taking
  part in it, `OBSERVER_NODES`: found in the ROS graph, cached per topic until the matched count
  changes, once the graph names every node on the topic). An inactive lifecycle publisher
  sends nothing and counts nothing;
- `received`: messages taken by this process's subscriptions that came from another process:
  every message taken (`taken`: counted by the stepper's callback wrapper, or by
  `watch(..., subscriptions=True)`) less the deliveries this process made to itself (a local
  publication reaches the local subscriptions of its topic while `publish` runs, and the drain
  takes them);
- `work`: `sent` plus the service traffic (`services`, counted by the steppers): a round in
  which no process did any is quiet.
The stepping topics (/tick, /tock, /clock) and the logging ones (/rosout, /parameter_events:
rcl publishes some of those itself, uncounted) never count. A process without other processes
to settle with (a one-process run) counts nothing: `CrossingCounts(enabled=False)` wraps nothing,
so its publications cost no matched-subscription query.
"""

from __future__ import annotations

import functools
import inspect
from collections import Counter

UNCOUNTED_TOPICS = frozenset({"/tick", "/tock", "/clock", "/rosout", "/parameter_events"})
OBSERVER_NODES = frozenset({"acomms_run_recording"})  # acomms_run's topic recording (run.mcap)
OBSERVER_PREFIXES = ("_ros2cli", "rosbag2")  # ros2 topic echo / ros2 bag record
UNKNOWN_NODE = "_NODE_NAME_UNKNOWN_"  # rmw's name of a node not discovered yet
_WATCHED = "_acomms_crossing"


def is_observer(node_name: str) -> bool:
    return node_name in OBSERVER_NODES or node_name.startswith(OBSERVER_PREFIXES)


def counted_topic(entity) -> bool:
    """True for a publisher or subscription whose messages count (not a stepping topic)."""
    try:
        return entity.topic_name not in UNCOUNTED_TOPICS
    except Exception:  # destroyed meanwhile
        return False


class CrossingCounts:
    """`sent`, `received` (deliveries between processes) and `work` (see the module docstring);
    monotonic."""

    def __init__(self, enabled: bool = True):
        self.enabled = enabled
        self.sent = 0
        self.taken = 0  # messages taken by counted subscriptions of this process
        self.self_delivered = 0  # of those, the ones this process published itself
        self.services = 0
        self.local_subscriptions: Counter = Counter()
        self._observers: dict[str, tuple[int, int]] = {}  # topic -> (matched, observers)
        self._wrapped: list = []  # publishers / subscriptions whose callables are ours

    @property
    def received(self) -> int:
        return self.taken - self.self_delivered

    @property
    def work(self) -> int:
        return self.sent + self.services

    def watch(self, nodes, subscriptions: bool = False) -> None:
        """Know this process's subscriptions; wrap the publishers (and with `subscriptions`,
        the subscriptions' callbacks) not wrapped yet; nothing when not `enabled`."""
        if not self.enabled:
            return
        nodes = list(nodes)
        self.local_subscriptions = Counter(sub.topic_name for node in nodes
                                           for sub in node.subscriptions if counted_topic(sub))
        for node in nodes:
            for publisher in node.publishers:
                if counted_topic(publisher) and not getattr(publisher.publish, _WATCHED, False):
                    publisher.publish = self._counting(publisher, node)
                    self._wrapped.append((publisher, "publish"))
            if subscriptions:
                self._watch_subscriptions(node)

    def _watch_subscriptions(self, node) -> None:
        for sub in node.subscriptions:
            callback = getattr(sub, "callback", None)
            if (callback is None or getattr(callback, _WATCHED, False)
                    or not counted_topic(sub)):
                continue
            sub.callback = self._taking(callback)
            self._wrapped.append((sub, callback))

    def _taking(self, callback):
        @functools.wraps(callback)
        def taking(*args):
            self.taken += 1
            return callback(*args)

        taking.__signature__ = inspect.signature(callback)
        setattr(taking, _WATCHED, True)
        return taking

    def observers(self, node, topic: str, matched: int) -> int:
        """Subscriptions of observer nodes on `topic` (ROS graph, cached per matched count)."""
        cached = self._observers.get(topic)
        if cached is not None and cached[0] == matched:
            return cached[1]
        try:
            names = [info.node_name for info in node.get_subscriptions_info_by_topic(topic)]
        except Exception:  # node shutting down: no graph
            return 0
        found = sum(1 for name in names if is_observer(name))
        if UNKNOWN_NODE not in names:  # the graph can list an endpoint before naming its node
            self._observers[topic] = (matched, found)
        return found

    def _counting(self, publisher, node):
        publish = publisher.publish
        topic = publisher.topic_name

        def counted(msg):
            result = publish(msg)
            if getattr(publisher, "_enabled", True):  # an inactive LifecyclePublisher: dropped
                local = self.local_subscriptions.get(topic, 0)
                self.self_delivered += local
                remote = publisher.get_subscription_count() - local
                if remote > 0:
                    self.sent += max(0, remote - self.observers(node, topic, remote + local))
            return result

        setattr(counted, _WATCHED, True)
        return counted

    def release(self) -> None:
        """Give every wrapped publisher and subscription its own callable back."""
        for entity, original in self._wrapped:
            if original == "publish":
                entity.__dict__.pop("publish", None)
            else:
                entity.callback = original
        self._wrapped.clear()
