"""Frame error rate (FER) vs in-band SNR per Micromodem rate, and the expected packet error rate.

One source of truth for the simulator (`acomms_sim.physics.packet_performance` draws frames with
these FERs) and for the MACs' rate adaptation (`acomms_core.mac.rate_adaptation` picks the rate
whose expected packet error rate stays below a target). The tables and their derivation are
described in `acomms_sim.physics.packet_performance` (SNR convention: SNR = SL − TL − NL_band,
reported as CST.snr_in).
"""

from __future__ import annotations

import math

import numpy as np

from acomms_core.modems.modem_rates import NOMINAL_BANDWIDTH_HZ, RATES, rate_info

# rate -> (SNR dB ascending, FER); from ros_acomms' empirical Micromodem-2 tables.
MEASURED_FER_TABLES: dict[int, tuple[tuple[float, ...], tuple[float, ...]]] = {
    1: ((-7.957, -7.604, -7.234, -6.845, -6.444, -6.012), (1.0, 0.937, 0.727, 0.170, 0.020, 0.0)),
    3: ((-2.9215, -2.2806, -1.5853, -0.8275, 0.0044, 0.8363),
        (1.0, 0.91, 0.57, 0.115, 0.025, 0.0)),
    5: ((3.097, 4.443, 6.015), (1.0, 0.135, 0.0)),
}


def eb_n0_db(rate: int, snr: float) -> float:
    """Eb/N0 (dB) of a rate's information bits at this in-band SNR (nominal 5 kHz band)."""
    return snr + 10.0 * math.log10(NOMINAL_BANDWIDTH_HZ / rate_info(rate).bit_rate_bps)


# Rate 0 (FH-FSK): rate-1/2, constraint length 9 convolutional code; distances d of its error
# events and their information-error weights c_d (the published spectrum ns-3 UAN uses).
FH_FSK_CODE_RATE = 0.5
FH_FSK_CODE_SPECTRUM = ((12, 33), (14, 281), (16, 2179), (18, 15035), (20, 105166),
                        (22, 692330), (24, 4580007), (26, 29692894))


def fh_fsk_chip_error(snr: float) -> float:
    """Non-coherent BFSK chip error with Rayleigh fading per hop, p = 1/(2 + Ec/N0)."""
    chips_per_s = rate_info(0).bit_rate_bps / FH_FSK_CODE_RATE
    ec_n0 = 10.0 ** ((snr + 10.0 * math.log10(NOMINAL_BANDWIDTH_HZ / chips_per_s)) / 10.0)
    return 1.0 / (2.0 + ec_n0)


def fh_fsk_bit_error(snr: float) -> float:
    """Decoded bit error (union bound over the code's spectrum, soft decisions), at most ½."""
    p = fh_fsk_chip_error(snr)
    total = sum(weight * p ** d * sum(math.comb(d - 1 + k, k) * (1.0 - p) ** k
                                      for k in range(d))
                for d, weight in FH_FSK_CODE_SPECTRUM)
    return min(total, 0.5)


def bit_error_rate(rate: int, snr: float) -> float:
    """P_b at this in-band SNR: the FH-FSK model for rate 0, coherent PSK otherwise."""
    if rate_info(rate).noncoherent_fsk:
        return fh_fsk_bit_error(snr)
    gamma = 10.0 ** (eb_n0_db(rate, snr) / 10.0)
    return 0.5 * math.erfc(math.sqrt(gamma))


def analytic_fer(rate: int, snr: float) -> float:
    """FER of one frame from the bit error rate: 1 − (1 − P_b)^(frame bits); rate 0's CRC also
    corrects one bit error."""
    bits = rate_info(rate).frame_bytes * 8
    pb = bit_error_rate(rate, snr)
    ok = math.exp(bits * math.log1p(-pb))
    if rate_info(rate).noncoherent_fsk and pb < 1.0:
        ok += bits * pb * math.exp((bits - 1) * math.log1p(-pb))
    return float(min(1.0, max(0.0, 1.0 - ok)))


def _analytic_table(rate: int) -> tuple[tuple[float, ...], tuple[float, ...]]:
    grid = np.round(np.arange(-30.0, 40.0, 0.1), 1)
    fers = np.array([analytic_fer(rate, float(x)) for x in grid])
    fers[fers < 1e-6] = 0.0
    fers[fers > 1.0 - 1e-9] = 1.0
    first = max(int(np.argmax(fers < 1.0)) - 1, 0)
    last = int(np.argmax(fers == 0.0))
    return tuple(float(x) for x in grid[first:last + 1]), tuple(float(f) for f in
                                                              fers[first:last + 1])


ANALYTIC_RATES = (0, 2, 4, 6)
FER_TABLES = dict(MEASURED_FER_TABLES)
FER_TABLES.update({rate: _analytic_table(rate) for rate in ANALYTIC_RATES})
assert set(FER_TABLES) == set(RATES)


def frame_error_rate(rate: int, snr: float) -> float:
    """FER of one frame at this rate and in-band SNR (dB); UnknownRateError for a bad rate."""
    rate_info(rate)
    snrs, fers = FER_TABLES[int(rate)]
    if math.isnan(snr):
        return 1.0
    return float(np.interp(snr, snrs, fers))


def packet_error_rate(miniframe_rate: int, dataframe_rate: int, snr: float,
                      frames: int | None = None) -> float:
    """Expected error rate of a packet at this SNR: every frame must pass (independent draws, as
    the simulator draws them): 1 − (1 − FER_mini)·(1 − FER_data)^frames, the miniframe counted
    on FDP rates only; `frames` defaults to a full dataframe at the rate."""
    info = rate_info(dataframe_rate)
    count = info.frames if frames is None else frames
    ok = (1.0 - frame_error_rate(dataframe_rate, snr)) ** count
    if info.fdp:
        ok *= 1.0 - frame_error_rate(miniframe_rate, snr)
    return 1.0 - ok
