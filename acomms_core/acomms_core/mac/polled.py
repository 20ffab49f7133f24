"""Polled MAC (ROS-free), after Goby's slot list: who transmits, at which rate, for how long.

`poll_list` is the cycle every vehicle walks on the shared clock from `cycle_start_time`: entries
"src:seconds" or "src:seconds:dataframe_rate", comma separated (e.g. "1:10, 2:10, 3:20:1"). In an
entry whose src is this vehicle's `src` (the stack sets it to the vehicle's modem address) the
vehicle may send packets (at that entry's dataframe rate when given) as long as a packet plus
`guard_time_seconds` still fits in the entry; all other entries it listens. The poll list changes
at run time through the parameter (validated like every parameter; a refused list keeps the old
one) and takes effect at the end of the current entry.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any

from acomms_core.mac.carrier_sense import COMMON_PARAMETERS, build_frames
from acomms_core.mac.policy import SEND_HELD, Action, RequestData, blame
from acomms_core.mac.tdma import SOFTWARE_MUTE_PARAMETER, TDMA_PARAMETERS, SoftwareMute, TdmaPolicy
from acomms_core.mac.tdma_schedule import (
    TIME_EPSILON,
    ScheduleError,
    frame_settings,
    parse_cycle_start_time,
)
from acomms_core.modems.profile import FrameBudget, ModemProfile
from acomms_core.ros.parameter_spec import ParameterSpec, spec_table

POLLED_PARAMETERS = COMMON_PARAMETERS + (
    ParameterSpec("poll_list", "1:10",
                  "The poll cycle: comma-separated entries 'src:seconds' or "
                  "'src:seconds:dataframe_rate'; the vehicle with that src transmits during "
                  "its entries"),
    ParameterSpec("src", 1, "This vehicle's modem address (set by the stack from the vehicle)",
                  0, 255),
    spec_table(TDMA_PARAMETERS)["cycle_start_time"],
    SOFTWARE_MUTE_PARAMETER,
)


@dataclasses.dataclass(frozen=True)
class PollEntry:
    src: int
    seconds: float
    frames: FrameBudget


@dataclasses.dataclass(frozen=True)
class PollPosition:
    index: int
    remaining_seconds: float
    serial: int  # counts entries since the cycle start (identifies one occurrence)


@dataclasses.dataclass(frozen=True)
class PolledConfig:
    entries: tuple[PollEntry, ...]
    frames: FrameBudget   # the default budget (entries without a rate of their own)
    profile: ModemProfile
    src: int
    cycle_start_time: float
    guard_time_seconds: float

    @property
    def cycle_seconds(self) -> float:
        return sum(entry.seconds for entry in self.entries)

    def position(self, now: float) -> PollPosition:
        cycle = self.cycle_seconds
        cycles, in_cycle = divmod(now - self.cycle_start_time, cycle)
        start = 0.0
        for index, entry in enumerate(self.entries):
            if in_cycle < start + entry.seconds or index == len(self.entries) - 1:
                remaining = max(0.0, start + entry.seconds - in_cycle)
                return PollPosition(index, remaining, int(cycles) * len(self.entries) + index)
            start += entry.seconds
        raise AssertionError("unreachable: the last entry always matches")

    def time_to_next_own(self, now: float) -> float:
        """Seconds until this vehicle's next entry starts (0 inside one; -1: it has none)."""
        here = self.position(now)
        if self.entries[here.index].src == self.src:
            return 0.0
        wait = here.remaining_seconds
        for offset in range(1, len(self.entries) + 1):
            entry = self.entries[(here.index + offset) % len(self.entries)]
            if entry.src == self.src:
                return wait
            wait += entry.seconds
        return -1.0


def parse_poll_list(text: str, values: Mapping[str, Any], profile: ModemProfile,
                    default: FrameBudget) -> tuple[PollEntry, ...]:
    """'src:seconds[:rate], ...' -> entries; ScheduleError naming the bad entry."""
    if not isinstance(text, str) or not text.strip():
        raise ScheduleError("empty: give at least one 'src:seconds' entry")
    entries = []
    for item in text.split(","):
        parts = [part.strip() for part in item.strip().split(":")]
        try:
            if len(parts) not in (2, 3):
                raise ValueError
            src, seconds = int(parts[0]), float(parts[1])
            rate = int(parts[2]) if len(parts) == 3 else None
        except ValueError:
            raise ScheduleError(f"entry {item.strip()!r} is not 'src:seconds' or "
                                "'src:seconds:dataframe_rate'") from None
        if not 0 <= src <= 255 or not math.isfinite(seconds) or seconds <= 0:
            raise ScheduleError(f"entry {item.strip()!r}: src must be 0..255 and seconds > 0")
        frames = default if rate is None else frame_settings(
            values["miniframe_rate"], rate, values["maximum_miniframe_bytes"],
            values["maximum_dataframe_bytes"], values["packet_length_seconds"], profile)
        if frames.packet_duration_s + values["guard_time_seconds"] > seconds:
            raise ScheduleError(
                f"entry {item.strip()!r}: a {frames.packet_duration_s:g} s packet plus the "
                f"{values['guard_time_seconds']:g} s guard does not fit in {seconds:g} s")
        entries.append(PollEntry(src, seconds, frames))
    return tuple(entries)


def build_polled_config(values: Mapping[str, Any]) -> PolledConfig:
    frames, profile = build_frames(values)
    with blame("cycle_start_time"):
        start = parse_cycle_start_time(values["cycle_start_time"])
    with blame("poll_list"):
        entries = parse_poll_list(values["poll_list"], values, profile, frames)
    return PolledConfig(entries, frames, profile, int(values["src"]), start,
                        float(values["guard_time_seconds"]))


class PolledPolicy(SoftwareMute, TdmaPolicy):
    """Transmit in the poll-list entries of this vehicle's src."""

    PARAMETERS = POLLED_PARAMETERS

    @classmethod
    def build_config(cls, values: Mapping[str, Any]):
        return build_polled_config(values)

    def boundary_after(self, now: float) -> float:
        return now + self.config.position(now).remaining_seconds

    def describe(self, config: PolledConfig, reason: str) -> str:
        listing = ", ".join(f"{e.src}:{e.seconds:g}" for e in config.entries)
        return (f"poll list ({reason}): [{listing}] ({config.cycle_seconds:g} s cycle), this "
                f"vehicle src {config.src}, guard {config.guard_time_seconds:g} s")

    def scan_horizon_s(self) -> float:
        return self.config.cycle_seconds

    def predictable(self) -> bool:
        return True

    def entry_frames(self, t: float) -> FrameBudget:
        """The frame budget of the poll entry at t."""
        return self.config.entries[self.config.position(t).index].frames

    def may_send(self, now: float, duration_s: float) -> bool:
        config: PolledConfig = self.config
        here = config.position(now)
        if self.software_mute or config.entries[here.index].src != config.src:
            return False
        if here.remaining_seconds + TIME_EPSILON < config.guard_time_seconds + duration_s:
            return False
        if self.last_tx_start is not None and self.last_tx_start <= now:
            free_at = self.last_tx_start + self.last_tx_length + config.guard_time_seconds
            return now + TIME_EPSILON >= free_at
        return True

    def could_act(self, t: float, duration_s: float) -> bool:
        return self.may_send(t, min(duration_s, self.entry_frames(t).packet_duration_s))

    def next_action(self, now: float, held: FrameBudget | None) -> Action:
        if held is not None:
            return SEND_HELD if self.may_send(now, held.packet_duration_s) else None
        frames, dest, fallback = self.adapt(now, self.entry_frames(now))
        if not self.may_send(now, frames.packet_duration_s):
            return None
        return RequestData(frames, dest=dest, fallback=fallback)

    def status(self, now: float) -> dict[str, Any]:
        """PolledStatus fields."""
        config: PolledConfig = self.config
        here = config.position(now)
        entry = config.entries[here.index]
        return {
            "we_are_active": entry.src == config.src and not self.software_mute,
            "software_mute": self.software_mute,
            "src": config.src,
            "current_entry": here.index,
            "current_src": entry.src,
            "remaining_entry_seconds": here.remaining_seconds,
            "time_to_next_own_entry": config.time_to_next_own(now),
            "cycle_seconds": config.cycle_seconds,
            "poll_srcs": [e.src for e in config.entries],
            "poll_seconds": [e.seconds for e in config.entries],
            "dataframe_rate": entry.frames.dataframe_rate,
        }
