"""message_queue_node's periodic status: queue_status, queue_counters, /diagnostics (the queue
counters, WARN once a publisher's QoS did not match a subscription; the dynamic queues' status
beside it when there are any), and the housekeeping that goes with them (TTL expiry,
fragment-session expiry, overdue dynamic-queue queries).

A `StatusCadence` runs it every 1/update_rate s while anyone subscribes to one of these topics
(or to the fragmentation status), and otherwise only when housekeeping is due, at the same grid
times (acomms_core.ros.status_cadence).
"""

from __future__ import annotations

import dataclasses

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from std_msgs.msg import Header

from acomms_core.ros.ros_support import (
    counters_diagnostics,
    is_active,
    listened,
    now_s,
    seconds_to_time_msg,
)
from acomms_core.ros.status_cadence import StatusCadence
from acomms_interfaces.msg import QueueCounters, QueueStatus, QueueSummary, SummaryMessageCount


class QueueStatusReport:
    """The status publishers and cadence of one message_queue_node."""

    def __init__(self, node):
        self.node = node
        self.cadence = StatusCadence(node, self.publish, self.next_housekeeping_s)
        self._status_pub = self._counters_pub = self._diagnostics_pub = None

    def configure(self, with_diagnostics: bool) -> None:
        """Publishers (on_configure); `/diagnostics` carries the dynamic queues' status too when
        `with_diagnostics`. The cadence also watches `fragmentation_status` (made earlier in
        on_configure): not forgotten here."""
        cadence, configured = self.cadence, self.node.configured
        self._status_pub = cadence.publisher(configured, QueueStatus, "queue_status")
        self._counters_pub = cadence.publisher(configured, QueueCounters, "queue_counters")
        self._diagnostics_pub = cadence.publisher(configured, DiagnosticArray, "/diagnostics")

    def release(self) -> None:
        self.cadence.release()
        self._status_pub = self._counters_pub = self._diagnostics_pub = None

    def next_housekeeping_s(self) -> float | None:
        """When `publish` has work even if nobody listens: a queued message's TTL, a fragment
        session's expiry; with dynamic queues (wall-clock query timeouts) every period; None:
        nothing due."""
        node = self.node
        queues = node.queues
        if queues is None:
            return None
        if node.dynamic_link is not None:
            return now_s(node)
        deadlines = [queues.next_expiry_s(), node.fragmentation.next_expiry_s()]
        return min((d for d in deadlines if d is not None), default=None)

    def publish(self) -> None:
        """Housekeeping, then status to whoever listens."""
        node = self.node
        queues = node.queues
        if queues is None or self._status_pub is None or not is_active(node):
            return
        now = now_s(node)
        header = Header(stamp=seconds_to_time_msg(now))
        queues.expire(now)  # TTLs run out whether or not anyone reads the status
        node.fragmentation.publish(now)
        link = node.dynamic_link
        if link is not None:
            link.check_overdue()
        if listened(self._diagnostics_pub):
            self._publish_diagnostics(queues, link, header)
        if listened(self._status_pub):
            self._publish_queue_status(queues, header, now)
        if listened(self._counters_pub):
            self._publish_counters(queues, header)

    def _publish_diagnostics(self, queues, link, header: Header) -> None:
        name = self.node.get_fully_qualified_name()
        counts = dataclasses.asdict(queues.counts)
        incompatible = counts["incompatible_qos"]
        level, message = DiagnosticStatus.OK, "ok"
        if incompatible:
            level, message = DiagnosticStatus.WARN, (
                f"{incompatible} publishers whose QoS the reliable subscriptions cannot match "
                "(best-effort ones are received without resends; last_error names the policy)")
        diagnostics = counters_diagnostics(f"{name}: message_queue", message, counts,
                                           header.stamp, level)
        if link is not None:
            diagnostics.status.extend(counters_diagnostics(
                f"{name}: dynamic_queues", f"{len(link.dynamic.queues)} dynamic queues",
                dict(link.dynamic.counts), header.stamp).status)
        self._diagnostics_pub.publish(diagnostics)

    def _publish_queue_status(self, queues, header: Header, now: float) -> None:
        snapshot = queues.status(now)
        self._status_pub.publish(QueueStatus(
            header=header,
            total_message_count=snapshot["total_message_count"],
            highest_priority=snapshot["highest_priority"],
            queued_dest_addresses=snapshot["queued_dest_addresses"],
            summary_message_counts=[SummaryMessageCount(**s)
                                    for s in snapshot["summary_message_counts"]],
            queue_summaries=[QueueSummary(**s) for s in snapshot["queue_summaries"]]))

    def _publish_counters(self, queues, header: Header) -> None:
        counts = queues.counts
        self._counters_pub.publish(QueueCounters(
            **self.node.fragmentation.counters(),
            header=header, messages_received=counts.messages_received,
            messages_queued=counts.messages_queued, messages_sent=counts.messages_sent,
            dropped_queue_full=counts.dropped_queue_full, expired_ttl=counts.expired_ttl,
            rejected_too_large=counts.rejected_too_large, encode_failures=counts.encode_failures,
            ignored_inactive=counts.ignored_inactive, packet_requests=counts.packet_requests,
            non_ascii_replaced=counts.non_ascii_replaced,
            dropped_on_arrival=counts.dropped_on_arrival, incompatible_qos=counts.incompatible_qos,
            last_error=counts.last_error))
