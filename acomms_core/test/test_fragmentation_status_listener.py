"""An open fragment session's status reaches a subscriber of `fragmentation_status` alone (issue
26: the queue node's status report forgot that publisher at configure, so open sessions were
reported only while someone also listened to queue_status or queue_counters)."""

from __future__ import annotations

from core_ros_helpers import collector, publisher, queue_node
from fragmentation_support import text_of, write_config
from std_msgs.msg import String

from acomms_core.ros.testing import RosHarness
from acomms_interfaces.msg import FragmentationStatus


def test_open_session_status_with_only_a_fragmentation_status_subscriber(tmp_path):
    config = write_config(tmp_path)
    with RosHarness() as ros:
        queue = queue_node(ros, "/auv1", config, src=1, update_rate=20.0)
        statuses = collector(ros, FragmentationStatus, "/auv1/fragmentation_status")
        publisher(ros, String, "/auv1/blob").publish(String(data=text_of(2500, 5)))
        assert ros.spin_until(lambda: queue.queues.counts.messages_queued == 1, 10.0)
        assert ros.spin_until(lambda: statuses, 10.0)
        assert statuses[0].outgoing and statuses[0].state == FragmentationStatus.STATE_OPEN
        assert statuses[0].payload_size_blocks > 1
