"""WHOI Micromodem-2 as a modem profile (rate table in `acomms_core.modems.modem_rates`)."""

from __future__ import annotations

from acomms_core.modems.modem_rates import (
    DEFAULT_MINIFRAME_BYTES,
    DEFAULT_TX_LEVEL,
    RATES,
    UnknownRateError,
    frames_used,
    legacy_duration_s,
    rate_info,
    source_level_db,
)
from acomms_core.modems.profile import (
    PACKET_TYPE_AUTO,
    PACKET_TYPE_FDP,
    PACKET_TYPE_FSK,
    PACKET_TYPE_LEGACY_PSK,
    PACKET_TYPE_UNKNOWN,
    FrameBudget,
    PacketRefused,
)


class Micromodem2Profile:
    name = "micromodem2"
    # ros_acomms' default destination, used by every vehicle as "everyone".
    broadcast_address = 121
    rates = RATES
    default_tx_level = DEFAULT_TX_LEVEL

    def rate_info(self, rate: int):
        return rate_info(rate)

    def is_fdp(self, packet_type: int, dataframe_rate: int) -> bool:
        if packet_type == PACKET_TYPE_FDP:
            return True
        if packet_type in (PACKET_TYPE_AUTO, PACKET_TYPE_UNKNOWN):
            try:
                return rate_info(dataframe_rate).fdp
            except UnknownRateError as exc:
                raise PacketRefused(str(exc)) from None
        if packet_type in (PACKET_TYPE_FSK, PACKET_TYPE_LEGACY_PSK):
            return False
        raise PacketRefused(f"unknown packet_type {packet_type}")

    def frame_budget(self, miniframe_rate: int, dataframe_rate: int,
                     maximum_miniframe_bytes: int = -1, maximum_dataframe_bytes: int = -1,
                     packet_duration_s: float = -1.0) -> FrameBudget:
        """A negative maximum means the rate's default (72 miniframe bytes on FDP rates, a full
        dataframe); a larger one is clipped to what the rate carries (noted). A legacy dataframe
        rate has no miniframe. A negative duration means a full packet at these rates."""
        try:
            mini, data = rate_info(miniframe_rate), rate_info(dataframe_rate)
        except UnknownRateError as exc:
            raise PacketRefused(str(exc)) from None
        notes = []
        mini_capacity = mini.max_miniframe_bytes if data.fdp else 0

        def clip(name, requested, default, capacity, rate):
            if requested < 0:
                return min(default, capacity)
            if requested > capacity:
                notes.append(f"{name} {requested} clipped to {capacity}, the most rate {rate} "
                             "carries")
                return capacity
            return int(requested)

        mini_bytes = clip("maximum_miniframe_bytes", maximum_miniframe_bytes,
                          DEFAULT_MINIFRAME_BYTES, mini_capacity, miniframe_rate)
        data_bytes = clip("maximum_dataframe_bytes", maximum_dataframe_bytes,
                          data.max_dataframe_bytes, data.max_dataframe_bytes, dataframe_rate)
        if packet_duration_s < 0:
            packet_duration_s = ((mini.miniframe_duration_s if data.fdp else 0.0)
                                 + data.dataframe_duration_s)
        return FrameBudget(int(miniframe_rate), int(dataframe_rate), mini_bytes, data_bytes,
                           float(packet_duration_s), tuple(notes))

    def packet_duration_s(self, fdp: bool, miniframe_rate: int, dataframe_rate: int,
                          num_miniframe_bytes: int, num_dataframe_bytes: int) -> float:
        """FDP: miniframe + (a full dataframe if any data bytes); legacy: overhead + the frames
        the bytes occupy (at least one) at the rate's bit rate (`modem_rates`)."""
        try:
            data = rate_info(dataframe_rate)
            if not fdp:
                frames = max(1, frames_used(dataframe_rate, num_dataframe_bytes))
                return legacy_duration_s(frames, data.frame_bytes, data.bit_rate_bps)
            mini = rate_info(miniframe_rate)
        except UnknownRateError as exc:
            raise PacketRefused(str(exc)) from None
        if not (mini.fdp and data.fdp):
            raise PacketRefused(
                f"FDP packets use rates {sorted(r for r in RATES if RATES[r].fdp)}; got "
                f"miniframe rate {miniframe_rate}, dataframe rate {dataframe_rate}")
        duration = mini.miniframe_duration_s
        if num_dataframe_bytes > 0:
            duration += data.dataframe_duration_s
        return duration

    def source_level_db(self, tx_level: int, center_frequency_hz: float) -> float:
        """Source level of pwramp.txlevel 0..3 in this band (`modem_rates.SOURCE_LEVELS_DB`)."""
        return source_level_db(tx_level, center_frequency_hz)

    def check_packet(self, fdp: bool, miniframe_rate: int, dataframe_rate: int,
                     num_miniframe_bytes: int, num_dataframe_bytes: int) -> None:
        try:
            data = rate_info(dataframe_rate)
            mini = rate_info(miniframe_rate) if fdp else None
        except UnknownRateError as exc:
            raise PacketRefused(str(exc)) from None
        if fdp:
            if num_miniframe_bytes > mini.max_miniframe_bytes:
                raise PacketRefused(f"{num_miniframe_bytes} miniframe bytes exceed the "
                                    f"{mini.max_miniframe_bytes} allowed at rate {miniframe_rate}")
        elif num_miniframe_bytes > 0:
            raise PacketRefused("legacy (non-FDP) packets carry no miniframe bytes")
        if num_dataframe_bytes > data.max_dataframe_bytes:
            raise PacketRefused(f"{num_dataframe_bytes} dataframe bytes exceed the "
                                f"{data.max_dataframe_bytes} allowed at rate {dataframe_rate}")
        if fdp:
            self.packet_duration_s(True, miniframe_rate, dataframe_rate, num_miniframe_bytes,
                                   num_dataframe_bytes)  # refuses rates that carry no FDP


MICROMODEM2 = Micromodem2Profile()
