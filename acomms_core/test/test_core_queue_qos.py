"""Issue 28 item 4: best-effort publishers reach the queue, and a publisher whose QoS cannot match
the queue's subscription is counted on queue_counters and /diagnostics, not lost silently."""

from __future__ import annotations

import textwrap

from core_ros_helpers import collector, queue_node
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from geometry_msgs.msg import Point
from rclpy.qos import qos_profile_sensor_data

from acomms_core.nodes.message_queue_node import check_queue_parameters
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


def test_a_sensor_data_publisher_is_received_by_default(tmp_path):
    total = 100
    with RosHarness() as ros:
        node = queue_node(ros, "/be", _config(tmp_path))
        pub = ros.helper.create_publisher(Point, "/be/sensor", qos_profile_sensor_data)
        assert ros.spin_until(lambda: pub.get_subscription_count() > 0, timeout=10.0)
        ros.spin_for(0.2)
        for i in range(total):
            pub.publish(Point(x=float(i)))
        counts = node.queues.counts
        assert ros.spin_until(
            lambda: counts.messages_received + counts.dropped_on_arrival >= total, timeout=20.0), (
            counts)
        assert counts.messages_received == total and counts.incompatible_qos == 0, counts


def test_an_incompatible_publisher_is_counted_on_queue_counters_and_diagnostics(tmp_path):
    with RosHarness() as ros:
        node = queue_node(ros, "/rel", _config(tmp_path), subscription_reliability="reliable",
                          update_rate=10.0)
        counters = collector(ros, QueueCounters, "/rel/queue_counters")
        diagnostics = collector(ros, DiagnosticArray, "/diagnostics")
        pub = ros.helper.create_publisher(Point, "/rel/sensor", qos_profile_sensor_data)
        for i in range(10):
            pub.publish(Point(x=float(i)))
        assert ros.spin_until(lambda: counters and counters[-1].incompatible_qos == 1,
                              timeout=10.0), node.queues.counts
        assert "RELIABILITY" in counters[-1].last_error and counters[-1].messages_received == 0
        name = node.get_fully_qualified_name()
        assert ros.spin_until(lambda: _queue_status(diagnostics, name) is not None
                              and _queue_status(diagnostics, name).level == DiagnosticStatus.WARN,
                              timeout=10.0)
        values = {kv.key: kv.value for kv in _queue_status(diagnostics, name).values}
        assert values["incompatible_qos"] == "1"


def test_subscription_reliability_is_validated():
    assert "use one of best_effort, reliable" in check_queue_parameters(
        {"subscription_reliability": "sometimes"})
