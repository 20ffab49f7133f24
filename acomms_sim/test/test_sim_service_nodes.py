"""sim_clock_node (warp + tick/tock), sim_transmission_loss_node, sim_packet_performance_node and
platform_location_node through their ROS interfaces."""

import math

import pytest
from builtin_interfaces.msg import Duration
from rclpy.parameter import Parameter
from rclpy.qos import QoSDurabilityPolicy, QoSProfile
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import NavSatFix

from acomms_core.ros.testing import RosHarness
from acomms_interfaces.msg import SoundSpeedProfile, Tick, Tock
from acomms_interfaces.srv import (
    GetOptimalTxDepth,
    GetPlatformLocation,
    SimPacketPerformance,
    SimTransmissionLoss,
)
from acomms_sim.nodes.platform_location_node import PlatformLocationNode
from acomms_sim.nodes.sim_clock_node import SimClockNode
from acomms_sim.nodes.sim_node_support import stamp_seconds
from acomms_sim.nodes.sim_packet_performance_node import SimPacketPerformanceNode
from acomms_sim.nodes.sim_transmission_loss_node import SimTransmissionLossNode
from acomms_sim.physics.geodesy import offset_position

ORIGIN = (41.5, -70.7)


def _params(**values):
    return [Parameter(k, value=v) for k, v in values.items()]


def test_tick_tock_advances_exactly_one_step_per_tick():
    with RosHarness() as ros:
        clocks, tocks = [], []
        ros.helper.create_subscription(Clock, "/clock", clocks.append, 10)
        latched = QoSProfile(depth=10, durability=QoSDurabilityPolicy.TRANSIENT_LOCAL)
        ros.helper.create_subscription(Tock, "/tock", tocks.append, latched)
        tick_pub = ros.helper.create_publisher(Tick, "/tick", 10)
        clock = ros.add(SimClockNode(context=ros.context, parameter_overrides=_params(
            mode="lockstep", start_time_s=50.0)))
        ros.configure_and_activate(clock)
        ros.spin_until(lambda: tick_pub.get_subscription_count() > 0, timeout=5.0)
        assert ros.spin_until(lambda: clocks, timeout=5.0)  # the initial time
        assert stamp_seconds(clocks[-1].clock) == pytest.approx(50.0)
        ros.spin_for(0.3)
        assert len(clocks) == 1  # no tick, no time
        for step in range(1, 4):
            tick_pub.publish(Tick(step_id=step, duration=Duration(sec=0, nanosec=250_000_000)))
            assert ros.spin_until(lambda step=step: len(tocks) == step, timeout=5.0)
            assert tocks[-1].step_id == step and tocks[-1].status == Tock.STATUS_OK
            assert stamp_seconds(tocks[-1].header.stamp) == pytest.approx(50.0 + 0.25 * step)
            assert ros.spin_until(lambda step=step: len(clocks) == step + 1, timeout=5.0)
            assert stamp_seconds(clocks[-1].clock) == pytest.approx(50.0 + 0.25 * step)
        # an out-of-sequence tick is executed but flagged
        tick_pub.publish(Tick(step_id=7, duration=Duration(sec=1)))
        assert ros.spin_until(lambda: len(tocks) == 4, timeout=5.0)
        assert tocks[-1].status & Tock.STATUS_SEQUENCING
        assert clock.steps == 4 and clock.sim_time_s == pytest.approx(51.75)


def test_free_running_clock_warp():
    with RosHarness() as ros:
        clock = ros.add(SimClockNode(context=ros.context, parameter_overrides=_params(
            warp_factor=20.0, publish_period_s=0.01)))
        ros.configure_and_activate(clock)
        clocks = []
        ros.helper.create_subscription(Clock, "/clock", clocks.append, 100)
        assert ros.spin_until(lambda: len(clocks) > 5, timeout=5.0)
        # The rate from the node's own wall anchor: exact whatever the load (a fixed 1 s window of
        # received stamps saw 4 sim s on a loaded CI machine, and 10 sim s in 0.3 s behind a
        # backlog); then /clock carries the advancing time.
        first_sim_s, first_wall_s = clock.sim_time_s, clock._wall_anchor
        ros.spin_for(1.0)
        rate = (clock.sim_time_s - first_sim_s) / (clock._wall_anchor - first_wall_s)
        assert rate == pytest.approx(20.0, rel=1e-6)
        assert ros.spin_until(lambda: stamp_seconds(clocks[-1].clock) > first_sim_s + 5.0,
                              timeout=5.0)
        assert not clock.set_parameters([Parameter("mode", value="sideways")])[0].successful
        assert clock.set_parameters([Parameter("warp_factor", value=1.0)])[0].successful


def test_transmission_loss_service_and_bad_input():
    with RosHarness() as ros:
        node = ros.add(SimTransmissionLossNode(context=ros.context, parameter_overrides=_params(
            spreading="spherical", absorption_model="thorp", sound_speed_mps=1500.0)))
        ros.configure_and_activate(node)
        client = ros.helper.create_client(SimTransmissionLoss, "sim_transmission_loss")
        lat, lon = offset_position(*ORIGIN, 1500.0, 0.0)
        request = SimTransmissionLoss.Request(
            src_latitude=ORIGIN[0], src_longitude=ORIGIN[1], src_depth=20.0,
            src_tx_level_db=185.0, center_frequency_hz=10000.0, bandwidth_hz=5000.0,
            rcv_latitude=lat, rcv_longitude=lon, rcv_depth=20.0)
        response = ros.call(client, request)
        assert stamp_seconds(response.transmission_delay) == pytest.approx(1.0, abs=1e-4)
        expected_tl = 20 * math.log10(1500) + 1.5 * 1.18703
        assert response.transmission_loss_db == pytest.approx(expected_tl, abs=0.01)
        assert response.rcv_rx_level_db == pytest.approx(185.0 - expected_tl, abs=0.01)
        # a sound speed profile changes the delay
        pub = ros.helper.create_publisher(SoundSpeedProfile, "sound_speed_profile", 10)
        pub.publish(SoundSpeedProfile(depths=[0.0, 100.0], sound_speeds=[1480.0, 1480.0]))
        assert ros.spin_until(lambda: node.profile is not None, timeout=5.0)
        response = ros.call(client, request)
        assert stamp_seconds(response.transmission_delay) == pytest.approx(1500 / 1480, abs=1e-4)
        # an empty profile is refused, the old one stays
        pub.publish(SoundSpeedProfile())
        assert ros.spin_until(lambda: node.errors["bad_sound_speed_profile"] == 1, timeout=5.0)
        # a position out of range: NaN answer, counted, node alive
        request.rcv_latitude = 123.0
        response = ros.call(client, request)
        assert math.isnan(response.rcv_rx_level_db)
        assert node.errors["sim_transmission_loss"] == 1
        # optimal depth: with spreading, the best source depth is the receiver's depth
        optimal = ros.helper.create_client(GetOptimalTxDepth, "get_optimal_tx_depth")
        response = ros.call(optimal, GetOptimalTxDepth.Request(
            src_latitude=ORIGIN[0], src_longitude=ORIGIN[1], src_min_depth=0.0,
            src_max_depth=400.0, src_tx_level_db=185.0, center_frequency_hz=10000.0,
            rcv_latitude=lat, rcv_longitude=lon, rcv_depth=200.0))
        assert response.optimal_tx_depth == pytest.approx(200.0)


def test_packet_performance_service():
    with RosHarness() as ros:
        node = ros.add(SimPacketPerformanceNode(context=ros.context,
                                                parameter_overrides=_params(seed=3)))
        ros.configure_and_activate(node)
        client = ros.helper.create_client(SimPacketPerformance, "sim_packet_performance")
        good = ros.call(client, SimPacketPerformance.Request(rx_level_db=120.0,
                                                             noise_level_db=100.0, packet_rate=5))
        assert good.packet_success and good.frame_error_probability == 0.0
        assert len(good.frame_success) == 8 and len(good.miniframe_success) == 1
        bad = ros.call(client, SimPacketPerformance.Request(rx_level_db=90.0,
                                                            noise_level_db=100.0, packet_rate=3))
        assert not bad.packet_success and bad.frame_error_probability == 1.0
        assert len(bad.frame_success) == 2
        unknown = ros.call(client, SimPacketPerformance.Request(rx_level_db=120.0,
                                                                noise_level_db=60.0,
                                                                packet_rate=11))
        assert not unknown.packet_success and math.isnan(unknown.frame_error_probability)
        assert node.errors["unknown_rate"] == 1


def test_platform_location_static_and_navsatfix():
    with RosHarness() as ros:
        node = ros.add(PlatformLocationNode(context=ros.context, parameter_overrides=_params(
            platform_names=["auv1", "ship"], latitudes=[41.5, 41.6],
            longitudes=[-70.7, -70.6], depths=[30.0, 2.0], position_topics=["", "/ship/fix"])))
        ros.configure_and_activate(node)
        client = ros.helper.create_client(GetPlatformLocation, "read_location")
        auv = ros.call(client, GetPlatformLocation.Request(name="auv1"))
        assert auv.valid and auv.latitude == 41.5 and auv.depth == pytest.approx(30.0)
        assert not ros.call(client, GetPlatformLocation.Request(name="ship")).valid  # no fix yet
        assert not ros.call(client, GetPlatformLocation.Request(name="nobody")).valid
        pub = ros.helper.create_publisher(NavSatFix, "/ship/fix", 10)
        pub.publish(NavSatFix(latitude=41.61, longitude=-70.61, altitude=-3.0))
        assert ros.spin_until(lambda: node.positions["ship"] is not None, timeout=5.0)
        ship = ros.call(client, GetPlatformLocation.Request(name="ship"))
        assert ship.valid and ship.latitude == 41.61 and ship.depth == pytest.approx(3.0)
        result = node.set_parameters([Parameter("latitudes", value=[95.0, 41.6])])[0]
        assert not result.successful and "latitude" in result.reason
