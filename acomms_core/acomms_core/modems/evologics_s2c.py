"""EvoLogics S2C R 18/34 as a modem profile: instant messages and burst data.

Facts (EvoLogics' public S2C R 18/34 datasheet and AT command documentation):
- frequency band 18-34 kHz (here: carrier 26 kHz, bandwidth 16 kHz);
- acoustic data rate up to 13.9 kbit/s;
- instant messages (`AT*SENDIM`) carry at most 64 bytes; burst data (`AT*SEND`) at most 1024 bytes
  per command; the broadcast address is 255;
- source level is set in four steps, `AT!L0` (loudest) to `AT!L3`.

Modelling assumptions (no published figure; change here if measured):
- an instant message lasts 0.15 s of preamble/overhead plus its bytes at 1000 bit/s (a 4-byte
  message ≈ 0.18 s, close to the 182 ms `SENDSTART` duration seen in public S2C logs; 64 bytes
  ≈ 0.66 s);
- burst data lasts 0.3 s of connection set-up plus its bytes at the 13.9 kbit/s maximum (1024
  bytes ≈ 0.89 s); real links often negotiate a lower rate;
- source levels 184 / 178 / 172 / 166 dB re 1 µPa @ 1 m for `AT!L0`..`AT!L3` (6 dB steps from an
  assumed maximum), independent of frequency.

Rates (the profile's two "rates", so MACs budget with the same seam as for the Micromodem):
rate 1 = instant message (`IM_RATE`), rate 5 = burst (`BURST_RATE`); neither has a miniframe and
neither is FDP. `packet_kind(num_bytes)` says which one a driver uses for a payload.
"""

from __future__ import annotations

from acomms_core.modems.modem_rates import RateInfo
from acomms_core.modems.profile import (
    PACKET_TYPE_AUTO,
    PACKET_TYPE_LEGACY_PSK,
    PACKET_TYPE_UNKNOWN,
    FrameBudget,
    PacketRefused,
)

IM_RATE, BURST_RATE = 1, 5
MAX_IM_BYTES, MAX_BURST_BYTES = 64, 1024
IM_OVERHEAD_S, IM_BIT_RATE_BPS = 0.15, 1000.0          # modelling assumption (docstring)
BURST_OVERHEAD_S, BURST_BIT_RATE_BPS = 0.3, 13900.0    # 13.9 kbit/s: datasheet maximum
CARRIER_HZ, BANDWIDTH_HZ = 26000, 16000
SOURCE_LEVELS_DB = (184.0, 178.0, 172.0, 166.0)        # modelling assumption (docstring)
_OVERHEAD_S = {IM_RATE: IM_OVERHEAD_S, BURST_RATE: BURST_OVERHEAD_S}


def _rate(rate, name, size, overhead_s, bit_rate):
    return RateInfo(rate, name, 1, size, False, 0, 0.0, overhead_s + size * 8.0 / bit_rate,
                    bit_rate)


RATES = {IM_RATE: _rate(IM_RATE, "S2C instant message", MAX_IM_BYTES, IM_OVERHEAD_S,
                        IM_BIT_RATE_BPS),
         BURST_RATE: _rate(BURST_RATE, "S2C burst data", MAX_BURST_BYTES, BURST_OVERHEAD_S,
                           BURST_BIT_RATE_BPS)}


def packet_kind(num_bytes: int) -> str:
    """"im" up to 64 bytes, "burst" up to 1024; PacketRefused beyond."""
    if num_bytes <= MAX_IM_BYTES:
        return "im"
    if num_bytes <= MAX_BURST_BYTES:
        return "burst"
    raise PacketRefused(f"{num_bytes} bytes exceed the S2C burst limit of {MAX_BURST_BYTES}")


class EvologicsS2CProfile:
    """EvoLogics S2C R 18/34: instant messages (rate 1, <= 64 B) and burst data (rate 5)."""

    name = "evologics_s2c"
    broadcast_address = 255
    rates = RATES
    default_tx_level = 0
    carrier_hz = CARRIER_HZ
    bandwidth_hz = BANDWIDTH_HZ

    def rate_info(self, rate: int) -> RateInfo:
        try:
            return RATES[rate]
        except (KeyError, TypeError):
            raise ValueError(f"unknown S2C rate {rate!r}; rates are {IM_RATE} (instant message) "
                             f"and {BURST_RATE} (burst)") from None

    def _info(self, rate: int) -> RateInfo:
        try:
            return self.rate_info(rate)
        except ValueError as exc:
            raise PacketRefused(str(exc)) from None

    def is_fdp(self, packet_type: int, dataframe_rate: int) -> bool:
        if packet_type in (PACKET_TYPE_AUTO, PACKET_TYPE_UNKNOWN, PACKET_TYPE_LEGACY_PSK):
            return False
        raise PacketRefused(f"packet_type {packet_type} is not sent by an S2C modem "
                            "(auto or legacy_psk only)")

    def frame_budget(self, miniframe_rate: int, dataframe_rate: int,
                     maximum_miniframe_bytes: int = -1, maximum_dataframe_bytes: int = -1,
                     packet_duration_s: float = -1.0) -> FrameBudget:
        """No miniframe; data bytes default to (and are clipped at) the rate's limit."""
        info = self._info(dataframe_rate)
        notes = []
        if maximum_miniframe_bytes > 0:
            notes.append(f"maximum_miniframe_bytes {maximum_miniframe_bytes} clipped to 0 (S2C "
                         "packets have no miniframe)")
        data_bytes = info.max_dataframe_bytes
        if 0 <= maximum_dataframe_bytes <= data_bytes:
            data_bytes = int(maximum_dataframe_bytes)
        elif maximum_dataframe_bytes > data_bytes:
            notes.append(f"maximum_dataframe_bytes {maximum_dataframe_bytes} clipped to "
                         f"{data_bytes}, the most rate {dataframe_rate} carries")
        if packet_duration_s < 0:
            packet_duration_s = info.dataframe_duration_s
        return FrameBudget(int(miniframe_rate), int(dataframe_rate), 0, data_bytes,
                           float(packet_duration_s), tuple(notes))

    def packet_duration_s(self, fdp: bool, miniframe_rate: int, dataframe_rate: int,
                          num_miniframe_bytes: int, num_dataframe_bytes: int) -> float:
        """Overhead + the bytes at the rate's bit rate (see the module docstring)."""
        if fdp:
            raise PacketRefused("S2C modems send no FDP packets")
        info = self._info(dataframe_rate)
        num_bytes = max(0, num_miniframe_bytes) + max(0, num_dataframe_bytes)
        return _OVERHEAD_S[info.rate] + num_bytes * 8.0 / info.bit_rate_bps

    def source_level_db(self, tx_level: int, center_frequency_hz: float) -> float:
        """Source level of `AT!L0`..`AT!L3` (module docstring; the band does not matter)."""
        if tx_level not in range(len(SOURCE_LEVELS_DB)):
            raise ValueError(f"S2C source level {tx_level!r} is not 0-3")
        return SOURCE_LEVELS_DB[tx_level]

    def check_packet(self, fdp: bool, miniframe_rate: int, dataframe_rate: int,
                     num_miniframe_bytes: int, num_dataframe_bytes: int) -> None:
        if fdp:
            raise PacketRefused("S2C modems send no FDP packets")
        if num_miniframe_bytes > 0:
            raise PacketRefused("S2C packets carry no miniframe bytes")
        info = self._info(dataframe_rate)
        if num_dataframe_bytes > info.max_dataframe_bytes:
            raise PacketRefused(f"{num_dataframe_bytes} bytes exceed the "
                                f"{info.max_dataframe_bytes} allowed at rate {dataframe_rate} "
                                f"({info.modulation})")


EVOLOGICS_S2C = EvologicsS2CProfile()
