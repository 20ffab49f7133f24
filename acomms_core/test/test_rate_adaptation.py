"""Rate adaptation, ROS-free: the rate rises with SNR, hysteresis prevents flapping, fallbacks."""

import math
from collections import Counter

import numpy as np
import pytest

from acomms_core.mac.policy import RequestData
from acomms_core.mac.rate_adaptation import (
    RateAdapter,
    RateSettings,
    choose_rate,
    parse_candidates,
    passes,
    rate_settings,
    smoothed,
)
from acomms_core.mac.registry import mac_kind
from acomms_core.modems.frame_errors import packet_error_rate
from acomms_core.ros.parameter_spec import defaults

ADAPTIVE = RateSettings(policy="adaptive", margin_db=1.0, hysteresis_db=1.0, smoothing=1.0,
                        max_age_s=100.0)


def test_chosen_rate_rises_with_snr_and_meets_the_target():
    chosen = [choose_rate(ADAPTIVE, snr / 4) for snr in range(-60, 60)]
    speeds = [ADAPTIVE.candidates.index(rate) for rate in chosen]
    assert speeds == sorted(speeds)  # never slower at a higher SNR
    assert set(chosen) == {1, 3, 5}
    for snr4, rate in zip(range(-60, 60), chosen, strict=True):
        snr = snr4 / 4
        if rate != ADAPTIVE.fallback:  # a chosen faster rate meets the target with the margin
            assert packet_error_rate(1, rate, snr - ADAPTIVE.margin_db) < ADAPTIVE.target_per
        faster = [r for r in ADAPTIVE.candidates if ADAPTIVE.candidates.index(r) >
                  ADAPTIVE.candidates.index(rate)]
        assert not any(passes(ADAPTIVE, r, snr) for r in faster)  # the highest that passes


def test_margin_lowers_the_rate():
    snr = next(s / 10 for s in range(-100, 200) if choose_rate(ADAPTIVE, s / 10) == 5)
    wider = RateSettings(policy="adaptive", margin_db=ADAPTIVE.margin_db + 3.0)
    assert choose_rate(wider, snr) != 5


def test_hysteresis_keeps_the_rate_near_a_threshold():
    # the SNR at which rate 5 first passes without hysteresis
    threshold = next(s / 100 for s in range(0, 2000) if passes(ADAPTIVE, 5, s / 100))
    wobble = [threshold + d for d in (0.1, -0.1, 0.1, -0.1, 0.1)]
    rate, switches = 3, 0
    for snr in wobble:
        new = choose_rate(ADAPTIVE, snr, rate)
        switches += new != rate
        rate = new
    assert switches == 0 and rate == 3  # no switch up inside the hysteresis band
    # without hysteresis the same wobble flips the rate every report
    bare = RateSettings(policy="adaptive", margin_db=1.0, hysteresis_db=0.0)
    rate, switches = 3, 0
    for snr in wobble:
        new = choose_rate(bare, snr, rate)
        switches += new != rate
        rate = new
    assert switches >= 4
    # well above the band it switches up; once up, it stays while the rate still passes
    assert choose_rate(ADAPTIVE, threshold + 1.2, 3) == 5
    assert choose_rate(ADAPTIVE, threshold + 0.01, 5) == 5
    assert choose_rate(ADAPTIVE, threshold - 0.5, 5) == 3


def test_adapter_fallback_for_broadcast_unknown_and_stale_links():
    adapter = RateAdapter(ADAPTIVE, broadcast_address=255)
    assert adapter.rate_for(7, 0.0) == 1 and adapter.next_target(0.0) == (None, 1)
    assert adapter.observe(7, 20.0, 10.0)
    assert adapter.rate_for(7, 10.0) == 5
    assert adapter.rate_for(255, 10.0) == 1  # broadcast
    assert adapter.rate_for(8, 10.0) == 1  # never heard
    assert adapter.next_target(20.0) == (7, 5)
    assert adapter.rate_for(7, 10.0 + ADAPTIVE.max_age_s + 1) == 1  # stale
    assert adapter.next_target(10.0 + ADAPTIVE.max_age_s + 1) == (None, 1)
    assert adapter.rate_for(7, 5.0) == 1  # the clock jumped back before the report
    assert not adapter.observe(255, 20.0, 11.0) and not adapter.observe(3, float("nan"), 11.0)
    status = adapter.status(10.0)
    assert status["rate_dests"] == [7] and status["rate_dest_rates"] == [5]
    assert status["rate_fallback"] == 1 and status["rate_policy"] == "adaptive"


def test_ewma_smooths_the_reports():
    adapter = RateAdapter(RateSettings(policy="adaptive", smoothing=0.25))
    adapter.observe(4, 10.0, 0.0)
    adapter.observe(4, 2.0, 1.0)
    # power average: 0.75 * 10 + 0.25 * 10^0.2 = 7.896 -> 8.97 dB (the dB average would be 8.0)
    assert adapter.links[4].snr_db == pytest.approx(smoothed(10.0, 2.0, 0.25))
    assert adapter.links[4].snr_db == pytest.approx(10 * math.log10(7.5 + 0.25 * 10 ** 0.2))
    assert adapter.links[4].reports == 2
    assert smoothed(3.0, 3.0, 0.4) == pytest.approx(3.0)  # a steady link stays put


def test_power_average_estimates_the_mean_snr_under_rayleigh_fading():
    rng = np.random.default_rng(3)
    reports = 10 * np.log10(rng.exponential(1.0, 20000)) + 5.0  # Rayleigh around 5 dB mean
    estimate = None
    for report in reports:
        estimate = smoothed(estimate, float(report), 0.001)
    assert abs(estimate - 5.0) < 0.3  # the power average: the mean SNR
    assert abs(float(np.mean(reports)) - (5.0 - 2.5)) < 0.1  # a dB average: 2.5 dB low


def test_next_target_takes_turns_among_fast_links():
    adapter = RateAdapter(ADAPTIVE)
    adapter.observe(2, 20.0, 0.0)
    adapter.observe(3, 20.0, 0.0)
    adapter.observe(4, -7.0, 0.0)  # rate 1 = the fallback: no destination-specific request
    assert adapter.next_target(1.0) == adapter.next_target(1.0)  # a peek: no turn taken
    targets = []
    for _ in range(4):
        targets.append(adapter.next_target(1.0)[0])
        adapter.took_turn()
    assert targets == [2, 3, 2, 3]


def test_settings_are_validated():
    assert RateSettings() == rate_settings({})  # the dataclass defaults are the parameters'
    assert parse_candidates("5, 1,3") == (1, 3, 5)
    assert parse_candidates([0, 5]) == (0, 5)
    for values, reason in (({"rate_policy": "fast"}, "rate_policy:"),
                           ({"rate_candidates": "1,9"}, "rate_candidates: rate 9"),
                           ({"rate_candidates": "x"}, "rate_candidates: 'x'"),
                           ({"rate_candidates": ""}, "rate_candidates: no rate")):
        with pytest.raises(ValueError, match=reason):
            rate_settings(values)
    assert rate_settings({"rate_policy": "adaptive"}).adaptive


def first_request(policy, start=0.0, end=400.0):
    t = start
    while t < end:
        policy.begin_tick(t)
        action = policy.next_action(t, None)
        if isinstance(action, RequestData):
            return action
        t += 0.5
    raise AssertionError("no transmit opportunity")


@pytest.mark.parametrize("kind", ["tdma", "tdma_slotted_aloha", "carrier_sense", "polled"])
def test_every_mac_kind_asks_for_the_link_rate_of_a_destination(kind):
    cls = mac_kind(kind).policy
    values = {**defaults(cls.PARAMETERS), "rate_policy": "adaptive", "dataframe_rate": 3}
    if "num_slots" in values:
        values.update(cycle_start_time=0, slot_duration_seconds=10.0)
    assert cls.validate(values) is None
    assert "rate_policy: " in cls.validate({**values, "rate_policy": "fast"})
    policy = cls(_Log(), Counter())
    policy.identity = "/v/mac"
    policy.configure(values)
    unknown = first_request(policy)
    assert unknown.dest is None and unknown.frames.dataframe_rate == 1  # fallback: robust
    assert unknown.fallback is None
    policy.rates.observe(7, 20.0, 1.0)
    known = first_request(policy, 2.0)
    assert known.dest == 7 and known.frames.dataframe_rate == 5
    assert known.frames.maximum_dataframe_bytes == 2048
    assert known.fallback.dataframe_rate == 1 and known.fallback.maximum_dataframe_bytes == 192
    policy.apply({**values, "rate_policy": "fixed"}, {"rate_policy"}, 3.0, True)
    fixed = first_request(policy, 4.0)
    assert fixed.dest is None and fixed.frames.dataframe_rate == 3


class _Log:
    def info(self, text, **_):
        pass

    warning = error = debug = info
