"""End to end over emulated Micromodems (issue 7): queue -> TDMA -> driver -> emulator -> simulated
channel -> emulator -> driver -> dispatch, between two vehicles, through ROS only.

Vehicle A (/veh_a, SRC 1) and vehicle B (/veh_b, SRC 2) each run message_queue_node,
packet_dispatch_node and tdma_node (2 slots: A in slot 0, B in slot 1) and an acomms_driver_node
connected over TCP to its own MicromodemModel. Both models sit on one SimChannelBackend, 750 m
apart with fixed ambient noise, so propagation delay, SNR and frame errors come from the channel
physics. Everything runs on the wall clock (the emulators' clock), so the MACs do too (no
use_sim_time); `airtime_scale` shortens the on-air time so a 2 x 3 s TDMA cycle suffices.

Proves: a NavSatFix published on A's subscribe_topic comes out on B's publish_topic equal within
the codec's precision, and a BatteryState goes the other way; B's ReceivedPacket carries a CST
whose SNR is the sonar equation's value; no driver, MAC or dispatch error counter moves.
"""

import math
import os

import pytest
from ament_index_python.packages import get_package_share_directory
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from rclpy.parameter import Parameter
from rclpy.qos import QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import BatteryState, NavSatFix

from acomms_core.nodes.message_queue_node import MessageQueueNode
from acomms_core.nodes.packet_dispatch_node import PacketDispatchNode
from acomms_core.nodes.tdma_node import TdmaNode
from acomms_core.ros.testing import RosHarness
from acomms_driver.nodes.acomms_driver_node import AcommsDriverNode
from acomms_interfaces.msg import ReceivedPacket, TransmittedPacket
from acomms_sim.emulator.channel_backend import SimChannelBackend
from acomms_sim.emulator.micromodem_emulator import TcpServer
from acomms_sim.emulator.micromodem_model import MicromodemModel
from acomms_sim.physics.absorption import thorp_db_per_km
from acomms_sim.physics.ambient_noise import AmbientNoise
from acomms_sim.physics.geodesy import offset_position
from acomms_sim.physics.sound_speed import SoundSpeedProfile
from acomms_sim.physics.transmission_loss import Propagation, SpreadingModel

ORIGIN = (41.5, -70.6)
RANGE_M = 750.0            # 0.5 s of propagation at 1500 m/s
DEPTH_M = 10.0
SOUND_SPEED_MPS = 1500.0
SOURCE_LEVEL_DB = 185.0
NOISE_DB = 70.0            # fixed in-band noise: SNR = 185 - TL(750 m) - 70 ~ 57 dB
AIRTIME_SCALE = 0.05       # a full rate 1/5 FDP packet: (1.574 + 3.1) s x 0.05 = 0.23 s on air
SLOT_S = 3.0
# Guard > propagation delay + on-air time (0.73 s): the far end has heard the whole packet
# before its own slot starts, with 0.77 s to spare for a late start on a busy machine.
GUARD_S = 1.5
PACKET_S = 0.5             # reserved on-air time per packet (>= the scaled 0.23 s)
WAIT_S = 25.0              # bounded waits: a cycle is 6 s; generous for a busy 2-core machine
OK_LEVEL = DiagnosticStatus.OK[0]
RELIABLE = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
CODEC_CONFIG = os.path.join(get_package_share_directory("acomms_core"), "config",
                            "example_codec_config.yaml")
# Driver / MAC counters that must stay at zero (absent from diagnostics = zero).
DRIVER_ERROR_COUNTERS = (
    "lines_bad_checksum", "lines_malformed", "lines_overlong", "connect_failures",
    "handshake_failures", "disconnects", "tx_refused_invalid", "tx_refused_queue_full",
    "tx_timeouts", "silence_timeouts", "unparseable_sentences", "pyacomms_errors",
    "rx_unconvertible", "rx_partial", "callback_errors", "bad_requests", "config_unconfirmed")
MAC_ERROR_COUNTERS = ("service_timeouts", "queue_errors", "dropped_packets",
                      "modem_unavailable", "modem_refused_packets", "late_responses")
DISPATCH_ERROR_COUNTERS = ("packets_unmatched", "unknown_ids", "checksum_failures",
                           "invalid_bytes", "decode_errors", "no_publish_topic")


class Vehicle:
    """One vehicle's stack: emulated modem on the channel, driver, queue, dispatch, TDMA MAC."""

    def __init__(self, ros, backend, name, src, north_m, active_slot, tmp_path):
        self.ros, self.namespace, self.src = ros, f"/{name}", src
        latitude, longitude = offset_position(*ORIGIN, north_m, 0.0)
        backend.set_position(src, latitude, longitude, DEPTH_M)
        self.modem = MicromodemModel(src, backend, airtime_scale=AIRTIME_SCALE)
        self.server = TcpServer(self.modem)
        self.server.start()
        self.driver = self._add(AcommsDriverNode, {
            "modem_connection_type": "tcp", "modem_remote_host": "127.0.0.1",
            "modem_remote_port": self.server.port, "modem_log_dir": str(tmp_path / name),
            "handshake_timeout_s": 5.0, "reconnect_initial_s": 0.1, "reconnect_max_s": 1.0,
            "diagnostics_period_s": 0.25, "pwramp_txlevel": 0})
        self.queue = self._add(MessageQueueNode, {"codec_config_file": CODEC_CONFIG, "src": src})
        self.dispatch = self._add(PacketDispatchNode, {"codec_config_file": CODEC_CONFIG})
        self.mac = self._add(TdmaNode, {
            "num_slots": 2, "active_slots": active_slot, "slot_duration_seconds": SLOT_S,
            "cycle_start_time": "0", "guard_time_seconds": GUARD_S,
            "packet_length_seconds": PACKET_S, "tick_period_seconds": 0.05,
            "service_timeout_seconds": 10.0})
        self.packets_rx, self.transmitted = [], []
        self.driver_status: dict[str, str] = {}
        self.driver_level = None
        ros.helper.create_subscription(ReceivedPacket, f"{self.namespace}/packet_rx",
                                       self.packets_rx.append, RELIABLE)
        ros.helper.create_subscription(TransmittedPacket, f"{self.namespace}/transmit",
                                       self.transmitted.append, RELIABLE)

    def _add(self, node_class, parameters):
        return self.ros.add(node_class(
            context=self.ros.context, namespace=self.namespace,
            parameter_overrides=[Parameter(k, value=v) for k, v in parameters.items()]))

    def on_diagnostics(self, msg: DiagnosticArray) -> None:
        for status in msg.status:
            if status.name.startswith(f"{self.namespace}/acomms_driver_node"):
                self.driver_status = {kv.key: kv.value for kv in status.values}
                level = status.level  # a `byte` field: bytes of length 1 in rclpy
                self.driver_level = level[0] if isinstance(level, bytes) else int(level)

    def inbox(self, msg_type, topic) -> list:
        received: list = []
        self.ros.helper.create_subscription(msg_type, f"{self.namespace}/{topic}",
                                            received.append, RELIABLE)
        return received

    def publisher(self, msg_type, topic):
        publisher = self.ros.helper.create_publisher(msg_type, f"{self.namespace}/{topic}",
                                                     RELIABLE)
        assert self.ros.spin_until(lambda: publisher.get_subscription_count() > 0, WAIT_S), \
            f"nobody subscribes {self.namespace}/{topic}"
        return publisher

    def close(self) -> None:
        self.server.close()
        self.modem.close()


@pytest.fixture
def channel():
    propagation = Propagation(SpreadingModel("spherical", "thorp"),
                              SoundSpeedProfile.constant(SOUND_SPEED_MPS))
    backend = SimChannelBackend(propagation, AmbientNoise("fixed", NOISE_DB),
                                source_level_db=SOURCE_LEVEL_DB, seed=11)
    yield backend
    backend.close()


def _stamp_s(stamp) -> float:
    return stamp.sec + stamp.nanosec * 1e-9


def test_messages_cross_the_emulated_acoustic_link_both_ways(channel, tmp_path):
    vehicles = []
    try:
        with RosHarness() as ros:
            veh_a = Vehicle(ros, channel, "veh_a", 1, 0.0, 0, tmp_path)
            vehicles.append(veh_a)
            veh_b = Vehicle(ros, channel, "veh_b", 2, RANGE_M, 1, tmp_path)
            vehicles.append(veh_b)
            ros.helper.create_subscription(
                DiagnosticArray, "/diagnostics",
                lambda msg: [v.on_diagnostics(msg) for v in vehicles], 50)
            # Bring-up in the bringup's order: modem driver, queue, dispatch, then the MAC.
            for vehicle in vehicles:
                ros.configure_and_activate(vehicle.driver)
            assert ros.spin_until(
                lambda: all(v.driver_status.get("connected") == "true"
                            and v.driver_status.get("modem_src") == str(v.src)
                            for v in vehicles), WAIT_S), [v.driver_status for v in vehicles]
            for vehicle in vehicles:
                for node in (vehicle.queue, vehicle.dispatch, vehicle.mac):
                    ros.configure_and_activate(node)

            fixes_at_b = veh_b.inbox(NavSatFix, "from_acomms/gps_fix")
            batteries_at_a = veh_a.inbox(BatteryState, "from_acomms/battery")
            fixes_at_a = veh_a.inbox(NavSatFix, "from_acomms/gps_fix")
            fix = NavSatFix(latitude=41.512345678, longitude=-70.587654321, altitude=-12.34)
            fix.header.stamp = ros.helper.get_clock().now().to_msg()
            fix.header.frame_id = "veh_a"
            battery = BatteryState(voltage=23.456, percentage=0.73,
                                   power_supply_status=BatteryState.POWER_SUPPLY_STATUS_DISCHARGING)
            veh_a.publisher(NavSatFix, "to_acomms/gps_fix").publish(fix)
            veh_b.publisher(BatteryState, "to_acomms/battery").publish(battery)

            assert ros.spin_until(lambda: fixes_at_b and batteries_at_a, WAIT_S), (
                f"fix at B: {len(fixes_at_b)}, battery at A: {len(batteries_at_a)}; "
                f"channel {dict(channel.counters)}; MAC A {dict(veh_a.mac.counters)}, "
                f"MAC B {dict(veh_b.mac.counters)}")
            # Let the diagnostics catch up with the last reception before reading counters.
            assert ros.spin_until(
                lambda: all(v.driver_status.get("rx_packets") == "1"
                            and v.driver_status.get("tx_sent") == "1" for v in vehicles),
                WAIT_S), [v.driver_status for v in vehicles]

            # A -> B: equal within the codec precision of example_codec_config.yaml
            got = fixes_at_b[0]
            assert len(fixes_at_b) == 1 and not fixes_at_a  # a modem never hears itself
            assert got.latitude == pytest.approx(fix.latitude, abs=0.5e-6 + 1e-9)
            assert got.longitude == pytest.approx(fix.longitude, abs=0.5e-6 + 1e-9)
            assert got.altitude == pytest.approx(fix.altitude, abs=0.05 + 1e-9)
            assert _stamp_s(got.header.stamp) == pytest.approx(_stamp_s(fix.header.stamp),
                                                               abs=0.05 + 1e-6)
            # B -> A
            back = batteries_at_a[0]
            assert len(batteries_at_a) == 1
            assert back.voltage == pytest.approx(battery.voltage, abs=0.005 + 1e-5)
            # linspace (7 bits over 0..1) quantizes down to the next of 128 steps
            assert battery.percentage - 1 / 127 - 1e-6 <= back.percentage <= battery.percentage
            assert back.power_supply_status == battery.power_supply_status

            # B's ReceivedPacket: from SRC 1 through the physics (SNR, travel time)
            assert len(veh_b.packets_rx) == 1 and len(veh_a.transmitted) == 1
            rx, tx = veh_b.packets_rx[0], veh_a.transmitted[0]
            assert rx.packet.src == 1 and rx.cst.src == 1 and rx.cst.mode == 0
            assert rx.cst.bad_frames_num == 0
            expected_snr = (SOURCE_LEVEL_DB - 20 * math.log10(RANGE_M)
                            - thorp_db_per_km(25.0) * RANGE_M / 1000.0 - NOISE_DB)
            assert math.isfinite(rx.cst.snr_in) and rx.cst.snr_in > 0
            assert rx.cst.snr_in == pytest.approx(expected_snr, abs=0.2)
            travel_s = _stamp_s(rx.cst.toa) - _stamp_s(tx.xst.time)
            assert travel_s == pytest.approx(RANGE_M / SOUND_SPEED_MPS, abs=0.02)
            assert bytes(rx.packet.miniframe_bytes) == bytes(tx.packet.miniframe_bytes)
            assert bytes(rx.packet.dataframe_bytes) == bytes(tx.packet.dataframe_bytes)
            assert veh_a.packets_rx[0].packet.src == 2 and veh_a.packets_rx[0].cst.snr_in > 0

            # Health: no error anywhere along the path
            for vehicle in vehicles:
                status = vehicle.driver_status
                assert vehicle.driver_level == OK_LEVEL, status
                assert status["connected"] == "true" and status["connects"] == "1"
                assert status["tx_queue_length"] == "0"
                errors = {k: status[k] for k in DRIVER_ERROR_COUNTERS
                          if status.get(k, "0") != "0"}
                assert errors == {}, f"{vehicle.namespace} driver: {errors}"
                assert vehicle.mac.counters["packets_sent"] == 1
                errors = {k: vehicle.mac.counters[k] for k in MAC_ERROR_COUNTERS
                          if vehicle.mac.counters[k]}
                assert errors == {}, f"{vehicle.namespace} MAC: {errors}"
                counts = vehicle.dispatch.counts
                assert counts["packets_received"] == 1 and counts["messages_published"] == 1
                errors = {k: counts[k] for k in DISPATCH_ERROR_COUNTERS if counts[k]}
                assert errors == {}, f"{vehicle.namespace} dispatch: {errors}"
            assert channel.counters["received"] == 2 and channel.counters["transmissions"] == 2
            assert set(channel.counters) == {"received", "transmissions"}, channel.counters
    finally:
        for vehicle in vehicles:
            vehicle.close()
