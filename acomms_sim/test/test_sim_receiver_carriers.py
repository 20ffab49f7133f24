"""Carrier-matched receivers, ROS-free: a receiver decodes only its own carrier and band.

Issue 29: a 10 kHz receiver decoded a 12.4 kHz-carrier packet at full strength although only 52 %
of that packet's band lies in its own. Now such a packet is interference only, weighted by the
share of its band inside ours.
"""

import math

import pytest

from acomms_sim.physics.ambient_noise import AmbientNoise
from acomms_sim.physics.channel import (
    DEFAULT_CARRIER_TOLERANCE_HZ,
    ReceiverChannel,
    Transmission,
    band_overlap_fraction,
)
from acomms_sim.physics.geodesy import offset_position
from acomms_sim.physics.packet_performance import PacketPerformance
from acomms_sim.physics.sound_speed import SoundSpeedProfile
from acomms_sim.physics.transmission_loss import Propagation, SpreadingModel

ORIGIN = (41.5, -70.7)
RECEIVER = (*offset_position(*ORIGIN, 1000.0, 0.0), 20.0)


def channel(**options):
    propagation = Propagation(SpreadingModel("spherical", "thorp"),
                              SoundSpeedProfile.constant(1500.0))
    return ReceiverChannel(propagation, AmbientNoise("fixed", 60.0), PacketPerformance(5),
                           10000.0, 5000.0, **options)


def tx(src, fc=10000.0, bw=5000.0, start_s=0.0):
    return Transmission(src, start_s, *ORIGIN, 20.0, 185.0, fc, bw, True, 1, 1, 10, 100)


def test_a_packet_on_another_carrier_is_not_decoded():
    ch = channel()
    arrival = ch.add_transmission(tx(1, fc=12400.0), RECEIVER)
    assert arrival.band_fraction == pytest.approx(0.52)
    assert not arrival.decodable
    assert ch.pop_due(100.0) == []  # nothing decoded, nothing reported
    assert (ch.counters.interference_only, ch.counters.arrivals, ch.counters.received) == (1, 0, 0)


def test_the_other_carrier_is_interference_weighted_by_band_overlap():
    alone, both = channel(), channel()
    alone.add_transmission(tx(1), RECEIVER)
    clean = alone.pop_due(100.0)[0]
    both.add_transmission(tx(1), RECEIVER)
    other = both.add_transmission(tx(2, fc=12400.0), RECEIVER)
    (reception,) = both.pop_due(100.0)
    assert reception.outcome == "received" and reception.arrival.transmission.src == 1
    # the interferer's power in our band: its level (absorbed at its own carrier) times 52 %
    share = band_overlap_fraction(12400.0, 5000.0, 10000.0, 5000.0)
    interference = 10 * math.log10(share) + other.faded_level_db
    assert reception.interference_db == pytest.approx(interference, abs=1e-6)
    noise = 10 ** (clean.noise_db / 10) + 10 ** (interference / 10)
    assert reception.snr_db == pytest.approx(
        clean.snr_db + clean.noise_db - 10 * math.log10(noise), abs=1e-6)


@pytest.mark.parametrize("fc,bw,tolerance,decoded", [
    (10000.0 + DEFAULT_CARRIER_TOLERANCE_HZ, 5000.0, DEFAULT_CARRIER_TOLERANCE_HZ, True),
    (10000.0 + 2 * DEFAULT_CARRIER_TOLERANCE_HZ, 5000.0, DEFAULT_CARRIER_TOLERANCE_HZ, False),
    (10000.0, 4000.0, DEFAULT_CARRIER_TOLERANCE_HZ, False),  # same carrier, another band
    (10000.0, 5000.0, 0.0, True),
    (10001.0, 5000.0, 0.0, False),
    (12400.0, 5000.0, 2500.0, True),  # a wide tolerance decodes it again
])
def test_tolerance_on_carrier_and_bandwidth(fc, bw, tolerance, decoded):
    ch = channel(carrier_tolerance_hz=tolerance)
    arrival = ch.add_transmission(tx(1, fc=fc, bw=bw), RECEIVER)
    assert arrival.decodable is decoded
    assert [r.outcome for r in ch.pop_due(100.0)] == (["received"] if decoded else [])
