"""message_queue_node's intake for best-effort publishers (issue 28).

The queue subscribes every subscribe_topic reliable with a KEEP_ALL history (`SUBSCRIPTION_QOS`):
reliable publishers in other processes have lost samples resent, so nothing is lost (a
best-effort subscription measured 102-758 of 6,000 messages lost from reliable publishers in
another process, bench/queue_ingest.py). A reliable subscription never matches a best-effort
publisher (e.g. `qos_profile_sensor_data`): the middleware reports an incompatible QoS instead.

Each such report is counted (`incompatible_qos` on queue_counters and /diagnostics, the policy in
`last_error`). When the policy is RELIABILITY, the topic gets a second, best-effort subscription
(`BEST_EFFORT_QOS`) that takes only messages from publishers the reliable subscription cannot
match: a message whose publisher is reliable (publisher GID among the topic's reliable publishers,
read from the ROS graph) is left to the reliable subscription, so nothing is taken twice. So is a
message from a publisher the graph does not list yet (discovery still running): a best-effort
publisher may lose its first messages, as a best-effort late joiner does anyway.
"""

from __future__ import annotations

import time

from rclpy.qos import HistoryPolicy, QoSPolicyKind, QoSProfile, ReliabilityPolicy

GRAPH_QUERY_PERIOD_S = 0.05  # wall clock: an unknown publisher GID asks the ROS graph this often
BEST_EFFORT_QOS = QoSProfile(history=HistoryPolicy.KEEP_ALL,
                             reliability=ReliabilityPolicy.BEST_EFFORT)


class BestEffortIntake:
    """Per topic: the best-effort subscription (made on the first incompatible-QoS report) and
    the GIDs of the topic's publishers, reliable or not."""

    def __init__(self, node, take):
        self.node = node
        self.take = take                  # take(topic, msg): the queue's message callback
        self._topics: set[str] = set()
        self._reliable: dict[str, dict[bytes, bool]] = {}
        self._next_query_s: dict[str, float] = {}

    def reset(self) -> None:
        """At activate: the subscriptions of the last activation are gone."""
        self._topics.clear()
        self._reliable.clear()
        self._next_query_s.clear()

    def on_incompatible_qos(self, topic: str, msg_class, info, callback_group) -> None:
        node, queues = self.node, self.node.queues
        if queues is None or info.total_count_change <= 0:
            return
        policy = QoSPolicyKind(info.last_policy_kind)
        served = policy == QoSPolicyKind.RELIABILITY
        text = (f"{topic}: a publisher's QoS cannot match the queue's reliable subscription "
                f"({policy.name}); "
                + ("its messages are taken by a best-effort subscription (not resent when lost)"
                   if served else "its messages are not received"))
        with queues.lock:
            queues.counts.incompatible_qos += info.total_count_change
            queues.counts.last_error = text
        node.get_logger().warning(f"{text} (counted as incompatible_qos)")
        if served and topic not in self._topics:
            self._topics.add(topic)
            node.activated.subscription(
                msg_class, topic, lambda msg, message_info, t=topic: self._on_message(
                    t, msg, message_info), BEST_EFFORT_QOS, callback_group=callback_group)

    def _on_message(self, topic: str, msg, message_info) -> None:
        gid = bytes((message_info.get("publisher_gid") or {}).get("data", b""))
        known = self._reliable.setdefault(topic, {})
        if gid not in known and time.monotonic() >= self._next_query_s.get(topic, 0.0):
            self._next_query_s[topic] = time.monotonic() + GRAPH_QUERY_PERIOD_S
            for info in self.node.get_publishers_info_by_topic(topic):
                known[bytes(info.endpoint_gid)] = (
                    info.qos_profile.reliability == ReliabilityPolicy.RELIABLE)
        if known.get(gid) is False:  # only publishers the reliable subscription cannot match
            self.take(topic, msg)
