"""WHOI Micromodem-2 rate table: frame structure, byte budgets, bit rates, on-air durations and
source levels. One source of truth for the MACs (byte budgets, packet length), the simulator
(durations, frames drawn per packet, Eb/N0 of a rate, source level per txlevel) and the emulator.

FDP (flexible data protocol) is used on rates 1, 3 and 5; the other rates are legacy packets.

Durations (what ros_acomms' modem model records for the uModem2): FDP miniframes 1.574 / 0.755 /
0.286 s and full dataframes 3.072 / 3.072 / 3.000 s for rates 1 / 3 / 5. An FDP dataframe always
goes out whole (its duration does not depend on how many of its bytes are used).
Information bit rate of a rate = full dataframe bits / dataframe duration (rate 1: 192 B in
3.072 s = 500 bps; rate 3: 512 B = 1333 bps; rate 5: 2048 B = 5461 bps). The legacy rates have no
published durations; their bit rates come from the FDP rate with the same coding class (rates 2
and 6, DSS 1/15, take rate 1's BCH 128:8 ≈ 1/16 rate: 500 bps; rate 4, BCH 64:10 ≈ 1/6.4, takes
rate 3's DSS 1/7: 1333 bps) and rate 0 is 80 bps FH-FSK. A legacy packet lasts
    LEGACY_OVERHEAD_S + frames sent × frame bytes × 8 / bit rate
(the cycle-init/probe overhead of ~1 s before the frames), e.g. a full rate-2 packet 4.072 s and
a one-frame rate-2 packet 2.024 s, in `modem_sim_node` and the emulator alike.

Source level (dB re 1 µPa @ 1 m) per `pwramp.txlevel` 0..3 (0 loudest), as recorded by
ros_acomms: 185 / 181 / 179 / 167 dB in the 25 kHz band and 183 / 179 / 177 / 165 dB in the
10 kHz band; between the two bands the level is interpolated linearly in frequency, outside them
the nearer band's value holds.
"""

from __future__ import annotations

import dataclasses

import numpy as np


@dataclasses.dataclass(frozen=True)
class RateInfo:
    rate: int
    modulation: str
    frames: int                  # frames in a full dataframe (legacy: frames in the packet)
    frame_bytes: int             # bytes per frame
    fdp: bool                    # true when the rate supports FDP packets
    max_miniframe_bytes: int     # FDP miniframe capacity, bytes (0 for legacy rates)
    miniframe_duration_s: float  # FDP miniframe on-air time (0 for legacy rates)
    dataframe_duration_s: float  # on-air time of a full dataframe / full legacy packet
    bit_rate_bps: float = 0.0    # information bit rate of the dataframe
    noncoherent_fsk: bool = False  # rate 0: FH-FSK (non-coherent), others coherent PSK

    @property
    def max_dataframe_bytes(self) -> int:
        return self.frames * self.frame_bytes

    @property
    def packet_duration_s(self) -> float:
        """On-air time of a full packet (miniframe + dataframe)."""
        return self.miniframe_duration_s + self.dataframe_duration_s

    @property
    def frame_duration_s(self) -> float:
        """On-air time of one dataframe frame (FDP: the dataframe shared equally)."""
        return self.frame_bytes * 8.0 / self.bit_rate_bps


# The modem accepts up to 96 miniframe bytes on FDP rates; ros_acomms uses 72 by default to
# leave room for the modem's own miniframe header bytes.
FDP_MAX_MINIFRAME_BYTES = 96
DEFAULT_MINIFRAME_BYTES = 72
LEGACY_OVERHEAD_S = 1.0  # cycle-init / probe before the frames of a legacy packet (estimate)
NOMINAL_BANDWIDTH_HZ = 5000.0  # the band the FER tables and Eb/N0 conversions refer to

# FDP: (frames, frame bytes, miniframe s, dataframe s) -> bit rate from the dataframe.
_FDP = {1: (3, 64, 1.574, 3.072), 3: (2, 256, 0.755, 3.072), 5: (8, 256, 0.286, 3.000)}
_FDP_BPS = {r: f * b * 8.0 / d for r, (f, b, _, d) in _FDP.items()}
_LEGACY = {0: (1, 32, 80.0), 2: (3, 64, _FDP_BPS[1]), 4: (2, 256, _FDP_BPS[3]),
           6: (6, 32, _FDP_BPS[1])}
_NAMES = {0: "FH-FSK 80 bps", 1: "PSK BCH 128:8", 2: "PSK DSS 1/15", 3: "PSK DSS 1/7",
          4: "PSK BCH 64:10", 5: "PSK Hamming 14:9", 6: "PSK DSS 1/15"}


def legacy_duration_s(frames: int, frame_bytes: int, bit_rate_bps: float) -> float:
    return LEGACY_OVERHEAD_S + frames * frame_bytes * 8.0 / bit_rate_bps


def _rate(rate: int) -> RateInfo:
    if rate in _FDP:
        frames, size, mini_s, data_s = _FDP[rate]
        return RateInfo(rate, _NAMES[rate], frames, size, True, FDP_MAX_MINIFRAME_BYTES, mini_s,
                        data_s, _FDP_BPS[rate])
    frames, size, bps = _LEGACY[rate]
    return RateInfo(rate, _NAMES[rate], frames, size, False, 0, 0.0,
                    legacy_duration_s(frames, size, bps), bps, noncoherent_fsk=rate == 0)


RATES: dict[int, RateInfo] = {r: _rate(r) for r in range(7)}
FDP_RATES = tuple(r for r, info in RATES.items() if info.fdp)

# txlevel -> source level, dB re 1 uPa @ 1 m, per band centre (Hz).
SOURCE_LEVELS_DB: dict[float, tuple[float, ...]] = {
    10000.0: (183.0, 179.0, 177.0, 165.0),
    25000.0: (185.0, 181.0, 179.0, 167.0),
}
TX_LEVELS = (0, 1, 2, 3)
DEFAULT_TX_LEVEL = 3  # the modem's default pwramp.txlevel


class UnknownRateError(ValueError):
    pass


def rate_info(rate: int) -> RateInfo:
    """RateInfo for a Micromodem rate number; UnknownRateError names the valid ones."""
    try:
        return RATES[int(rate)]
    except (KeyError, TypeError, ValueError):
        raise UnknownRateError(
            f"unknown Micromodem rate {rate!r}; valid rates are {sorted(RATES)}") from None


def frames_used(rate: int, dataframe_bytes: int) -> int:
    """Number of dataframe frames a payload of this many bytes occupies at this rate."""
    info = rate_info(rate)
    if dataframe_bytes <= 0:
        return 0
    return min(info.frames, -(-dataframe_bytes // info.frame_bytes))


def source_level_db(tx_level: int, center_frequency_hz: float) -> float:
    """Source level of `pwramp.txlevel` tx_level (0..3) in the band at center_frequency_hz;
    ValueError for an unknown level."""
    if int(tx_level) not in TX_LEVELS or int(tx_level) != tx_level:
        raise ValueError(f"txlevel {tx_level!r} outside {list(TX_LEVELS)}")
    bands = sorted(SOURCE_LEVELS_DB)
    levels = [SOURCE_LEVELS_DB[band][int(tx_level)] for band in bands]
    return float(np.interp(center_frequency_hz, bands, levels))
