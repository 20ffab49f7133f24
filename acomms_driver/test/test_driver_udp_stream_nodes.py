"""udp_streamer -> udp_receiver through ROS: a large message crosses one-way UDP in silverhammer's
packet format and is republished whole; a bad message_type fails configure with a reason."""

from __future__ import annotations

from rclpy.lifecycle import TransitionCallbackReturn
from rclpy.parameter import Parameter
from std_msgs.msg import String

from acomms_core.ros.ros_support import lifecycle_state_label
from acomms_core.ros.testing import RosHarness
from acomms_driver.udp.stream_nodes import UdpReceiverNode, UdpStreamerNode

WAIT_S = 10.0


def _node(ros: RosHarness, cls, namespace: str, **values):
    return ros.add(cls(context=ros.context, namespace=namespace,
                       parameter_overrides=[Parameter(k, value=v) for k, v in values.items()]))


def test_a_large_message_crosses_and_is_republished():
    with RosHarness() as ros:
        receiver = _node(ros, UdpReceiverNode, "far", local_port=0, diagnostics_period_s=0.2)
        ros.configure_and_activate(receiver)
        streamer = _node(ros, UdpStreamerNode, "near", remote_port=receiver.port,
                         packet_bytes=500, packet_rate_hz=2000.0)
        ros.configure_and_activate(streamer)
        arrived = []
        ros.helper.create_subscription(String, "/far/stream", arrived.append, 10)
        publisher = ros.helper.create_publisher(String, "/near/stream", 10)
        text = "".join(chr(65 + i % 26) for i in range(20000))
        assert ros.spin_until(lambda: ros.helper.count_subscribers("/near/stream") > 0, WAIT_S)
        publisher.publish(String(data=text))
        assert ros.spin_until(lambda: arrived, WAIT_S), receiver.counters()
        assert arrived[0].data == text
        assert streamer.sender.counters["packets_sent"] >= 40  # 20 kB in 500-byte packets
        assert receiver.counters()["messages_published"] == 1
        # ManagedNode.WORKER: deactivate closes the worker, cleanup is safe afterwards
        sender = streamer.sender
        assert streamer.trigger_deactivate() == TransitionCallbackReturn.SUCCESS
        assert streamer.sender is None and sender._sock.fileno() == -1
        assert streamer.trigger_cleanup() == TransitionCallbackReturn.SUCCESS


def test_unknown_message_type_fails_configure():
    with RosHarness() as ros:
        node = _node(ros, UdpReceiverNode, "bad", message_type="no_pkg/msg/Nothing")
        assert node.trigger_configure() == TransitionCallbackReturn.FAILURE
        assert lifecycle_state_label(node) == "unconfigured"
