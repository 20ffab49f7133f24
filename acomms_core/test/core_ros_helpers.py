"""Helpers shared by the acomms_core node tests (test-only)."""

from __future__ import annotations

from rclpy.parameter import Parameter
from rclpy.qos import QoSProfile, ReliabilityPolicy

from acomms_core.nodes.message_queue_node import MessageQueueNode
from acomms_core.nodes.packet_dispatch_node import PacketDispatchNode
from acomms_interfaces.msg import Packet, ReceivedPacket
from acomms_interfaces.srv import GetNextPacketData

RELIABLE = QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE)


def queue_node(ros, namespace: str, config: str, **parameters) -> MessageQueueNode:
    overrides = [Parameter("codec_config_file", value=config)]
    overrides += [Parameter(k, value=v) for k, v in parameters.items()]
    node = ros.add(MessageQueueNode(context=ros.context, namespace=namespace,
                                    parameter_overrides=overrides))
    ros.configure_and_activate(node)
    return node


def dispatch_node(ros, namespace: str, config: str, **parameters) -> PacketDispatchNode:
    overrides = [Parameter("codec_config_file", value=config)]
    overrides += [Parameter(k, value=v) for k, v in parameters.items()]
    node = ros.add(PacketDispatchNode(context=ros.context, namespace=namespace,
                                      parameter_overrides=overrides))
    ros.configure_and_activate(node)
    return node


def publisher(ros, msg_type, topic: str):
    pub = ros.helper.create_publisher(msg_type, topic, RELIABLE)
    assert ros.spin_until(lambda: pub.get_subscription_count() > 0, timeout=10.0), topic
    return pub


def collector(ros, msg_type, topic: str) -> list:
    received: list = []
    ros.helper.create_subscription(msg_type, topic, received.append, RELIABLE)
    return received


def request(client, ros, mini=72, data=0, **fields):
    req = GetNextPacketData.Request(num_miniframe_bytes=mini, num_dataframe_bytes=data, **fields)
    return ros.call(client, req)


def received_packet(src: int, dest: int, mini, data, minibytes_valid=(), databytes_valid=()):
    return ReceivedPacket(
        packet=Packet(src=src, dest=dest, packet_type=Packet.PACKET_TYPE_FDP,
                      miniframe_bytes=list(mini), dataframe_bytes=list(data)),
        minibytes_valid=list(minibytes_valid), databytes_valid=list(databytes_valid))
