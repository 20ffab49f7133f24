"""modem_sim_node through its ROS interface, on deterministic sim time (/clock from the test)."""

import pytest
from rclpy.parameter import Parameter
from rosgraph_msgs.msg import Clock

from acomms_core.ros.testing import RosHarness
from acomms_interfaces.msg import Packet, ReceivedPacket, TransmittedPacket
from acomms_interfaces.srv import PingModem, QueueTxPacket
from acomms_sim.nodes.modem_sim_node import ModemSimNode
from acomms_sim.nodes.sim_node_support import seconds_to_time_msg, stamp_seconds
from acomms_sim.physics.geodesy import offset_position
from acomms_sim.physics.packet_performance import packet_duration_s

ORIGIN = (41.5, -70.7)


class SimWorld:
    """A RosHarness plus a /clock the test advances by hand."""

    def __init__(self, ros: RosHarness):
        self.ros = ros
        self.clock_pub = ros.helper.create_publisher(Clock, "/clock", 10)
        self.now = 0.0
        self.modems = {}
        self.rx = {}
        self.tx = {}

    def add_modem(self, name, src, north_m, **params):
        lat, lon = offset_position(*ORIGIN, north_m, 0.0)
        values = {"SRC": src, "latitude": lat, "longitude": lon, "depth": 20.0,
                  "sound_speed_mps": 1500.0, "ambient_noise_model": "fixed",
                  "ambient_noise_db": 50.0, "event_period_s": 0.05, **params}
        overrides = [Parameter("use_sim_time", value=True)]
        overrides += [Parameter(k, value=v) for k, v in values.items()]
        node = self.ros.add(ModemSimNode(context=self.ros.context, namespace=name,
                                         parameter_overrides=overrides))
        self.ros.configure_and_activate(node)
        self.modems[name] = node
        self.rx[name], self.tx[name] = [], []
        self.ros.helper.create_subscription(ReceivedPacket, f"/{name}/packet_rx",
                                            self.rx[name].append, 10)
        self.ros.helper.create_subscription(TransmittedPacket, f"/{name}/transmit",
                                            self.tx[name].append, 10)
        return node

    def set_time(self, t):
        self.now = t
        self.clock_pub.publish(Clock(clock=seconds_to_time_msg(t)))
        target = int(round(t * 1e9))
        assert self.ros.spin_until(lambda: all(
            abs(m.get_clock().now().nanoseconds - target) < 1000 for m in self.modems.values()),
            timeout=5.0)
        self.ros.spin_for(0.02)

    def advance_until(self, predicate, until, step=0.05):
        while self.now < until:
            if predicate():
                return True
            self.set_time(round(self.now + step, 6))
        return predicate()

    def queue(self, name, packet, timeout=5.0, **fields):
        client = self.ros.helper.create_client(QueueTxPacket, f"/{name}/queue_tx_packet")
        request = QueueTxPacket.Request(packet=packet, queue=1, **fields)
        return self.ros.call(client, request, timeout=timeout)


def fdp_packet(dest=2, rate=1, mini=10, data=100):
    return Packet(src=0, dest=dest, packet_type=Packet.PACKET_TYPE_FDP, miniframe_rate=rate,
                  dataframe_rate=rate, miniframe_bytes=bytes(range(mini)),
                  dataframe_bytes=bytes(i % 256 for i in range(data)))


@pytest.fixture
def world():
    with RosHarness() as ros:
        w = SimWorld(ros)
        yield w


def test_packet_arrives_range_over_speed_plus_duration_after_transmit(world):
    world.add_modem("a", 1, 0.0)
    world.add_modem("b", 2, 1500.0)
    world.set_time(100.0)
    response = world.queue("a", fdp_packet())
    # no level requested or configured: the profile's for txlevel 3 in the 10 kHz band
    assert response.success and response.actual_src_level_db == pytest.approx(165.0)
    assert world.ros.spin_until(lambda: world.tx["a"], timeout=5.0)
    assert stamp_seconds(world.tx["a"][0].xst.time) == pytest.approx(100.0)
    duration = packet_duration_s(True, 1, 1, 10, 100)
    # not yet reported just before the whole packet has arrived
    world.advance_until(lambda: world.rx["b"], until=100.0 + 1.0 + duration - 0.1)
    assert world.rx["b"] == []
    assert world.advance_until(lambda: world.rx["b"], until=100.0 + 1.0 + duration + 1.0)
    received = world.rx["b"][0]
    published_at = stamp_seconds(received.header.stamp)
    assert 101.0 + duration <= published_at <= 101.0 + duration + 0.1
    assert stamp_seconds(received.cst.toa) == pytest.approx(101.0, abs=1e-3)
    assert bytes(received.packet.dataframe_bytes) == bytes(i % 256 for i in range(100))
    assert received.packet.src == 1 and received.cst.mode == 0
    assert list(received.databytes_valid) == [0, 100]
    assert received.cst.snr_in > 30  # 165 dB - ~65 dB TL - 50 dB noise
    assert world.rx["a"] == []  # a modem does not hear itself


def test_half_duplex_and_bad_input(world):
    world.add_modem("a", 1, 0.0)
    b = world.add_modem("b", 2, 1500.0)
    world.set_time(10.0)
    # unknown rate and oversize payloads: clear refusal, node keeps running
    assert not world.queue("a", fdp_packet(rate=9)).success
    assert not world.queue("a", fdp_packet(data=5000)).success
    assert world.modems["a"].counters["tx_refused_bad_packet"] == 2
    assert world.queue("a", fdp_packet()).success
    world.set_time(10.5)
    assert world.queue("b", fdp_packet(dest=1)).success  # b transmits while a's packet arrives
    world.advance_until(lambda: False, until=20.0, step=0.25)
    assert world.rx["b"] == [] and world.rx["a"] == []  # both lost: each was transmitting
    assert b.counters["rx_half_duplex"] == 1
    assert world.modems["a"].counters["rx_half_duplex"] == 1


def test_collision_and_out_of_band(world):
    world.add_modem("a", 1, 0.0)
    world.add_modem("near", 2, 500.0)
    world.add_modem("far", 3, 4000.0)
    world.add_modem("other_band", 4, 300.0, center_frequency_hz=25000.0)
    world.set_time(10.0)
    # both at once: near arrives 10.33..15.0 s, far 12.67..17.3 s (overlapping), ~22 dB weaker
    assert world.queue("near", fdp_packet(dest=1)).success
    assert world.queue("far", fdp_packet(dest=1)).success
    assert world.queue("other_band", fdp_packet(dest=1)).success
    world.advance_until(lambda: False, until=25.0, step=0.25)
    a = world.modems["a"]
    sources = [m.packet.src for m in world.rx["a"]]
    assert sources == [2]  # near decoded despite the far one; far lost in the collision
    assert a.channel.counters.collisions == 2
    assert a.channel.counters.out_of_band == 1
    # the receiver was locked onto the near packet when the far one arrived
    assert a.counters["rx_busy"] == 1 and a.channel.counters.busy == 1


def test_ping_reports_owtt(world):
    world.add_modem("a", 1, 0.0)
    world.add_modem("b", 2, 1500.0)
    world.set_time(5.0)
    client = world.ros.helper.create_client(PingModem, "/a/ping_modem")
    assert client.wait_for_service(timeout_sec=5.0)
    future = client.call_async(PingModem.Request(dest=2, rate=1, timeout_sec=20.0))
    assert world.advance_until(future.done, until=20.0, step=0.1)
    response = future.result()
    assert not response.timed_out
    assert response.one_way_travel_time == pytest.approx(1.0, abs=1e-3)


def test_runtime_parameter_and_bad_values(world):
    a = world.add_modem("a", 1, 0.0)
    result = a.set_parameters([Parameter("ambient_noise_model", value="loud")])[0]
    assert not result.successful and "ambient_noise_model" in result.reason
    assert a.set_parameters([Parameter("ambient_noise_db", value=90.0)])[0].successful
    assert a.channel.noise.band_level_db(10000, 5000) == 90.0
    assert not a.set_parameters([Parameter("latitude", value=95.0)])[0].successful


def test_location_from_platform_location_service(world):
    from acomms_sim.nodes.platform_location_node import PlatformLocationNode

    lat, lon = offset_position(*ORIGIN, 3000.0, 0.0)
    locator = world.ros.add(PlatformLocationNode(
        context=world.ros.context, namespace="c", parameter_overrides=[
            Parameter("platform_names", value=["c"]), Parameter("latitudes", value=[lat]),
            Parameter("longitudes", value=[lon]), Parameter("depths", value=[20.0]),
            Parameter("position_topics", value=[""])]))
    world.ros.configure_and_activate(locator)
    world.add_modem("a", 1, 0.0)
    c = world.add_modem("c", 3, 0.0, location_source="service", location_period_s=0.5)
    assert world.advance_until(lambda: c.position is not None, until=5.0, step=0.25)
    assert c.position[0] == pytest.approx(lat)
    assert world.queue("a", fdp_packet(dest=3)).success
    assert world.advance_until(lambda: world.rx["c"], until=world.now + 10.0)
    assert stamp_seconds(world.rx["c"][0].cst.toa) - stamp_seconds(
        world.tx["a"][0].xst.time) == pytest.approx(2.0, abs=1e-3)
