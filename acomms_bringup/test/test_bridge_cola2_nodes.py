"""cola2 vehicle and topside bridges through their ROS interfaces, both directions, both wire
modes. The test plays the MAC (get_next_packet_data) and the modem (packet_rx) for byte-exact
mode, and the codec link (encode, decode with config/cola2_codecs.yaml) for compact mode."""

import math
import pathlib
import struct

import pytest
import yaml
from bitstring import ConstBitStream
from rclpy.parameter import Parameter
from sensor_msgs.msg import NavSatFix
from std_msgs.msg import Float64, Int32, UInt8MultiArray
from std_srvs.srv import Trigger

from acomms_bringup.bridges.cola2_topside_bridge import Cola2TopsideBridge
from acomms_bringup.bridges.cola2_vehicle_bridge import Cola2VehicleBridge
from acomms_core.codecs import MessageCodec
from acomms_core.ros.testing import RosHarness
from acomms_interfaces.msg import Cola2UsblFix, Cola2VehicleStatus, Packet, ReceivedPacket
from acomms_interfaces.srv import GetNextPacketData

CONFIG = pathlib.Path(__file__).resolve().parents[1] / "config" / "cola2_codecs.yaml"
F32 = struct.Struct("<f")


def f32(x):
    return F32.unpack(F32.pack(x))[0]


class Bench:
    """Both bridges in one harness with the topics a test needs."""

    def __init__(self, ros, mode, byte_order="little"):
        common = [Parameter("wire_mode", value=mode), Parameter("period_s", value=0.1),
                  Parameter("byte_order", value=byte_order)]
        self.ros, h = ros, ros.helper
        self.triggered = []
        h.create_service(Trigger, "/auv/start_mission", self._trigger)
        self.vehicle = ros.add(Cola2VehicleBridge(
            context=ros.context, namespace="/auv", parameter_overrides=common + [
                Parameter("remote_address", value=3),
                Parameter("command_services", value=["4:/auv/start_mission"])]))
        self.topside = ros.add(Cola2TopsideBridge(
            context=ros.context, namespace="/ship",
            parameter_overrides=common + [Parameter("remote_address", value=1),
                                          Parameter("command_repeats", value=1000)]))
        self.got = {}
        for topic, cls in (("/auv/usbl_update", NavSatFix), ("/auv/usbl_command", Int32),
                           ("/auv/custom_output", UInt8MultiArray),
                           ("/ship/vehicle_fix", NavSatFix), ("/ship/vehicle_heading", Float64),
                           ("/ship/vehicle_status_code", Int32),
                           ("/ship/custom_output", UInt8MultiArray),
                           ("/auv/to_acomms/cola2_status", Cola2VehicleStatus),
                           ("/ship/to_acomms/cola2_usbl", Cola2UsblFix)):
            h.create_subscription(cls, topic, lambda m, t=topic: self.got.__setitem__(t, m), 10)
        self.pub = {t: h.create_publisher(c, t, 10) for t, c in (
            ("/auv/navigation/fix", NavSatFix), ("/auv/navigation/heading", Float64),
            ("/auv/safety_status", Int32), ("/auv/custom_input", UInt8MultiArray),
            ("/ship/usbl/fix", NavSatFix), ("/ship/usbl/command", Int32),
            ("/ship/packet_rx", ReceivedPacket), ("/auv/packet_rx", ReceivedPacket),
            ("/ship/from_acomms/cola2_status", Cola2VehicleStatus),
            ("/auv/from_acomms/cola2_usbl", Cola2UsblFix))}
        ros.configure_and_activate(self.vehicle)
        ros.configure_and_activate(self.topside)

    def _trigger(self, request, response):
        self.triggered.append(True)
        response.success = True
        return response

    def publish_vehicle_inputs(self):
        fix = NavSatFix(latitude=41.98571234, longitude=3.02912345, altitude=-12.5)
        fix.header.stamp.sec, fix.header.stamp.nanosec = 1_763_900_000, 250_000_000
        self.pub["/auv/navigation/fix"].publish(fix)
        self.pub["/auv/navigation/heading"].publish(Float64(data=271.3))
        self.pub["/auv/safety_status"].publish(Int32(data=17))
        self.pub["/auv/custom_input"].publish(UInt8MultiArray(data=[9, 8, 7]))

    def publish_topside_inputs(self):
        fix = NavSatFix(latitude=41.9856, longitude=3.0292, altitude=-11.75)
        fix.header.stamp.sec = 1_763_900_010
        fix.position_covariance = [4.0, 0, 0, 0, 2.25, 0, 0, 0, 1.0]
        fix.position_covariance_type = NavSatFix.COVARIANCE_TYPE_DIAGONAL_KNOWN
        self.pub["/ship/usbl/fix"].publish(fix)
        self.pub["/ship/usbl/command"].publish(Int32(data=4))

    def take_packet(self, node, namespace, expected):
        """Play the MAC: ask the bridge for its packet once it is the expected one (the latest
        struct replaces one still waiting, so earlier ones may lack inputs)."""
        assert self.ros.spin_until(lambda: node.link.pending == expected, timeout=10.0), \
            (node.link.pending, expected)
        client = self.ros.helper.create_client(GetNextPacketData,
                                               f"{namespace}/get_next_packet_data")
        response = self.ros.call(client, GetNextPacketData.Request(
            num_miniframe_bytes=32, num_dataframe_bytes=64), timeout=10.0)
        assert response.num_messages == 1
        return response.dest, bytes(response.dataframe_bytes)

    def wait(self, *topics):
        assert self.ros.spin_until(lambda: all(t in self.got for t in topics), timeout=10.0), \
            f"missing {[t for t in topics if t not in self.got]}"


def test_byte_exact_both_directions_are_the_hand_built_struct():
    with RosHarness() as ros:
        bench = Bench(ros, "byte_exact", byte_order="big")
        bench.publish_vehicle_inputs()
        golden = struct.pack(">cdddffi", b"S", 1_763_900_000.25, 41.98571234, 3.02912345, 12.5,
                             math.radians(271.3), 17) + bytes([9, 8, 7])
        dest, payload = bench.take_packet(bench.vehicle, "/auv", golden)
        assert dest == 3 and payload == golden
        bench.pub["/ship/packet_rx"].publish(ReceivedPacket(packet=Packet(
            src=1, dest=3, dataframe_bytes=list(payload))))
        bench.wait("/ship/vehicle_fix", "/ship/vehicle_heading", "/ship/vehicle_status_code",
                   "/ship/custom_output")
        assert bench.got["/ship/vehicle_fix"].latitude == 41.98571234
        assert bench.got["/ship/vehicle_fix"].altitude == pytest.approx(-12.5)
        assert bench.got["/ship/vehicle_heading"].data == pytest.approx(271.3, abs=1e-4)
        assert bench.got["/ship/vehicle_status_code"].data == 17
        assert bytes(bench.got["/ship/custom_output"].data) == bytes([9, 8, 7])

        bench.publish_topside_inputs()
        golden = struct.pack(">cdddffi", b"U", 1_763_900_010.0, 41.9856, 3.0292, 11.75, 2.0, 4)
        dest, payload = bench.take_packet(bench.topside, "/ship", golden)
        assert dest == 1 and payload == golden
        bench.pub["/auv/packet_rx"].publish(ReceivedPacket(packet=Packet(
            src=3, dest=1, dataframe_bytes=list(payload))))
        bench.wait("/auv/usbl_update", "/auv/usbl_command")
        fix = bench.got["/auv/usbl_update"]
        assert (fix.latitude, fix.longitude, fix.altitude) == (41.9856, 3.0292, -11.75)
        assert list(fix.position_covariance)[::4] == [4.0, 4.0, 4.0]   # accuracy 2 m
        assert bench.got["/auv/usbl_command"].data == 4
        assert ros.spin_until(lambda: bench.triggered, timeout=10.0)   # command 4's service
        # A payload from the wrong sender is refused and counted, never published.
        bench.pub["/auv/packet_rx"].publish(ReceivedPacket(packet=Packet(
            src=3, dest=1, dataframe_bytes=list(golden.replace(b"U", b"S", 1)))))
        assert ros.spin_until(lambda: bench.vehicle.counts["packets_rejected"] == 1, 10.0)


def _relay(bench, source, target, ros_id, cls, ready):
    """Encode the source's latest message once ready(msg), decode it onto the target topic."""
    entry = next(m for m in yaml.safe_load(CONFIG.read_text())[0]["message_codecs"]
                 if m["id"] == ros_id)
    codec = MessageCodec(cls, entry["fields"])
    assert bench.ros.spin_until(lambda: source in bench.got and ready(bench.got[source]),
                                timeout=10.0)
    bits, _ = codec.encode(bench.got[source])
    bench.pub[target].publish(codec.decode(ConstBitStream(bits)))
    return len(bits)


def test_compact_both_directions_through_the_codec_config():
    with RosHarness() as ros:
        bench = Bench(ros, "compact")
        bench.publish_vehicle_inputs()
        bits = _relay(bench, "/auv/to_acomms/cola2_status", "/ship/from_acomms/cola2_status",
                      40, Cola2VehicleStatus, lambda m: m.status_code == 17 and len(m.custom) == 3
                      and m.heading_deg > 0)
        assert 118 + 32 + 3 * 8 < bits <= 118 + 32 + 8 + 3 * 8   # + length prefix
        bench.wait("/ship/vehicle_fix", "/ship/vehicle_heading", "/ship/vehicle_status_code")
        assert bench.got["/ship/vehicle_fix"].latitude == pytest.approx(41.98571234, abs=5e-7)
        assert bench.got["/ship/vehicle_fix"].altitude == pytest.approx(-12.5, abs=0.005)
        assert bench.got["/ship/vehicle_heading"].data == pytest.approx(271.3, abs=0.05)
        assert bench.got["/ship/vehicle_status_code"].data == 17

        bench.publish_topside_inputs()
        _relay(bench, "/ship/to_acomms/cola2_usbl", "/auv/from_acomms/cola2_usbl", 41,
               Cola2UsblFix, lambda m: m.command == 4 and m.accuracy_m > 0)
        bench.wait("/auv/usbl_update", "/auv/usbl_command")
        assert bench.got["/auv/usbl_update"].position_covariance[0] == pytest.approx(4.0, abs=0.03)
        assert bench.got["/auv/usbl_command"].data == 4
        assert bench.vehicle.counts["compact_received"] == 1
