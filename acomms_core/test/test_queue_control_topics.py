"""message_queue_node's queue_priority / queue_enable topics (by message-codec id, issue 19)."""

from __future__ import annotations

from core_ros_helpers import publisher, queue_node, request
from core_samples import EXAMPLE_CONFIG
from std_msgs.msg import String, UInt8

from acomms_core.ros.testing import RosHarness
from acomms_interfaces.msg import QueueEnable, QueuePriority
from acomms_interfaces.srv import GetNextPacketData

NS = "/auv1"


def test_queue_priority_and_enable_topics_address_queues_by_codec_id():
    with RosHarness() as ros:
        node = queue_node(ros, NS, EXAMPLE_CONFIG, default_dest=7)
        queues = node.queues
        byte_topic, command_topic = "to_acomms/status_byte", "to_acomms/command"
        byte_id = queues.queues[byte_topic].codec_id
        command_id = queues.queues[command_topic].codec_id
        publisher(ros, UInt8, f"{NS}/{byte_topic}").publish(UInt8(data=5))
        publisher(ros, String, f"{NS}/{command_topic}").publish(String(data="hi"))
        assert ros.spin_until(lambda: queues.counts.messages_received >= 2, timeout=10.0)
        priority = publisher(ros, QueuePriority, f"{NS}/queue_priority")
        enable = publisher(ros, QueueEnable, f"{NS}/queue_enable")
        assert ros.spin_until(lambda: priority.get_subscription_count() > 0
                              and enable.get_subscription_count() > 0, timeout=10.0)
        priority.publish(QueuePriority(queue_id=byte_id, priority=77))
        enable.publish(QueueEnable(queue_id=command_id, enable=False))
        enable.publish(QueueEnable(queue_id=9999, enable=False))  # unknown: counted, ignored
        assert ros.spin_until(lambda: queues.queues[byte_topic].priority == 77
                              and not queues.queues[command_topic].active
                              and node.control_errors == 1, timeout=10.0)
        client = ros.helper.create_client(GetNextPacketData, f"{NS}/get_next_packet_data")
        first = request(client, ros)
        assert first.num_messages == 1  # only the byte: the command queue is disabled
        enable.publish(QueueEnable(queue_id=command_id, enable=True))
        assert ros.spin_until(lambda: queues.queues[command_topic].active, timeout=10.0)
        assert request(client, ros).num_messages == 1
