"""Bellhop corrected to the actual geometry, its beam fan, and ISI from its arrivals (issue 29).

Deep isovelocity water (6,000 m, 1,500 m/s), both modems at 3,000 m: the direct path, then the
surface and bottom echoes (image sources 6,000 m above / below) several seconds later.
"""

import math

import pytest

from acomms_sim.physics import transmission_loss
from acomms_sim.physics.ambient_noise import AmbientNoise
from acomms_sim.physics.channel import ReceiverChannel, Transmission
from acomms_sim.physics.geodesy import offset_position
from acomms_sim.physics.multipath import late_fraction_from_arrivals, late_power_fraction
from acomms_sim.physics.packet_performance import PacketPerformance
from acomms_sim.physics.sound_speed import SoundSpeedProfile

ORIGIN = (41.5, -70.7)
DEPTH, WATER, C = 3000.0, 6000.0, 1500.0


@pytest.fixture(scope="module")
def model():
    return transmission_loss.BellhopModel(SoundSpeedProfile.constant(C), water_depth_m=WATER)


def echo_delay_s(range_m):
    """The first surface (or bottom) echo after the direct path: image source 6,000 m away."""
    return (math.hypot(range_m, 2 * DEPTH) - range_m) / C


def test_delay_and_loss_are_at_the_actual_range(model):
    """With 10 m cells the delay at 1,000 and 2,000 m was 3.33 ms late (a 5 m ranging bias)."""
    for range_m in (1000.0, 2000.0):
        delay, _spread = model.timing(DEPTH, DEPTH, range_m, 10000.0)
        assert delay == pytest.approx(range_m / C, abs=2e-5), range_m  # was + 5 m / C
    # across a cell boundary (1,009.99 m ran at 1,005 m, 1,010.01 m at 1,015 m) both are
    # continuous: what remains is the two runs' own difference, not the 10 m cell
    below = model.timing(DEPTH, DEPTH, 1009.99, 10000.0)[0]
    above = model.timing(DEPTH, DEPTH, 1010.01, 10000.0)[0]
    assert above - below == pytest.approx(0.02 / C, abs=2e-5)
    loss_below = model.transmission_loss_db(DEPTH, DEPTH, 1009.99, 10000.0)
    loss_above = model.transmission_loss_db(DEPTH, DEPTH, 1010.01, 10000.0)
    assert abs(loss_above - loss_below) < 0.05  # the cells are 0.086 dB apart by spreading


def test_beam_fan_reaches_the_surface_and_bottom_paths(model):
    """The ±80° fan missed the surface path at 1 km (launch angle 80.5°), found it at 2 km."""
    assert transmission_loss.beam_fan_deg(DEPTH, DEPTH, 1000.0, WATER) == pytest.approx(
        math.degrees(math.atan2(2 * DEPTH, 1000.0)) + 5.0)
    assert transmission_loss.beam_fan_deg(10.0, 10.0, 5000.0, 100.0) == 80.0  # shallow, long
    assert transmission_loss.beam_fan_deg(DEPTH, DEPTH, 1.0, WATER) == 89.0
    spreads = []
    for range_m in (1000.0, 2000.0):
        arrivals = model.arrival_profile(DEPTH, DEPTH, range_m, 10000.0)
        echoes = [d for d, share in arrivals if abs(d - echo_delay_s(range_m)) < 0.02]
        assert echoes, (range_m, arrivals)
        spreads.append(model.timing(DEPTH, DEPTH, range_m, 10000.0)[1])
    assert min(spreads) > 0.5  # was 0 at 1 km and 0.86 s at 2 km


def test_isi_from_the_arrivals_not_the_exponential_profile(model):
    """At 2 km the only late power is the echoes' ~10 %; the exponential profile built from the
    0.86 s RMS spread put 98.8 % beyond a 10 ms tolerance and lost a rate-5 packet at 48 dB."""
    arrivals = model.arrival_profile(DEPTH, DEPTH, 2000.0, 10000.0)
    late = late_fraction_from_arrivals(arrivals, 0.01)
    assert 0.05 < late < 0.15
    spread = model.timing(DEPTH, DEPTH, 2000.0, 10000.0)[1]
    assert late_power_fraction(spread, 0.01) > 0.98
    propagation = transmission_loss.Propagation(model, SoundSpeedProfile.constant(C))
    noise = 165.0 - model.transmission_loss_db(DEPTH, DEPTH, 2000.0, 10000.0) - 48.0
    channel = ReceiverChannel(propagation, AmbientNoise("fixed", noise), PacketPerformance(4),
                              10000.0, 5000.0, isi_tolerance_s={5: 0.01})
    tx = Transmission(1, 0.0, *ORIGIN, DEPTH, 165.0, 10000.0, 5000.0, True, 5, 5, 72, 2048)
    arrival = channel.add_transmission(tx, (*offset_position(*ORIGIN, 2000.0, 0.0), DEPTH))
    assert arrival.multipath == arrivals
    (reception,) = channel.pop_due(100.0)
    ceiling = 10 * math.log10((1 - late) / (late + 10 ** -4.8))
    assert reception.segment_snrs_db[1] == pytest.approx(ceiling, abs=0.1)
    assert reception.isi_loss_db == pytest.approx(reception.snr_db - ceiling, abs=0.2)
    assert reception.outcome == "received" and reception.frames.packet_success
