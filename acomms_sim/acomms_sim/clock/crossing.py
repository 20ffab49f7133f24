"""Count what a process sends to other processes during a step (the Tick/Tock rounds' "work").

A partitioned run repeats a step at the same time until a round in which no process left a
message in flight towards another one. Work that stayed inside one process (its own drain ran it
to quiescence) cannot concern the others, so what the rounds need is the number of messages that
may cross processes: `CrossingSends.watch(nodes)` wraps each publisher's `publish` so that a
publication counts (`sent`) when the publisher has more matched subscriptions than this process
has subscriptions on its topic (someone elsewhere hears it). The stepping topics themselves
(/tick, /tock, /clock) never count. Service traffic is counted by the stepper (a service callback
run, a request waiting for a reply from another process).
"""

from __future__ import annotations

from collections import Counter

STEPPING_TOPICS = frozenset({"/tick", "/tock", "/clock"})
_WATCHED = "_acomms_crossing"


class CrossingSends:
    """`sent`: publications that reached a subscription outside this process (monotonic)."""

    def __init__(self):
        self.sent = 0
        self.local_subscriptions: Counter = Counter()
        self._wrapped: list = []  # publishers whose publish is ours, restored by `release`

    def watch(self, nodes) -> None:
        """Know this process's subscriptions; wrap the publishers not wrapped yet."""
        self.local_subscriptions = Counter(sub.topic_name for node in nodes
                                           for sub in node.subscriptions)
        for node in nodes:
            for publisher in node.publishers:
                if (publisher.topic_name not in STEPPING_TOPICS
                        and not getattr(publisher.publish, _WATCHED, False)):
                    publisher.publish = self._counting(publisher)
                    self._wrapped.append(publisher)

    def crosses(self, publisher) -> bool:
        """True when a subscription outside this process matched `publisher`."""
        return (publisher.get_subscription_count()
                > self.local_subscriptions.get(publisher.topic_name, 0))

    def _counting(self, publisher):
        publish = publisher.publish

        def counted(msg):
            if self.crosses(publisher):
                self.sent += 1
            return publish(msg)

        setattr(counted, _WATCHED, True)
        return counted

    def release(self) -> None:
        for publisher in self._wrapped:
            publisher.__dict__.pop("publish", None)
        self._wrapped.clear()
