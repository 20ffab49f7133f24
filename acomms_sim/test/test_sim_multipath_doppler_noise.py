"""Issue 14 (rest): sender-motion Doppler, multipath delay spread + ISI, the ambient_noise topic."""

import math

import numpy as np
import pytest
from diagnostic_msgs.msg import DiagnosticArray
from rclpy.parameter import Parameter
from std_msgs.msg import Float32
from test_sim_modem_node import SimWorld, fdp_packet

from acomms_core.ros.testing import RosHarness
from acomms_interfaces.msg import SimReceptionEvent
from acomms_sim.modem.fields import ModemPacket, ReceptionEvent
from acomms_sim.modem.sim_modem import SimModem, SimModemConfig
from acomms_sim.nodes import sim_modem_messages as messages
from acomms_sim.nodes.simple_noise_model_node import SimpleNoiseModelNode
from acomms_sim.physics import geodesy, multipath
from acomms_sim.physics.ambient_noise import AmbientNoise, RandomNoiseLevels
from acomms_sim.physics.sound_speed import SoundSpeedProfile
from acomms_sim.physics.transmission_loss import Propagation, SpreadingModel

ORIGIN = (41.5, -70.7)


def modem(src, north_m, spread_s=0.0, noise_db=50.0, **config):
    propagation = Propagation(SpreadingModel("spherical", "thorp", delay_spread_s=spread_s),
                              SoundSpeedProfile.constant(1500.0))
    m = SimModem(SimModemConfig(src, **config), propagation, AmbientNoise("fixed", noise_db))
    m.set_position(*geodesy.offset_position(*ORIGIN, north_m, 0.0), 20.0)
    return m


def move(m, north_from, north_to, east=0.0):
    """Two timed positions 1 s apart: velocity (east, north_to - north_from, 0) m/s."""
    m.set_position(*geodesy.offset_position(*ORIGIN, north_from, 0.0), 20.0, time_s=0.0)
    m.set_position(*geodesy.offset_position(*ORIGIN, north_to, east), 20.0, time_s=1.0)


def send(sender, receiver, packet=None, t=10.0, through_message=True):
    packet = packet or ModemPacket(0, receiver.config.src, 3, 1, 1, b"\x01", bytes(40))
    sender._busy_until_s = -math.inf
    started = sender.queue_packet(packet, t)
    channel_packet = started.events[0].channel_packet
    if through_message:  # the SimPacket message carries the sender's velocity
        channel_packet = messages.sim_packet_from_msg(messages.sim_packet_to_msg(channel_packet))
    receiver.channel.arrivals.clear()
    receiver.on_channel_packet(channel_packet, t)
    (arrival,) = receiver.channel.arrivals
    return arrival, receiver.advance(t + 100.0)


# ---- Doppler: both radial velocities --------------------------------------------------------
def test_sender_velocity_travels_in_the_sim_packet_and_combines_with_the_receivers():
    """Receiver 1000 m north of the sender. Sender moving north (towards it) at 3 m/s: dop 3;
    receiver also moving south at 2 m/s: 5; sender moving east at 4 m/s, now 4 m east of the
    line: only the radial part, 4·(-4/1000) = -0.016; sender moving away: -3. Compression
    (1 - v/c) of the packet on the water follows."""
    cases = [((3.0, 0.0), None, 3.0), ((3.0, 0.0), -2.0, 5.0), ((0.0, 4.0), None, -0.016),
             ((-3.0, 0.0), None, -3.0)]
    for (north, east), receiver_north, expect in cases:
        sender, receiver = modem(1, 0.0), modem(2, 1000.0)
        move(sender, -north, 0.0, east)
        if receiver_north is not None:
            move(receiver, 1000.0 - receiver_north, 1000.0)
        arrival, events = send(sender, receiver)
        assert arrival.doppler_mps == pytest.approx(expect, abs=2e-3)
        duration = arrival.transmission.duration_s
        assert arrival.end_s - arrival.start_s == pytest.approx(
            duration * (1 - expect / 1500.0), rel=1e-6)
        (event,) = [e for e in events if isinstance(e, ReceptionEvent)]
        assert event.doppler_mps == pytest.approx(expect, abs=2e-3)


def test_sender_doppler_beyond_the_tolerance_fails_the_frames():
    sender, receiver = modem(1, 0.0), modem(2, 1000.0, doppler_tolerance_mps=2.0)
    move(sender, -3.0, 0.0)  # receiver stationary: only the sender moves
    _arrival, events = send(sender, receiver)
    (event,) = [e for e in events if isinstance(e, ReceptionEvent)]
    assert event.outcome == "frame_errors" and event.num_bad_frames == event.num_frames


# ---- multipath: exponential delay profile and ISI -------------------------------------------
def test_exponential_profile_numbers():
    """p(t) = exp(-t/tau)/tau: its RMS delay spread is tau (numerical integral), the share of
    power beyond T is exp(-T/tau), and the signal-to-ISI ceiling at tau = T is
    10 log10((1 - 1/e) / (1/e)) = 2.351 dB."""
    tau = 0.012
    t = np.linspace(0.0, 40 * tau, 400001)
    p = np.exp(-t / tau) / tau
    mean = np.trapezoid(t * p, t)
    rms = math.sqrt(np.trapezoid((t - mean) ** 2 * p, t))
    assert rms == pytest.approx(tau, rel=1e-4)
    tolerance = 0.02
    assert multipath.late_power_fraction(tau, tolerance) == pytest.approx(
        np.trapezoid(p[t >= tolerance], t[t >= tolerance]), rel=1e-3)
    assert multipath.sinr_with_isi_db(1.0, 0.0, multipath.late_power_fraction(0.01, 0.01)) == (
        pytest.approx(2.351, abs=1e-3))
    # with noise: S = 100 N, f = exp(-2) -> 10 log10(100 (1 - f) / (1 + 100 f))
    f = math.exp(-2.0)
    assert multipath.sinr_with_isi_db(100.0, 1.0, f) == pytest.approx(
        10 * math.log10(100 * (1 - f) / (1 + 100 * f)))
    assert multipath.late_power_fraction(0.0, 0.01) == 0.0  # one path: no ISI
    assert multipath.late_power_fraction(0.01, 0.0) == 0.0  # no tolerance configured: off


def test_tolerance_table_from_the_parameter_list():
    assert multipath.tolerance_table([0.0]) == {}
    assert multipath.tolerance_table([0.01]) == {r: 0.01 for r in range(7)}
    assert multipath.tolerance_table([0, 0, 0, 0, 0, 0.005, 0]) == {5: 0.005}
    with pytest.raises(ValueError, match="1 value or 7"):
        multipath.tolerance_table([0.01, 0.02])
    with pytest.raises(ValueError, match=">= 0"):
        multipath.tolerance_table([-0.01])


def test_delay_spread_beyond_the_rates_tolerance_costs_sinr():
    """Rate-5 packet, 1000 m, ~54 dB SNR. A 20 ms RMS spread with rate 5 tolerating 10 ms puts
    exp(-0.5) = 61 % of the power late: SINR ≈ 10 log10(0.39/0.61) = -1.88 dB, below rate 5's
    FER-1 point (3.1 dB): every frame fails. Rate 1 (no tolerance configured) is unaffected,
    and the spread and the loss are in the reception event."""
    tolerances = (0.0, 0.0, 0.0, 0.0, 0.0, 0.010, 0.0)
    sender = modem(1, 0.0, spread_s=0.02)
    receiver = modem(2, 1000.0, spread_s=0.02, isi_tolerance_s=tolerances)
    rate5 = ModemPacket(0, 2, 3, 5, 5, b"\x01", bytes(2048))
    arrival, events = send(sender, receiver, rate5)
    (event,) = [e for e in events if isinstance(e, ReceptionEvent)]
    late = math.exp(-0.5)
    clean = arrival.receive_level_db - 50.0
    expected = 10 * math.log10((1 - late) / (10 ** (-clean / 10) + late))
    assert expected == pytest.approx(-1.88, abs=0.01)
    assert event.delay_spread_s == pytest.approx(0.02)
    assert event.isi_loss_db == pytest.approx(clean - expected, abs=1e-6)
    assert event.outcome == "frame_errors"
    assert receiver.channel.counters.isi_affected == 1
    arrival, events = send(sender, receiver, ModemPacket(0, 2, 3, 1, 1, b"\x01", bytes(192)),
                           t=30.0)
    (event,) = [e for e in events if isinstance(e, ReceptionEvent)]
    assert event.outcome == "received" and event.isi_loss_db == 0.0
    assert event.delay_spread_s == pytest.approx(0.02)


def test_reception_event_message_carries_the_new_fields():
    sender, receiver = modem(1, 0.0, spread_s=0.004), modem(2, 1000.0, spread_s=0.004,
                                                            isi_tolerance_s=(0.004,))
    move(sender, -1.5, 0.0)
    arrival, events = send(sender, receiver)
    (event,) = [e for e in events if isinstance(e, ReceptionEvent)]
    msg = messages.reception_event_msg(event, messages.seconds_to_time_msg(0.0))
    assert isinstance(msg, SimReceptionEvent)
    assert msg.delay_spread_s == pytest.approx(0.004)
    assert msg.doppler_mps == pytest.approx(1.5, abs=2e-3)
    # f = exp(-1): at ~54 dB SNR the SINR falls to about the 2.351 dB signal-to-ISI ceiling
    clean = arrival.receive_level_db - 50.0
    assert msg.isi_loss_db == pytest.approx(clean - 2.351, abs=0.01)


# ---- the ambient_noise topic (ros_acomms: std_msgs/Float32, dB) -----------------------------
@pytest.fixture
def world():
    with RosHarness() as ros:
        yield SimWorld(ros)


def test_published_ambient_noise_replaces_the_noise_model(world):
    world.add_modem("a", 1, 0.0)
    b = world.add_modem("b", 2, 1500.0)  # fixed 50 dB model
    events = []
    world.ros.helper.create_subscription(SimReceptionEvent, "/b/reception_events",
                                         events.append, 10)
    noise_pub = world.ros.helper.create_publisher(Float32, "/b/ambient_noise", 10)
    noise_pub.publish(Float32(data=float("nan")))
    assert world.ros.spin_until(lambda: b.counters["bad_ambient_noise"] == 1, timeout=5.0)
    noise_pub.publish(Float32(data=150.0))
    assert world.ros.spin_until(lambda: b.counters["ambient_noise_messages"] == 1, timeout=5.0)
    # a noise parameter change rebuilds the model but keeps the published level
    b.set_parameters([Parameter("wind_speed_mps", value=10.0)])
    assert b.channel.noise.published_level_db == 150.0
    world.set_time(10.0)
    assert world.queue("a", fdp_packet()).success
    assert world.advance_until(lambda: events, until=20.0, step=0.25)
    (event,) = events
    assert event.noise_db == pytest.approx(150.0)
    assert event.outcome == "undetected"  # 165 dB - ~64 dB TL - 150 dB: far below threshold
    assert world.rx["b"] == []



def test_random_noise_levels_are_seeded_normal_draws():
    a, b = RandomNoiseLevels(60.0, 3.0, seed=1), RandomNoiseLevels(60.0, 3.0, seed=1)
    draws = np.array([a.next_db() for _ in range(4000)])
    assert list(draws[:5]) == [b.next_db() for _ in range(5)]
    assert abs(draws.mean() - 60.0) < 3 * 3.0 / math.sqrt(len(draws))  # within 3 sigma
    assert draws.std() == pytest.approx(3.0, rel=0.05)
    assert RandomNoiseLevels(300.0, 0.0).next_db() == 250.0  # clipped into the accepted range
    with pytest.raises(ValueError):
        RandomNoiseLevels(60.0, -1.0)


def test_simple_noise_model_node_feeds_the_modem(world):
    """ros_acomms' simple_noise_model in the modem's namespace: the modem takes its level."""
    b = world.add_modem("b", 2, 1500.0)
    noise = world.ros.add(SimpleNoiseModelNode(
        context=world.ros.context, namespace="b", parameter_overrides=[
            Parameter("mean_noise_db", value=97.5), Parameter("noise_stddev_db", value=0.0),
            Parameter("random_seed", value=4)]))
    world.ros.configure_and_activate(noise)
    assert world.ros.spin_until(lambda: b.channel.noise.published_level_db == 97.5, timeout=5.0)
    assert noise.published >= 1


def test_bellhop_delay_spread_in_events_and_cache_counts_on_diagnostics(world):
    """Bellhop in 100 m water: the reception event carries the eigenrays' RMS delay spread
    (surface and bottom bounces: > 0) and /diagnostics says how often Bellhop ran and how often
    its cache answered (the second packet over the same geometry is a cache hit)."""
    bellhop = {"transmission_loss_model": "bellhop", "water_depth_m": 100.0}
    world.add_modem("a", 1, 0.0, **bellhop)
    b = world.add_modem("b", 2, 1500.0, **bellhop)
    events, statuses = [], []
    world.ros.helper.create_subscription(SimReceptionEvent, "/b/reception_events",
                                         events.append, 10)
    world.ros.helper.create_subscription(DiagnosticArray, "/diagnostics", lambda m: statuses.extend(
        s for s in m.status if "/b/" in s.name), 10)
    world.set_time(10.0)
    for count, start in enumerate((10.0, 20.0), 1):
        world.set_time(start)
        assert world.queue("a", fdp_packet()).success
        assert world.advance_until(lambda c=count: len(events) == c, until=start + 9.0,
                                   step=0.25)
    assert 0.0 < events[0].delay_spread_s < 0.1 and events[1].delay_spread_s == pytest.approx(
        events[0].delay_spread_s)
    counters = b.diagnostic_counters()
    assert counters["bellhop_runs"] >= 2 and counters["bellhop_cache_hits"] >= 1
    assert world.advance_until(lambda: any(
        v.key == "bellhop_cache_hits" for s in statuses for v in s.values), until=25.0)
