"""Two vehicles in one process: A's queue -> test link -> B's dispatch, through ROS only.

The test link stands in for MAC + modems: it calls A's get_next_packet_data and publishes the
bytes as a ReceivedPacket on B's packet_rx.
"""

from __future__ import annotations

import textwrap

from builtin_interfaces.msg import Time
from core_ros_helpers import (
    collector,
    dispatch_node,
    publisher,
    queue_node,
    received_packet,
    request,
)
from core_samples import ALL_CODECS_CONFIG, differences, sample_messages
from rclpy.qos import QoSProfile, ReliabilityPolicy
from rosgraph_msgs.msg import Clock
from std_msgs.msg import UInt8

from acomms_core.codecs import load_codec_config
from acomms_core.ros.testing import RosHarness
from acomms_interfaces.msg import ReceivedPacket
from acomms_interfaces.srv import GetNextPacketData

SRC_A = 1


class Vehicle:
    def __init__(self, ros, namespace, config, **queue_parameters):
        self.namespace = namespace
        self.queue = queue_node(ros, namespace, config, **queue_parameters)
        self.dispatch = dispatch_node(ros, namespace, config)
        self.client = ros.helper.create_client(GetNextPacketData,
                                               f"{namespace}/get_next_packet_data")


def link(ros, sender: Vehicle, receiver_rx, config, mini=72, data=192) -> list:
    """Carry packets until the sender's queues are empty; the codec ids in the order sent."""
    packet_codec = config.packet_codecs[0]
    sent = []
    for _ in range(50):
        response = request(sender.client, ros, mini=mini, data=data)
        if response.num_messages == 0:
            return sent
        assert len(response.miniframe_bytes) <= mini and len(response.dataframe_bytes) <= data
        result = packet_codec.packet_codec.decode(
            bytes(response.miniframe_bytes), bytes(response.dataframe_bytes),
            packet_codec.codecs_by_id())
        sent.append([codec_id for codec_id, _ in result.messages])
        receiver_rx.publish(received_packet(SRC_A, response.dest, response.miniframe_bytes,
                                            response.dataframe_bytes))
    raise AssertionError("queue never emptied")


def test_every_field_codec_arrives_equal_and_in_priority_order():
    config = load_codec_config(ALL_CODECS_CONFIG)
    samples = sample_messages(src=SRC_A)
    with RosHarness() as ros:
        vehicle_a = Vehicle(ros, "/auv1", ALL_CODECS_CONFIG, src=SRC_A)
        Vehicle(ros, "/auv2", ALL_CODECS_CONFIG, src=2)
        by_id = config.by_id()
        inboxes = {codec_id: collector(ros, by_id[codec_id].msg_class,
                                       f"/auv2/{by_id[codec_id].publish_topic}")
                   for codec_id in samples}
        rx_b = publisher(ros, ReceivedPacket, "/auv2/packet_rx")
        for topic, sent, _, _ in samples.values():
            publisher(ros, type(sent), f"/auv1/{topic}").publish(sent)
        assert ros.spin_until(
            lambda: vehicle_a.queue.queues.counts.messages_queued == len(samples), 10.0), \
            vehicle_a.queue.queues.counts
        packets = link(ros, vehicle_a, rx_b, config)
        assert ros.spin_until(lambda: all(inboxes.values()), timeout=10.0), \
            [i for i, box in inboxes.items() if not box]
        for codec_id, (_, _, expected, tolerances) in samples.items():
            assert len(inboxes[codec_id]) == 1
            assert differences(expected, inboxes[codec_id][0], tolerances) == [], codec_id
        order = [codec_id for packet in packets for codec_id in packet]
        priorities = [by_id[i].priority for i in order]
        assert sorted(order) == sorted(samples)
        # id 9 goes to dest 42 alone; everything else, to 121, in priority order
        assert [p for i, p in zip(order, priorities, strict=True) if i != 9] == sorted(
            (p for i, p in zip(order, priorities, strict=True) if i != 9), reverse=True)
        assert [9] in packets and len(packets) > 2  # several messages per packet, several packets


QUEUE_CONFIG = """\
- codec_name: behaviour
  miniframe_header: [0xac]
  message_codecs:
    - {id: 1, ros_type: std_msgs/UInt8, subscribe_topic: to_acomms/fifo,
       publish_topic: from_acomms/fifo, queue_order: fifo, queue_maxsize: 3, priority: 10,
       fields: {data: {codec: uint8}}}
    - {id: 2, ros_type: std_msgs/UInt8, subscribe_topic: to_acomms/lifo,
       publish_topic: from_acomms/lifo, queue_order: lifo, queue_maxsize: 3, priority: 10,
       fields: {data: {codec: uint8}}}
    - {id: 3, ros_type: std_msgs/UInt8, subscribe_topic: to_acomms/ttl,
       publish_topic: from_acomms/ttl, ttl_seconds: 5, priority: 20,
       fields: {data: {codec: uint8}}}
"""


def test_fifo_lifo_maxsize_and_ttl_over_the_link(tmp_path):
    path = tmp_path / "behaviour.yaml"
    path.write_text(textwrap.dedent(QUEUE_CONFIG))
    config = load_codec_config(str(path))
    with RosHarness() as ros:
        vehicle_a = Vehicle(ros, "/auv1", str(path), use_sim_time=True)
        Vehicle(ros, "/auv2", str(path))  # B: its dispatch publishes what A sends
        clock = ros.helper.create_publisher(
            Clock, "/clock", QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE))
        node_a = vehicle_a.queue

        def set_time(seconds):
            clock.publish(Clock(clock=Time(sec=seconds)))
            assert ros.spin_until(
                lambda: node_a.get_clock().now().nanoseconds == seconds * 10**9, 10.0)

        inboxes = {name: collector(ros, UInt8, f"/auv2/from_acomms/{name}")
                   for name in ("fifo", "lifo", "ttl")}
        rx_b = publisher(ros, ReceivedPacket, "/auv2/packet_rx")
        topics = {name: publisher(ros, UInt8, f"/auv1/to_acomms/{name}")
                  for name in ("fifo", "lifo", "ttl")}
        counts = node_a.queues.counts

        def publish(name, values):
            target = counts.messages_received + len(values)
            for value in values:
                topics[name].publish(UInt8(data=value))
            assert ros.spin_until(lambda: counts.messages_received == target, 10.0)

        set_time(100)
        publish("ttl", [1, 2])
        set_time(103)
        publish("ttl", [3])
        publish("fifo", [0, 1, 2, 3, 4])
        publish("lifo", [0, 1, 2, 3, 4])
        set_time(106)  # ttl messages 1 and 2 are now 6 s old: expired; 3 is 3 s old
        packets = link(ros, vehicle_a, rx_b, config, mini=72, data=0)
        assert packets == [[3, 2, 2, 2, 1, 1, 1]]
        assert ros.spin_until(lambda: sum(map(len, inboxes.values())) == 7, 10.0)
        received = {name: [m.data for m in box] for name, box in inboxes.items()}
        assert received == {"fifo": [0, 1, 2], "lifo": [4, 3, 2], "ttl": [3]}
        assert (counts.dropped_queue_full, counts.expired_ttl, counts.messages_sent) == (4, 2, 7)
