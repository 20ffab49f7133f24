"""Gradual Doppler penalty, ROS-free: SINR loss growing with the closing speed below the limit."""

import math

import numpy as np
import pytest

from acomms_sim.physics.ambient_noise import AmbientNoise
from acomms_sim.physics.channel import ReceiverChannel, Transmission
from acomms_sim.physics.doppler import DEFAULT_DOPPLER_LOSS_AT_TOLERANCE_DB, doppler_loss_db
from acomms_sim.physics.geodesy import offset_position
from acomms_sim.physics.packet_performance import PacketPerformance, frame_error_rate
from acomms_sim.physics.sound_speed import SoundSpeedProfile
from acomms_sim.physics.transmission_loss import Propagation, SpreadingModel

ORIGIN = (41.5, -70.7)


def test_curve_is_zero_at_rest_monotone_and_keeps_the_hard_limit():
    speeds = np.linspace(0.0, 2.0, 81)
    losses = [doppler_loss_db(v, 2.0, 3.0) for v in speeds]
    assert losses[0] == 0.0
    assert all(b > a for a, b in zip(losses, losses[1:], strict=False))  # strictly growing
    assert losses[-1] == pytest.approx(3.0)  # the configured loss at the limit
    assert doppler_loss_db(1.0, 2.0, 3.0) == pytest.approx(0.75)  # quadratic: half speed, 1/4
    assert doppler_loss_db(-1.0, 2.0, 3.0) == doppler_loss_db(1.0, 2.0, 3.0)  # either sign
    assert doppler_loss_db(2.0001, 2.0, 3.0) == math.inf  # beyond the limit: every frame fails
    assert doppler_loss_db(50.0, math.inf, 3.0) == 0.0  # no limit configured: no penalty
    assert doppler_loss_db(1.9, 2.0, 0.0) == 0.0  # 0 dB: pass/fail only, as before
    assert DEFAULT_DOPPLER_LOSS_AT_TOLERANCE_DB == 3.0


def reception(closing_mps, tolerance_mps, noise_db=110.5):
    propagation = Propagation(SpreadingModel("spherical", "thorp"),
                              SoundSpeedProfile.constant(1500.0))
    channel = ReceiverChannel(propagation, AmbientNoise("fixed", noise_db), PacketPerformance(1),
                              10000.0, 5000.0, doppler_tolerance_mps=tolerance_mps)
    tx = Transmission(1, 0.0, *ORIGIN, 20.0, 165.0, 10000.0, 5000.0, True, 1, 1, 10, 100)
    receiver = (*offset_position(*ORIGIN, 1000.0, 0.0), 20.0)
    channel.add_transmission(tx, receiver, (0.0, -closing_mps, 0.0))  # moving towards the sender
    (result,) = channel.pop_due(100.0)
    return result


def test_receiver_loses_sinr_below_the_limit():
    still, moving = reception(0.0, 2.0), reception(1.0, 2.0)
    assert moving.arrival.doppler_mps == pytest.approx(1.0, abs=1e-3)
    assert still.doppler_loss_db == 0.0
    assert moving.doppler_loss_db == pytest.approx(0.75, abs=1e-3)
    # the frames are drawn at the SINR less the loss (this SNR sits on rate 1's FER slope)
    data_snr = moving.segment_snrs_db[1]
    assert -7.6 < data_snr - moving.doppler_loss_db < -6.5
    assert moving.frames.frame_error_probability == pytest.approx(
        frame_error_rate(1, data_snr - moving.doppler_loss_db))
    assert moving.frames.frame_error_probability > frame_error_rate(1, data_snr) + 0.1
    beyond = reception(2.5, 2.0)
    assert beyond.doppler_loss_db == math.inf and not any(beyond.frames.frame_success)
