"""message_queue_node's fragment ack timeout: automatic by default, an explicit value honoured
(issue 26). Sim time; the test plays the MAC, asking for packets in a 90 s TDMA cycle, and the
receiver, whose acks are all lost."""

from __future__ import annotations

from core_ros_helpers import publisher, queue_node, request
from fragmentation_support import text_of, write_config
from rclpy.lifecycle import TransitionCallbackReturn
from std_msgs.msg import String
from tdma_test_support import SIM_TIME, SimClock, get_parameters, param_client, set_parameters

from acomms_core.fragmentation.ack_timeout import AUTO_CYCLES
from acomms_core.ros.testing import RosHarness
from acomms_interfaces.srv import GetNextPacketData

START_S = 1000.0
CYCLE_S = 90.0
SLOT_OFFSETS = (0.0, 10.0, 20.0)     # three packets in this vehicle's slot


def _slot(ros, clock, client, k: int) -> int:
    """The MAC's requests in the slot of cycle k; the number of packets the queue filled."""
    filled = 0
    for offset in SLOT_OFFSETS:
        clock.set(START_S + k * CYCLE_S + offset)
        filled += request(client, ros, 72, 192).num_messages > 0
    return filled


def _restart(ros, node) -> None:
    """Fragmentation parameters are read at configure."""
    assert node.trigger_deactivate() == TransitionCallbackReturn.SUCCESS
    assert node.trigger_cleanup() == TransitionCallbackReturn.SUCCESS
    ros.configure_and_activate(node)


def _send_large(ros, pub, node, text: str) -> None:
    pub.publish(String(data=text))
    assert ros.spin_until(lambda: node.queues.fragmentation.fragmenter.sessions, 10.0)


def _timeouts(node) -> int:
    return node.queues.fragmentation.counters()["fragment_ack_timeouts"]


def test_ack_timeout_is_automatic_by_default_and_an_explicit_value_wins(tmp_path):
    text = text_of(6000, 3)    # more blocks than three slots of packets carry
    with RosHarness() as ros:
        clock = SimClock(ros, START_S)
        node = clock.watch(queue_node(ros, "/auv1", write_config(tmp_path), src=1,
                                      **{p.name: p.value for p in SIM_TIME}))
        clock.start()
        params = param_client(ros, "/auv1/message_queue_node")
        client = ros.helper.create_client(GetNextPacketData, "/auv1/get_next_packet_data")
        pub = publisher(ros, String, "/auv1/blob")
        assert get_parameters(ros, params, "fragment_ack_timeout_s") == [0.0]
        for k in range(3):                       # the MAC's requests before the message
            _slot(ros, clock, client, k)
        fragmenter = node.queues.fragmentation.fragmenter
        assert fragmenter.ack_timeout_s() == AUTO_CYCLES * CYCLE_S
        _send_large(ros, pub, node, text)
        assert _slot(ros, clock, client, 3) == len(SLOT_OFFSETS)
        for k in range(4, 3 + int(AUTO_CYCLES)):     # the receiver's next slots: waits
            assert _slot(ros, clock, client, k) and _timeouts(node) == 0
        _slot(ros, clock, client, 3 + int(AUTO_CYCLES))
        assert _timeouts(node) >= 1              # AUTO_CYCLES cycles without an ack: resent

        assert not set_parameters(ros, params, fragment_ack_timeout_s=-1.0)[0].successful
        assert set_parameters(ros, params, fragment_ack_timeout_s=45.0)[0].successful
        _restart(ros, node)
        assert node.queues.fragmentation.fragmenter.ack_timeout_s() == 45.0
        _send_large(ros, pub, node, text)
        _slot(ros, clock, client, 8)
        _slot(ros, clock, client, 9)
        assert _timeouts(node) == 1              # 90 s > 45 s: resent a cycle later
