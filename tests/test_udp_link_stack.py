"""The acomms stack over a narrow UDP link (issue 18): queue -> TDMA -> udp_link_driver -> UDP
(localhost, 9600 bit/s token bucket) -> udp_link_driver -> dispatch, two vehicles, ROS only.

A NavSatFix published on A's subscribe_topic comes out on B's publish_topic within the codec's
precision and a BatteryState goes back; the codecs, queue, MAC and dispatch are the ones the
acoustic stack uses, unchanged. Wall clock, short TDMA slots (an IP link has no propagation
delay worth a guard)."""

from __future__ import annotations

import os

import pytest
from ament_index_python.packages import get_package_share_directory
from rclpy.parameter import Parameter
from rclpy.qos import QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import BatteryState, NavSatFix

from acomms_core.nodes.message_queue_node import MessageQueueNode
from acomms_core.nodes.packet_dispatch_node import PacketDispatchNode
from acomms_core.nodes.tdma_node import TdmaNode
from acomms_core.ros.testing import RosHarness
from acomms_driver.udp.udp_link_driver import UdpLinkDriver

WAIT_S = 15.0
RELIABLE = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
CODEC_CONFIG = os.path.join(get_package_share_directory("acomms_core"), "config",
                            "example_codec_config.yaml")


def _add(ros, namespace, node_class, values):
    return ros.add(node_class(context=ros.context, namespace=namespace,
                              parameter_overrides=[Parameter(k, value=v)
                                                   for k, v in values.items()]))


def _publisher(ros, msg_type, topic):
    publisher = ros.helper.create_publisher(msg_type, topic, RELIABLE)
    assert ros.spin_until(lambda: publisher.get_subscription_count() > 0, WAIT_S), topic
    return publisher


def test_messages_cross_the_udp_link_both_ways():
    with RosHarness() as ros:
        drivers, stacks = {}, {}
        for name, src, slot in (("veh_a", 1, 0), ("veh_b", 2, 1)):
            drivers[name] = _add(ros, f"/{name}", UdpLinkDriver, {
                "SRC": src, "local_port": 0, "link_rate_bps": 9600.0,
                "remote_port": drivers["veh_a"].link.port if name == "veh_b" else 0})
            ros.configure_and_activate(drivers[name])
            stacks[name] = [
                _add(ros, f"/{name}", MessageQueueNode,
                     {"codec_config_file": CODEC_CONFIG, "src": src}),
                _add(ros, f"/{name}", PacketDispatchNode, {"codec_config_file": CODEC_CONFIG}),
                _add(ros, f"/{name}", TdmaNode, {
                    "num_slots": 2, "active_slots": slot, "slot_duration_seconds": 1.0,
                    "cycle_start_time": "0", "guard_time_seconds": 0.1,
                    "packet_length_seconds": 0.3, "tick_period_seconds": 0.05})]
        assert drivers["veh_a"].set_parameters([Parameter(
            "remote_port", value=drivers["veh_b"].link.port)])[0].successful
        for nodes in stacks.values():
            for node in nodes:
                ros.configure_and_activate(node)
        fixes, batteries = [], []
        ros.helper.create_subscription(NavSatFix, "/veh_b/from_acomms/gps_fix", fixes.append,
                                       RELIABLE)
        ros.helper.create_subscription(BatteryState, "/veh_a/from_acomms/battery",
                                       batteries.append, RELIABLE)
        fix = NavSatFix(latitude=41.512345678, longitude=-70.587654321, altitude=-12.34)
        battery = BatteryState(voltage=23.456, percentage=0.5)
        _publisher(ros, NavSatFix, "/veh_a/to_acomms/gps_fix").publish(fix)
        _publisher(ros, BatteryState, "/veh_b/to_acomms/battery").publish(battery)
        assert ros.spin_until(lambda: fixes and batteries, WAIT_S), (
            dict(drivers["veh_a"].link.counters), dict(drivers["veh_b"].link.counters))
        assert fixes[0].latitude == pytest.approx(fix.latitude, abs=0.5e-6 + 1e-9)
        assert fixes[0].altitude == pytest.approx(fix.altitude, abs=0.05 + 1e-9)
        assert batteries[0].voltage == pytest.approx(battery.voltage, abs=0.005 + 1e-5)
        for driver in drivers.values():
            assert driver.link.counters["packets_sent"] >= 1
            assert driver.counters["bad_requests"] == 0
