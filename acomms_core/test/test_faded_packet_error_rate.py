"""Expected packet error rate under block fading (one gain per packet), and the adaptive rate's
use of it: plain pytest, no ROS."""

import math

import numpy as np
import pytest

from acomms_core.mac.rate_adaptation import RateSettings, choose_rate, passes, rate_settings
from acomms_core.modems.frame_errors import (
    GAIN_GRID_DB,
    faded_packet_error_rate,
    fading_gain_weights,
    packet_error_rate,
    packet_error_rates,
)
from acomms_core.modems.modem_rates import rate_info

SNRS = [x / 2 for x in range(-30, 61)]  # -15 .. 30 dB


@pytest.mark.parametrize("model,k", [("rayleigh", 0.0), ("rician", 10.0), ("rician", 100.0)])
def test_gain_weights_have_unit_mean_power(model, k):
    weights = fading_gain_weights(model, k)
    gains = 10.0 ** (GAIN_GRID_DB / 10.0)
    assert weights.sum() == pytest.approx(1.0)
    assert float(np.dot(weights, gains)) == pytest.approx(1.0, abs=1e-3)


def test_rayleigh_outage_matches_the_exponential_power_cdf():
    weights = fading_gain_weights("rayleigh")
    for g0_db in (-10.0, -3.0, 0.0, 3.0):
        below = float(weights[GAIN_GRID_DB < g0_db].sum())
        assert below == pytest.approx(-math.expm1(-10.0 ** (g0_db / 10.0)), abs=0.01)


@pytest.mark.parametrize("rate", [1, 3, 5])
def test_none_is_the_no_fading_per(rate):
    for snr in SNRS:
        assert faded_packet_error_rate(1, rate, snr, "none") == packet_error_rate(1, rate, snr)


@pytest.mark.parametrize("rate", [1, 3, 5])
def test_vectorised_per_matches_the_scalar_one(rate):
    values = packet_error_rates(1, rate, np.array(SNRS + [math.nan]))
    assert list(values) == pytest.approx([packet_error_rate(1, rate, s) for s in SNRS] + [1.0])


@pytest.mark.parametrize("model,k", [("rayleigh", 0.0), ("rician", 10.0)])
@pytest.mark.parametrize("rate", [1, 3, 5])
def test_fading_per_is_monotone_and_above_the_no_fading_per_at_high_snr(model, k, rate):
    faded = [faded_packet_error_rate(1, rate, snr, model, k) for snr in SNRS]
    # never worse at a higher SNR
    assert all(b <= a + 1e-12 for a, b in zip(faded, faded[1:], strict=False))
    high = [(f, packet_error_rate(1, rate, s))
            for f, s in zip(faded, SNRS, strict=True) if s >= 10.0]
    assert all(f >= plain for f, plain in high)
    if model == "rayleigh":  # deep fades: still lost now and then where no fading never fails
        assert faded[SNRS.index(20.0)] > 1e-3 > packet_error_rate(1, rate, 20.0)


def test_rician_lies_between_rayleigh_and_no_fading():
    for snr in (5.0, 10.0, 15.0):
        rayleigh = faded_packet_error_rate(1, 5, snr, "rayleigh")
        rician = faded_packet_error_rate(1, 5, snr, "rician", 10.0)
        assert packet_error_rate(1, 5, snr) <= rician <= rayleigh


def test_rayleigh_per_matches_a_monte_carlo_of_per_packet_gains():
    rng = np.random.default_rng(3)
    gains_db = 10.0 * np.log10(rng.exponential(1.0, 200_000))
    for snr in (2.0, 8.0):
        monte_carlo = float(np.mean(packet_error_rates(1, 5, snr + gains_db)))
        assert faded_packet_error_rate(1, 5, snr, "rayleigh") == pytest.approx(monte_carlo,
                                                                             abs=0.01)


def test_cached_on_a_tenth_of_a_db():
    assert faded_packet_error_rate(1, 5, 6.04, "rayleigh") == faded_packet_error_rate(
        1, 5, 6.0, "rayleigh")


def test_fading_model_lowers_the_rate_where_fades_lose_packets():
    plain = RateSettings(policy="adaptive", target_per=0.1, margin_db=0.0, hysteresis_db=0.0)
    faded = RateSettings(policy="adaptive", target_per=0.1, margin_db=0.0, hysteresis_db=0.0,
                         fading_model="rayleigh")
    assert choose_rate(plain, 8.0) == 5
    assert choose_rate(faded, 8.0) < 5
    assert passes(plain, 5, 8.0) and not passes(faded, 5, 8.0)


def test_fading_settings_are_validated():
    settings = rate_settings({"rate_fading_model": "rician", "rate_rician_k_db": 10.0})
    assert settings.k_factor == pytest.approx(10.0)
    assert rate_settings({"rate_fading_model": "rayleigh"}).k_factor == 0.0
    with pytest.raises(ValueError, match="rate_fading_model"):
        rate_settings({"rate_fading_model": "nakagami"})


def test_default_target_matches_the_byte_ratio_of_rate_5_to_rate_3():
    """docs/guide/macs.md: rate 5 carries 4 times rate 3's bytes, so it pays off up to a PER near
    1 − 1/4: the default target."""
    ratio = rate_info(5).max_dataframe_bytes / rate_info(3).max_dataframe_bytes
    assert ratio == 4
    assert rate_settings({}).target_per == pytest.approx(1.0 - 1.0 / ratio)
