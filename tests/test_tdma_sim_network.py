"""Cross-package: TDMA MACs (acomms_core) driving simulated modems (acomms_sim) on sim time.

Three vehicles ~550 m apart, one slot each. With the default packet length (a full rate 1/5
packet from the rate table) and a guard time longer than the propagation delay, every packet a MAC
hands to its simulated modem reaches both other modems whole: no collisions, no bad frames.
"""

import collections
import time

import pytest
import rclpy
from builtin_interfaces.msg import Time
from rclpy.parameter import Parameter
from rosgraph_msgs.msg import Clock

from acomms_core.nodes.tdma_node import TdmaNode
from acomms_core.ros.testing import RosHarness
from acomms_interfaces.msg import ReceivedPacket
from acomms_interfaces.srv import GetNextPacketData

modem_sim_node = pytest.importorskip("acomms_sim.nodes.modem_sim_node")

SIM_TIME = [Parameter("use_sim_time", value=True)]
START = 1007.0  # 3 slots x 10 s: 1007 is 3 s before slot 1 of a cycle starts


def serve_full_packets(request, response):
    response.dest = 0
    response.miniframe_bytes = bytes([0x11] * request.num_miniframe_bytes)
    response.dataframe_bytes = bytes([0x22] * request.num_dataframe_bytes)
    response.num_messages = 1
    return response


def test_tdma_over_simulated_channel_delivers_every_packet_without_collisions():
    received = []
    with RosHarness() as ros:
        clock_publisher = ros.helper.create_publisher(Clock, "/clock", 10)
        macs, sim_nodes = [], []
        for index, namespace in enumerate(("/alpha", "/bravo", "/charlie")):
            queue = ros.add(rclpy.create_node("queue", namespace=namespace, context=ros.context))
            queue.create_service(GetNextPacketData, "get_next_packet_data", serve_full_packets)
            modem = ros.add(modem_sim_node.ModemSimNode(
                namespace=namespace, context=ros.context, parameter_overrides=SIM_TIME + [
                    Parameter("SRC", value=index + 1),
                    Parameter("latitude", value=41.5 + 0.005 * index),
                    Parameter("longitude", value=-70.6)]))
            ros.helper.create_subscription(
                ReceivedPacket, f"{namespace}/packet_rx",
                lambda msg, ns=namespace: received.append((ns, msg)), 100)
            mac = ros.add(TdmaNode(namespace=namespace, context=ros.context,
                                   parameter_overrides=SIM_TIME + [
                                       Parameter("num_slots", value=3),
                                       Parameter("slot_duration_seconds", value=10.0),
                                       Parameter("active_slots", value=index),
                                       Parameter("guard_time_seconds", value=2.0),
                                       Parameter("cycle_start_time", value="0"),
                                       Parameter("tick_period_seconds", value=0.5)]))
            sim_nodes += [modem, mac]
            macs.append(mac)

        def advance(t, wait_for_macs=True):
            target = round(t * 1e9)
            clock_publisher.publish(Clock(clock=Time(sec=target // 10**9,
                                                     nanosec=target % 10**9)))
            end = time.monotonic() + 5.0
            while time.monotonic() < end:
                clocks = all(n.get_clock().now().nanoseconds >= target for n in sim_nodes)
                ticked = all(m.idle and m.last_tick_time is not None
                             and round(m.last_tick_time * 1e9) == target for m in macs)
                if clocks and (ticked or not wait_for_macs):
                    return
                ros.executor.spin_once(timeout_sec=0.002)
                if not clocks:
                    clock_publisher.publish(Clock(clock=Time(sec=target // 10**9,
                                                             nanosec=target % 10**9)))
            raise AssertionError(f"sim time {t} did not settle")

        advance(START, wait_for_macs=False)
        for node in sim_nodes[0::2] + macs:
            ros.configure_and_activate(node)
        t = START
        while t < START + 92.5:  # three slots per MAC, then time for the last packets to arrive
            t += 0.5
            advance(t)
        ros.spin_for(0.5)
        sent = [mac.counters["packets_sent"] for mac in macs]

    assert sent == [3, 3, 3]
    heard = collections.Counter((ns, msg.packet.src) for ns, msg in received)
    assert heard == {(rx, tx): 3 for rx in ("/alpha", "/bravo", "/charlie")
                     for tx in (1, 2, 3) if rx != ("/alpha", "/bravo", "/charlie")[tx - 1]}
    for _, msg in received:
        assert msg.cst.bad_frames_num == 0
        assert len(msg.packet.dataframe_bytes) == 2048 and len(msg.packet.miniframe_bytes) == 72
