"""Frame error rate (FER) vs in-band SNR per Micromodem rate, and the expected packet error rate.

One source of truth for the simulator (`acomms_sim.physics.packet_performance` draws frames with
these FERs) and for the MACs' rate adaptation (`acomms_core.mac.rate_adaptation` picks the rate
whose expected packet error rate stays below a target). The tables and their derivation are
described in `acomms_sim.physics.packet_performance` (SNR convention: SNR = SL − TL − NL_band,
reported as CST.snr_in).
"""

from __future__ import annotations

import functools
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


# ----- expected packet error rate under block fading ------------------------------------------
# The simulator's fading (`acomms_sim.physics.fading.FadingModel`, coherence_time_s 0 by default)
# draws one power gain g per packet (E[g] = 1, Rician with factor K; K = 0 is Rayleigh), and every
# frame of that packet is then drawn at SNR_mean + 10·log10(g). So the expected PER under fading is
# the no-fading PER averaged over the gain: E_g[PER(SNR_mean + 10·log10 g)], the whole packet
# fading together (not frame by frame). Numerically: a 0.05 dB grid of gains from −50 to +20 dB
# (for K ≤ 100 the mass outside is below 1e-5), weights from the power pdf, normalised.

FADING_MODELS = ("none", "rayleigh", "rician")
GAIN_GRID_DB = np.round(np.arange(-50.0, 20.0 + 1e-9, 0.05), 2)


def _log_i0(z: np.ndarray) -> np.ndarray:
    """log I0(z) without overflow (asymptotic form where np.i0 would overflow)."""
    big = z > 600.0
    safe = np.where(big, 1.0, z)
    return np.where(big, z - 0.5 * np.log(2.0 * np.pi * np.where(big, z, 1.0)),
                    np.log(np.i0(safe)))


@functools.lru_cache(maxsize=32)
def fading_gain_weights(model: str, k_factor: float = 0.0) -> np.ndarray:
    """Probability of each gain in GAIN_GRID_DB (sums to 1) for a fading model with mean power 1:
    'none' all on 0 dB, 'rayleigh' exponential power, 'rician' with factor K (linear)."""
    if model not in FADING_MODELS:
        raise ValueError(f"unknown fading model {model!r}; choose one of {list(FADING_MODELS)}")
    if model == "none":
        return (GAIN_GRID_DB == 0.0).astype(float)
    k = 0.0 if model == "rayleigh" else float(k_factor)
    g = 10.0 ** (GAIN_GRID_DB / 10.0)
    log_pdf = math.log(k + 1.0) - k - (k + 1.0) * g + _log_i0(2.0 * np.sqrt(k * (k + 1.0) * g))
    weights = np.exp(log_pdf) * g  # density over dB ∝ pdf(g)·g (constant step)
    return weights / weights.sum()


def packet_error_rates(miniframe_rate: int, dataframe_rate: int, snrs: np.ndarray) -> np.ndarray:
    """`packet_error_rate` (a full dataframe) at each SNR of an array."""
    info = rate_info(dataframe_rate)
    snrs = np.asarray(snrs, dtype=float)

    def fer(rate: int) -> np.ndarray:
        table_snrs, fers = FER_TABLES[int(rate)]
        return np.where(np.isnan(snrs), 1.0, np.interp(snrs, table_snrs, fers))

    ok = (1.0 - fer(dataframe_rate)) ** info.frames
    if info.fdp:
        ok = ok * (1.0 - fer(miniframe_rate))
    return 1.0 - ok


@functools.lru_cache(maxsize=65536)
def _faded_per(miniframe_rate: int, dataframe_rate: int, decibels: int, model: str,
               k_factor: float) -> float:
    snrs = decibels / 10.0 + GAIN_GRID_DB
    weights = fading_gain_weights(model, k_factor)
    return float(np.dot(weights, packet_error_rates(miniframe_rate, dataframe_rate, snrs)))


def faded_packet_error_rate(miniframe_rate: int, dataframe_rate: int, mean_snr: float,
                            model: str = "none", k_factor: float = 0.0) -> float:
    """Expected error rate of a full packet whose SNR fades around `mean_snr` (one gain per
    packet, the simulator's block fading): the PER averaged over the gain distribution. 'none'
    is `packet_error_rate` itself; otherwise the mean SNR is rounded to 0.1 dB and the result
    cached per (rates, SNR, model, K), so a MAC decision costs a dictionary lookup."""
    if model == "none" or math.isnan(mean_snr):
        return packet_error_rate(miniframe_rate, dataframe_rate, mean_snr)
    rate_info(dataframe_rate)
    k = 0.0 if model == "rayleigh" else float(k_factor)
    return _faded_per(int(miniframe_rate), int(dataframe_rate),
                      int(round(max(-300.0, min(300.0, mean_snr)) * 10.0)), model, k)
