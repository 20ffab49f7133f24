"""Inter-symbol interference (ISI) from multipath delay spread, ROS-free.

A receiver (equaliser span, guard interval or spreading-code length) gathers the energy that
arrives within its delay tolerance T of the first arrival; energy that arrives later smears into
the following symbols and acts as self-noise. With only the RMS delay spread τ of a path known
(the Bellhop arrivals, `transmission_loss.arrival_timing`), the power-delay profile is taken as
exponential,

    p(t) = exp(−t/τ) / τ,   t ≥ 0,

the standard one-parameter multipath profile (Rappaport, *Wireless Communications*, 2nd ed.,
§5.4.1: the exponential profile's RMS delay spread equals its decay constant τ; used for
underwater channels with τ of milliseconds to tens of ms, Stojanovic & Preisig, IEEE Commun. Mag.
47(1), 2009). The share of the received power beyond T is then

    f = ∫_T^∞ p(t) dt = exp(−T/τ)

and a frame's SINR with received power S, noise N and interference I becomes

    SINR_isi = S·(1 − f) / (N + I + S·f).

Without noise the ceiling is the signal-to-ISI ratio (1 − f)/f: 2.35 dB at τ = T, 8.05 dB at
τ = T/2, 17.3 dB at τ = T/4 (f = 1.8 %). The Micromodem's equaliser spans per rate are not
published, so T is a per-rate channel parameter (`isi_tolerance_s`; 0 or absent: no penalty
for that rate).

Where the path's arrivals are known (Bellhop: each arrival's delay after the first and its share
of the power), f is taken from them directly, f = Σ share of the arrivals later than T, instead
of the exponential profile: a sparse deep-water path (a direct arrival and one surface echo 2.9 s
later at −10 dB) has f ≈ 9 % although its RMS spread (0.86 s) would make the exponential profile
put 98.8 % of the power beyond a 10 ms tolerance.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from acomms_core.modems.modem_rates import RATES


def late_power_fraction(delay_spread_s: float, tolerance_s: float) -> float:
    """f = exp(−T/τ): share of the power arriving later than the tolerance (0 without spread
    or without a tolerance)."""
    if not delay_spread_s > 0 or not tolerance_s > 0:
        return 0.0
    return math.exp(-tolerance_s / delay_spread_s)


def sinr_with_isi_db(signal_power: float, noise_power: float, late_fraction: float) -> float:
    """SINR (dB) of a frame whose late share `late_fraction` of the signal is self-noise;
    noise_power holds the ambient noise and the other packets' interference (linear)."""
    useful = signal_power * (1.0 - late_fraction)
    disturbance = noise_power + signal_power * late_fraction
    if useful <= 0.0:
        return -math.inf
    if disturbance <= 0.0:
        return math.inf
    return 10.0 * math.log10(useful / disturbance)


def tolerance_table(values: Sequence[float]) -> dict[int, float]:
    """Per-rate tolerances from a parameter list: one value for every rate, or one per rate
    0..6; rates with 0 get no penalty. ValueError with the reason for another length or a
    negative value."""
    values = [float(v) for v in values]
    if any(not math.isfinite(v) or v < 0.0 for v in values):
        raise ValueError(f"isi_tolerance_s values must be finite and >= 0, got {values}")
    if len(values) == 1:
        values = values * len(RATES)
    if len(values) != len(RATES):
        raise ValueError(f"isi_tolerance_s needs 1 value or {len(RATES)} (rates "
                         f"{min(RATES)}..{max(RATES)}), got {len(values)}")
    return {rate: v for rate, v in zip(sorted(RATES), values, strict=True) if v > 0.0}


def late_fraction_from_arrivals(arrivals: Sequence[tuple[float, float]],
                                tolerance_s: float) -> float:
    """Share of the power in arrivals later than the tolerance after the first arrival
    (arrivals: (delay after the first, power share)); 0 without a tolerance."""
    if not tolerance_s > 0:
        return 0.0
    return min(1.0, sum(share for delay, share in arrivals if delay > tolerance_s))


def rate_late_fraction(table: Mapping[int, float], rate: int, delay_spread_s: float,
                       arrivals: Sequence[tuple[float, float]] = ()) -> float:
    """The late share for a rate: from the arrivals when known, else the exponential profile."""
    tolerance = table.get(int(rate), 0.0)
    if arrivals:
        return late_fraction_from_arrivals(arrivals, tolerance)
    return late_power_fraction(delay_spread_s, tolerance)
