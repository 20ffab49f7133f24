"""WHOI Micromodem-2 rate table: frame structure, byte budgets and on-air durations per rate.

One source of truth for the MACs (byte budgets, packet length), the simulator (durations, frames
drawn per packet) and the driver. FDP (flexible data protocol) is used on rates 1, 3 and 5; the
other rates are legacy packets. Durations are approximate figures published for the uModem2
(miniframe 1574 / 755 / 286 ms and a ~3.1 s dataframe for FDP rates 1 / 3 / 5); the legacy rates'
durations are estimates from their bit rates plus the same ~1 s probe/header overhead.
"""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class RateInfo:
    rate: int
    modulation: str
    frames: int                  # frames in a full dataframe (legacy: frames in the packet)
    frame_bytes: int             # bytes per frame
    fdp: bool                    # true when the rate supports FDP packets
    max_miniframe_bytes: int     # FDP miniframe capacity, bytes (0 for legacy rates)
    miniframe_duration_s: float  # FDP miniframe on-air time (0 for legacy rates)
    dataframe_duration_s: float  # on-air time of a full dataframe / legacy packet body

    @property
    def max_dataframe_bytes(self) -> int:
        return self.frames * self.frame_bytes

    @property
    def packet_duration_s(self) -> float:
        """On-air time of a full packet (miniframe + dataframe)."""
        return self.miniframe_duration_s + self.dataframe_duration_s


# The modem accepts up to 96 miniframe bytes on FDP rates; ros_acomms uses 72 by default to
# leave room for the modem's own miniframe header bytes.
FDP_MAX_MINIFRAME_BYTES = 96
DEFAULT_MINIFRAME_BYTES = 72

RATES: dict[int, RateInfo] = {
    r.rate: r
    for r in (
        RateInfo(0, "FH-FSK 80 bps", 1, 32, False, 0, 0.0, 4.2),
        RateInfo(1, "PSK BCH 128:8", 3, 64, True, FDP_MAX_MINIFRAME_BYTES, 1.574, 3.1),
        RateInfo(2, "PSK DSS 1/15", 3, 64, False, 0, 0.0, 6.5),
        RateInfo(3, "PSK DSS 1/7", 2, 256, True, FDP_MAX_MINIFRAME_BYTES, 0.755, 3.1),
        RateInfo(4, "PSK BCH 64:10", 2, 256, False, 0, 0.0, 6.0),
        RateInfo(5, "PSK Hamming 14:9", 8, 256, True, FDP_MAX_MINIFRAME_BYTES, 0.286, 3.1),
        RateInfo(6, "PSK DSS 1/15", 6, 32, False, 0, 0.0, 5.0),
    )
}
FDP_RATES = tuple(r for r, info in RATES.items() if info.fdp)


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
