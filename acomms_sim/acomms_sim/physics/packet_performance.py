"""Link budget (sonar equation), frame error rates per Micromodem rate, seeded frame draws.

SNR convention (used everywhere in acomms_sim, and reported as CST.snr_in):
    SNR = RL − NL_band,   RL = SL − TL   (passive sonar equation, DI = 0)
where SL is the source level (dB re 1 µPa @ 1 m), TL the transmission loss (dB) and NL_band the
noise power in the receiver band (dB re 1 µPa): the spectrum integrated over the band, i.e.
N(f_c) + 10·log10(B_Hz) for a flat spectrum. Interference from overlapping in-band packets adds
to NL_band as power (the SNR is then an SINR). This is the in-band input SNR a modem measures.

Frame error rate (FER) vs SNR, one table per rate (`FER_TABLES`, kept in
`acomms_core.modems.frame_errors` so the MACs' rate adaptation reads the same tables), linearly
interpolated and clamped at the ends; every table falls to exactly 0:
- rates 1, 3, 5: the empirical Micromodem-2 tables ros_acomms ships, applied to the in-band SNR
  above (ros_acomms' own simulator feeds them "rx level − ambient_noise_db" with a user-chosen
  noise level, so its SNR has no explicit band term; we state ours explicitly instead). Rate 3's
  table stops at FER 0.025 (0.0044 dB); it is extended by one more step of its own spacing
  (0.832 dB) to FER 0 at 0.836 dB, as rates 1 and 5 end.
- the legacy PSK rates 2, 4, 6 (no measured tables published): derived from the bit error rate
  at the rate's Eb/N0 (Proakis, Digital Communications, ch. 4/5):
      Eb/N0 = SNR + 10·log10(B / R_b)      (B = 5 kHz nominal band, R_b the rate's bit rate)
      coherent BPSK/QPSK:  P_b = Q(√(2·Eb/N0)) = ½·erfc(√(Eb/N0)),  FER = 1 − (1 − P_b)^(8·bytes)
  Spreading (DSS) gain is inside Eb/N0 (energy per information bit); the FEC coding gain is not
  credited, so these rates are conservative (rate 2 needs ~4 dB more SNR than rate 1, which has
  BCH coding).
- rate 0, FH-FSK (no measured table published): the structure of ns-3 UAN's Micromodem FH-FSK
  error model (`UanPhyPerUmodem`: binary FSK chips, rate-1/2 convolutional code of constraint
  length 9 with soft-decision Viterbi decoding, a CRC that corrects one bit error; formulas from
  Proakis ch. 8 and 14), with the chip energy taken from our in-band SNR (ns-3 uses its SINR as
  Ec/N0 directly):
      Ec/N0 = SNR + 10·log10(B · R_c / R_b)    (R_b = 80 bps, code rate R_c = ½: 160 chips/s)
      p = 1 / (2 + Ec/N0)     non-coherent BFSK chip error with independent Rayleigh fading per
                               hop (frequency hopping makes the hops fade independently)
      P_b ≤ Σ_d c_d · P_d,   P_d = p^d · Σ_{k<d} C(d−1+k, k)·(1 − p)^k   (d = 12, 14, …, 26;
                               c_d the code's published information-error weights 33, 281, …)
      FER = 1 − [(1 − P_b)^n + n·P_b·(1 − P_b)^(n−1)],   n = 256 bits of the 32-byte frame.
  FER 0.5 falls at −7.3 dB, FER < 1e-3 from −6.1 dB and 0 from −4.9 dB in the 5 kHz band
  (the uncoded AWGN curve on 80 bps information bits it replaces: −7.8 dB, with a tail to −4 dB;
  so `acomms_link_budget`'s PER 0.000 at −1 dB is right: 6 dB of margin). Its per-hop fading is
  small-scale and independent of the channel's block fading (`FadingModel`).
Each analytic table is sampled every 0.1 dB and cut to 1 below FER 1e-9 of success and to 0
below FER 1e-6.

Frames drawn per packet: one miniframe draw when the packet carries miniframe bytes (at the
miniframe rate), plus one draw per dataframe frame the payload occupies
(`acomms_core.modems.modem_rates.frames_used`, at most 3 / 2 / 8 for rates 1 / 3 / 5). Each draw
fails independently with the FER at that frame's SNR, so a full rate-r dataframe-only packet
succeeds with probability (1 − FER)^frames(r).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

import numpy as np

from acomms_core.modems.frame_errors import (  # noqa: F401  (the tables live in core)
    ANALYTIC_RATES,
    FER_TABLES,
    FH_FSK_CODE_RATE,
    FH_FSK_CODE_SPECTRUM,
    MEASURED_FER_TABLES,
    analytic_fer,
    bit_error_rate,
    eb_n0_db,
    fh_fsk_bit_error,
    fh_fsk_chip_error,
    frame_error_rate,
)
from acomms_core.modems.modem_rates import frames_used, rate_info
from acomms_core.modems.registry import DEFAULT_MODEM_PROFILE, modem_profile


def receive_level_db(source_level_db: float, transmission_loss_db: float) -> float:
    return source_level_db - transmission_loss_db


def snr_db(source_level_db: float, transmission_loss_db: float, noise_band_level_db: float,
           directivity_index_db: float = 0.0) -> float:
    """Passive sonar equation: SNR = SL − TL − (NL − DI)."""
    return source_level_db - transmission_loss_db - (noise_band_level_db - directivity_index_db)


def sum_levels_db(levels_db: Sequence[float]) -> float:
    """Incoherent (power) sum of levels in dB; -inf for none."""
    if not levels_db:
        return -math.inf
    return float(10.0 * np.log10(np.sum(10.0 ** (np.asarray(levels_db, dtype=float) / 10.0))))


def packet_duration_s(packet_type_fdp: bool, miniframe_rate: int, dataframe_rate: int,
                      num_miniframe_bytes: int, num_dataframe_bytes: int) -> float:
    """On-air time of a packet by the default modem profile (`ModemProfile.packet_duration_s`).

    Code that knows its modem (SimModem, the emulator) asks its profile directly; this is for
    callers that only have a packet (the channel's Transmission default, the runner's report).
    """
    return modem_profile(DEFAULT_MODEM_PROFILE).packet_duration_s(
        packet_type_fdp, miniframe_rate, dataframe_rate, num_miniframe_bytes,
        num_dataframe_bytes)


@dataclasses.dataclass
class FrameOutcome:
    miniframe_success: list[bool]
    frame_success: list[bool]
    frame_error_probability: float  # FER of the dataframe frames (miniframe's if none)

    @property
    def packet_success(self) -> bool:
        return all(self.miniframe_success) and all(self.frame_success)


class PacketPerformance:
    """Seeded frame-success draws: the same seed and the same calls give the same outcomes.

    `stream(*key)` gives an independent generator for one packet (the channel keys it by the
    transmitter and the transmit time), so a packet's draws do not depend on other packets."""

    def __init__(self, seed: int | Sequence[int] | None = None):
        self.rng = np.random.default_rng(seed)
        if seed is None:
            self._entropy = [int(self.rng.integers(2**63))]
        else:
            self._entropy = [int(s) for s in (seed if np.ndim(seed) else [seed])]

    def stream(self, *key: int) -> np.random.Generator:
        return np.random.default_rng([*self._entropy, *(int(k) for k in key)])

    def draw_frames(self, rate: int, count: int, snr: float | Sequence[float],
                    rng: np.random.Generator | None = None) -> list[bool]:
        """count frame draws at this rate; snr is one value or one per frame."""
        snrs = [snr] * count if np.ndim(snr) == 0 else list(snr)
        if len(snrs) != count:
            raise ValueError(f"{len(snrs)} SNR values for {count} frames")
        rng = rng or self.rng
        return [bool(rng.random() >= frame_error_rate(rate, s)) for s in snrs]

    def draw_packet(self, miniframe_rate: int, dataframe_rate: int, num_miniframe_bytes: int,
                    num_dataframe_bytes: int, miniframe_snr_db: float,
                    frame_snrs_db: float | Sequence[float],
                    rng: np.random.Generator | None = None) -> FrameOutcome:
        frames = frames_used(dataframe_rate, num_dataframe_bytes)
        mini = (self.draw_frames(miniframe_rate, 1, miniframe_snr_db, rng)
                if num_miniframe_bytes > 0 else [])
        data = self.draw_frames(dataframe_rate, frames, frame_snrs_db, rng)
        if frames:
            first = frame_snrs_db if np.ndim(frame_snrs_db) == 0 else frame_snrs_db[0]
            fer = frame_error_rate(dataframe_rate, first)
        else:
            fer = frame_error_rate(miniframe_rate, miniframe_snr_db)
        return FrameOutcome(mini, data, fer)

    def draw_full_packet(self, rate: int, snr: float) -> FrameOutcome:
        """A full packet at one rate (miniframe for FDP rates + every dataframe frame)."""
        info = rate_info(rate)
        mini = self.draw_frames(rate, 1, snr) if info.fdp else []
        data = self.draw_frames(rate, info.frames, snr)
        return FrameOutcome(mini, data, frame_error_rate(rate, snr))


def valid_byte_ranges(frame_success: Sequence[bool], frame_bytes: int,
                      total_bytes: int) -> list[int]:
    """Flattened [start, end) byte ranges of the successful frames, adjacent ones merged.

    This is the minibytes_valid / databytes_valid layout of ReceivedPacket.
    """
    ranges: list[int] = []
    for index, ok in enumerate(frame_success):
        if not ok:
            continue
        start = index * frame_bytes
        end = min(total_bytes, start + frame_bytes)
        if start >= end:
            continue
        if ranges and ranges[-1] == start:
            ranges[-1] = end
        else:
            ranges += [start, end]
    return ranges
