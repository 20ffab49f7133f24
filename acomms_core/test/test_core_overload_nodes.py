"""Issue 12 through ROS: executors per node, nothing lost uncounted under a flood (case 1),
hostile packets counted not published (cases 2 and 5), activate failures say why (case 6)."""

from __future__ import annotations

import textwrap
from types import SimpleNamespace

from bitstring import Bits
from core_ros_helpers import collector, dispatch_node, publisher, queue_node, received_packet
from geometry_msgs.msg import Point
from rclpy.lifecycle import TransitionCallbackReturn
from rclpy.parameter import Parameter
from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy
from std_msgs.msg import Header

from acomms_core.nodes.message_queue_node import MessageQueueNode
from acomms_core.nodes.packet_dispatch_node import PacketDispatchNode
from acomms_core.ros.testing import RosHarness
from acomms_interfaces.msg import DispatchStatus, QueueCounters, ReceivedPacket

FLOOD_CONFIG = """\
- codec_name: flood
  miniframe_header: [0xac]
  message_codecs:
    - id: 1
      ros_type: geometry_msgs/Point
      subscribe_topic: flood
      queue_maxsize: 10
      fields: {x: {codec: float, min_value: -1000, max_value: 1000, precision: 1}}
"""
HEADER_CONFIG = """\
- codec_name: stamps
  miniframe_header: [0xac]
  message_codecs:
    - id: 1
      ros_type: std_msgs/Header
      subscribe_topic: to_acomms/header
      publish_topic: from_acomms/header
      fields:
        stamp: {codec: time, precision: 0, epoch_end: 8589934592}
        frame_id: {codec: string, max_length: 4}
"""


def _config(tmp_path, text: str) -> str:
    path = tmp_path / "codecs.yaml"
    path.write_text(textwrap.dedent(text))
    return str(path)


def test_case1_nodes_run_on_single_threaded_executors():
    assert MessageQueueNode.EXECUTOR == "single"
    assert PacketDispatchNode.EXECUTOR == "single"


def test_case1_a_flood_is_taken_in_or_counted_never_lost_silently(tmp_path):
    """1,000 messages published at once while the node does not spin: the KEEP_ALL
    subscription holds them until the node takes them (a KEEP_LAST history overwrote 900 without
    any event); every one is received, queued or counted as dropped at queue_maxsize."""
    total = 1000
    with RosHarness() as ros:
        node = queue_node(ros, "/flood", _config(tmp_path, FLOOD_CONFIG))
        qos = QoSProfile(depth=total, history=HistoryPolicy.KEEP_LAST,
                         reliability=ReliabilityPolicy.RELIABLE)
        pub = ros.helper.create_publisher(Point, "/flood/flood", qos)
        assert ros.spin_until(lambda: pub.get_subscription_count() > 0, timeout=10.0)
        ros.spin_for(0.2)
        for i in range(total):
            pub.publish(Point(x=float(i % 1000)))
        counts = node.queues.counts
        assert ros.spin_until(
            lambda: counts.messages_received + counts.dropped_on_arrival >= total, timeout=30.0), (
            counts)
        assert counts.messages_received == total and counts.dropped_on_arrival == 0, counts
        assert counts.messages_queued == 10 and counts.dropped_queue_full == total - 10


def test_case1_losses_the_middleware_reports_are_counted_and_published(tmp_path):
    with RosHarness() as ros:
        node = queue_node(ros, "/lossy", _config(tmp_path, FLOOD_CONFIG), update_rate=20.0)
        status = collector(ros, QueueCounters, "/lossy/queue_counters")
        node._on_message_lost(SimpleNamespace(total_count=3, total_count_change=3))
        node._on_message_lost(SimpleNamespace(total_count=5, total_count_change=2))
        assert node.queues.counts.dropped_on_arrival == 5
        assert ros.spin_until(lambda: status and status[-1].dropped_on_arrival == 5, timeout=10.0)
        assert "lost before the queue took them" in status[-1].last_error


def test_case2_and_5_dispatch_counts_a_wrapped_stamp_and_publishes_nothing(tmp_path):
    with RosHarness() as ros:
        dispatch_node(ros, "/rx", _config(tmp_path, HEADER_CONFIG))
        out = collector(ros, Header, "/rx/from_acomms/header")
        status = collector(ros, DispatchStatus, "/rx/dispatch_status")
        rx = publisher(ros, ReceivedPacket, "/rx/packet_rx")
        assert ros.spin_until(lambda: ros.helper.count_publishers("/rx/dispatch_status") > 0,
                              timeout=10.0)
        ros.spin_for(0.3)
        epoch = 1622520000
        num_bits = 33  # log2(2**33 - epoch)
        wrapped = Bits(uint=1, length=8) + Bits(uint=2 ** 31 + 5 - epoch, length=num_bits)
        valid = Bits(uint=1, length=8) + Bits(uint=1_700_000_000 - epoch, length=num_bits)
        for payload in (wrapped, valid):
            payload += Bits(uint=0, length=3)  # frame_id '' (varint 0..4)
            seen = len(status)
            rx.publish(received_packet(1, 2, b"\xac" + payload.tobytes(), b""))
            assert ros.spin_until(lambda n=seen: len(status) > n, timeout=10.0)
        ros.spin_for(0.3)
        assert [h.stamp.sec for h in out] == [1_700_000_000]
        assert status[-1].decode_errors == 1 and status[-1].messages_published == 1
        assert "outside int32" in status[0].last_error


class _Logger:
    def __init__(self, real):
        self.real, self.errors = real, []

    def error(self, text, **kwargs):
        self.errors.append(text)

    def __getattr__(self, name):
        return getattr(self.real, name)


class _RefusingQueueNode(MessageQueueNode):
    def _create_activated(self):
        raise RuntimeError("the middleware refused a subscription")


def test_case6_an_activate_failure_logs_its_reason(tmp_path):
    with RosHarness() as ros:
        node = ros.add(_RefusingQueueNode(
            context=ros.context, namespace="/bad", parameter_overrides=[
                Parameter("codec_config_file", value=_config(tmp_path, FLOOD_CONFIG))]))
        logger = _Logger(node.get_logger())
        node.get_logger = lambda: logger
        assert node.trigger_configure() == TransitionCallbackReturn.SUCCESS
        assert node.trigger_activate() == TransitionCallbackReturn.FAILURE
        assert logger.errors == ["activate refused: RuntimeError: the middleware refused a "
                                 "subscription"]
        assert len(node.activated) == 0
