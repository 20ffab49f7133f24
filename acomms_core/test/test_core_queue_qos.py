"""Issue 28 item 4: a best-effort publisher (which the queue's reliable subscription cannot match)
is counted on queue_counters and /diagnostics, then received by a best-effort subscription,
while a reliable publisher's messages are still taken exactly once."""

from __future__ import annotations

import textwrap
import time

from core_ros_helpers import collector, publisher, queue_node
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from geometry_msgs.msg import Point
from rclpy.event_handler import PublisherEventCallbacks
from rclpy.qos import qos_profile_sensor_data

from acomms_core.ros.testing import RosHarness
from acomms_interfaces.msg import QueueCounters

CONFIG = """\
- codec_name: qos
  miniframe_header: [0xac]
  message_codecs:
    - id: 1
      ros_type: geometry_msgs/Point
      subscribe_topic: sensor
      queue_maxsize: 1000
      fields: {x: {codec: float, min_value: -1000, max_value: 1000, precision: 1}}
"""


def _config(tmp_path) -> str:
    path = tmp_path / "codecs.yaml"
    path.write_text(textwrap.dedent(CONFIG))
    return str(path)


def _queue_status(diagnostics: list, name: str):
    for array in reversed(diagnostics):
        for status in array.status:
            if status.name == f"{name}: message_queue":
                return status
    return None


def _publish_until_taken(ros, pub, counts, timeout_s: float = 10.0) -> bool:
    """Best-effort: what is published before the subscription matched is gone; publish until one
    arrives, then let the last one published arrive too."""
    end = time.monotonic() + timeout_s
    while counts.messages_received == 0 and time.monotonic() < end:
        pub.publish(Point(x=-1.0))
        ros.spin_for(0.05)
    ros.spin_for(0.3)
    return counts.messages_received > 0


def test_a_sensor_data_publisher_is_counted_then_received_and_reliable_ones_once(tmp_path):
    total = 100
    with RosHarness() as ros:
        node = queue_node(ros, "/be", _config(tmp_path), update_rate=10.0)
        counters = collector(ros, QueueCounters, "/be/queue_counters")
        diagnostics = collector(ros, DiagnosticArray, "/diagnostics")
        events = PublisherEventCallbacks(incompatible_qos=lambda info: None)
        pub = ros.helper.create_publisher(Point, "/be/sensor", qos_profile_sensor_data,
                                          event_callbacks=events)
        counts = node.queues.counts
        assert _publish_until_taken(ros, pub, counts), counts
        assert counts.incompatible_qos == 1 and "RELIABILITY" in counts.last_error
        before = counts.messages_received
        for i in range(total):
            pub.publish(Point(x=float(i)))
        assert ros.spin_until(lambda: counts.messages_received - before
                              + counts.dropped_on_arrival >= total, timeout=20.0), counts
        assert counts.messages_received - before == total, counts
        # a reliable publisher on the same topic: each message taken once (not by both)
        reliable = publisher(ros, Point, "/be/sensor")
        before = counts.messages_received
        for i in range(total):
            reliable.publish(Point(x=float(i)))
        assert ros.spin_until(lambda: counts.messages_received - before >= total, timeout=20.0)
        ros.spin_for(0.5)
        assert counts.messages_received - before == total, counts
        assert ros.spin_until(lambda: counters and counters[-1].incompatible_qos == 1,
                              timeout=10.0)
        name = node.get_fully_qualified_name()
        assert ros.spin_until(lambda: _queue_status(diagnostics, name) is not None
                              and _queue_status(diagnostics, name).level == DiagnosticStatus.WARN,
                              timeout=10.0)
        values = {kv.key: kv.value for kv in _queue_status(diagnostics, name).values}
        assert values["incompatible_qos"] == "1"
