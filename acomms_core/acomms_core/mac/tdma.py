"""Basic TDMA policy (ROS-free): parameters, validated configuration and transmit decisions.

`TDMA_PARAMETERS` is the one parameter table of the `tdma` MAC: tdma_node declares it and the
scenario loader checks scenario values against it. `TdmaPolicy.validate(values)` is the one pure
validator both use: it builds the configuration (`TdmaPolicy.build_config`) and returns the reason
it cannot work, prefixed with the parameter to blame.

At run time the policy decides transmit opportunities: in an active slot, when a packet of the
configured rates (frame budget from the `modem_profile`) still fits before the slot's guard time,
it asks for data with the slot's queue filter (`RequestData`), or lets a held packet go
(`SendHeld`). A valid parameter change is installed at the next slot boundary of the running
schedule (`apply`); always_send_test_data applies at once.
"""

from __future__ import annotations

import dataclasses
import math
from collections import Counter
from collections.abc import Mapping
from typing import Any

from acomms_core.mac.manual_transmit import (
    MANUAL_TRANSMIT_PARAMETER_NAMES,
    MANUAL_TRANSMIT_PARAMETERS,
    ManualTransmitQueue,
)
from acomms_core.mac.policy import SEND_HELD, Action, RequestData, blame
from acomms_core.mac.rate_adaptation import (
    RATE_PARAMETER_NAMES,
    RATE_PARAMETERS,
    RateAdapter,
    rate_settings,
)
from acomms_core.mac.tdma_schedule import (
    ScheduleError,
    SlotTags,
    TdmaSchedule,
    format_slots,
    frame_settings,
    parse_cycle_start_time,
    parse_slot_tags,
    parse_slots,
)
from acomms_core.modems.profile import FrameBudget, ModemProfile
from acomms_core.modems.registry import MODEM_PROFILE_PARAMETER, modem_profile
from acomms_core.ros.parameter_spec import ParameterSpec
from acomms_core.ros_acomms_params import PARAMS_FILE_PARAMETER

TDMA_PARAMETERS = (
    ParameterSpec("num_slots", 4, "Slots in one TDMA cycle", 1, 10000),
    ParameterSpec("slot_duration_seconds", 30.0, "Length of one slot, s", 0.001, 86400.0),
    ParameterSpec("cycle_start_time", "2024-01-01T00:00:00Z",
                  "When slot 0 of some cycle started: ISO 8601 (UTC if no zone) or seconds since "
                  "the epoch (number or string); every vehicle on the channel must use the same "
                  "value", dynamic_typing=True),
    ParameterSpec("active_slots", 0,
                  "Slots this vehicle transmits in: an int, a list, or a range string such as "
                  "'0,2,5:7' (ranges may wrap: '6:1')", dynamic_typing=True),
    ParameterSpec("guard_time_seconds", 5.0,
                  "Silence kept after each packet and before the end of a slot, s", 0.0, 3600.0),
    ParameterSpec("packet_length_seconds", -1.0,
                  "On-air time reserved per packet, s; negative: a full packet at the configured "
                  "rates (modem profile)", -1.0, 3600.0),
    ParameterSpec("always_send_test_data", False,
                  "Pad every packet to the full byte budget with zeros and send one in each "
                  "opportunity even when the queue is empty (channel testing)"),
    ParameterSpec("miniframe_rate", 1, "Modem rate number for miniframes", 0, 6),
    ParameterSpec("dataframe_rate", 5, "Modem rate number for dataframes", 0, 6),
    ParameterSpec("maximum_miniframe_bytes", -1,
                  "Miniframe bytes requested per packet; negative: the rate's default (72 on FDP "
                  "rates); clipped to what the rate carries", -1, 100000),
    ParameterSpec("maximum_dataframe_bytes", -1,
                  "Dataframe bytes requested per packet; negative: a full dataframe at the rate; "
                  "clipped to what the rate carries", -1, 100000),
    ParameterSpec("slot_tags", "",
                  "Per-slot queue filters: YAML text or a YAML file path with a list of "
                  "{slots, require_tags, exclude_tags, minimum_priority}; empty: none"),
    ParameterSpec("tick_period_seconds", 0.2,
                  "How often the transmit decision is made (node clock), s", 0.001, 10.0,
                  read_only=True),
    ParameterSpec("status_period_seconds", 1.0, "Status publishing period (node clock), s",
                  0.01, 3600.0, read_only=True),
    ParameterSpec("service_timeout_seconds", 5.0,
                  "Time to wait for the queue or modem to answer before giving up (wall clock; "
                  "a deterministic run waits for the answer instead), s",
                  0.1, 600.0),
    MODEM_PROFILE_PARAMETER,
    PARAMS_FILE_PARAMETER,  # issue 27: a ros_acomms TDMA parameter file, read as given
) + MANUAL_TRANSMIT_PARAMETERS + RATE_PARAMETERS


SOFTWARE_MUTE_PARAMETER = ParameterSpec("software_mute", False,
                                        "True: never transmit (applies at once)")


@dataclasses.dataclass(frozen=True)
class TdmaConfig:
    """Everything the MAC needs from its parameters, validated; swapped at slot boundaries."""

    schedule: TdmaSchedule
    frames: FrameBudget
    slot_tags: dict[int, SlotTags]
    untagged_slots: tuple[int, ...]  # active slots without tags ("dedicated" slots)
    profile: ModemProfile


MAX_DECISION_SCAN_TICKS = 5000  # next_decision_time_s looks at most this many ticks ahead
SKIP_MARGIN_TICKS = 2  # ticks next to the end of a closed stretch are checked one by one


def frames_from_values(values: Mapping[str, Any], profile: ModemProfile) -> FrameBudget:
    rates = getattr(profile, "rates", {})
    culprit = "miniframe_rate" if values["miniframe_rate"] not in rates else "dataframe_rate"
    with blame(culprit):
        return frame_settings(values["miniframe_rate"], values["dataframe_rate"],
                              values["maximum_miniframe_bytes"],
                              values["maximum_dataframe_bytes"],
                              values["packet_length_seconds"], profile)


def build_tdma_config(values: Mapping[str, Any]) -> TdmaConfig:
    """Validated configuration; ScheduleError('parameter: reason') says what is wrong."""
    with blame("modem_profile"):
        profile = modem_profile(values["modem_profile"])
    frames = frames_from_values(values, profile)
    num_slots = values["num_slots"]
    with blame("cycle_start_time"):
        parse_cycle_start_time(values["cycle_start_time"])
    with blame("active_slots"):
        if not parse_slots(values["active_slots"], num_slots):
            raise ScheduleError("no slot given: this vehicle could never transmit")
    with blame("slot_duration_seconds"):
        schedule = TdmaSchedule.create(
            num_slots=num_slots, slot_duration_seconds=values["slot_duration_seconds"],
            active_slots=values["active_slots"], cycle_start_time=values["cycle_start_time"],
            guard_time_seconds=values["guard_time_seconds"],
            packet_length_seconds=frames.packet_duration_s,
            skew_seconds=values.get("skew_cycle_sec", 0.0))
    with blame("slot_tags"):
        slot_tags = parse_slot_tags(values["slot_tags"], schedule.num_slots)
    untagged = tuple(s for s in schedule.active_slots
                     if not slot_tags.get(s, SlotTags()).is_tagged)
    return TdmaConfig(schedule, frames, slot_tags, untagged, profile)


class TdmaPolicy:
    """Transmit decisions of the basic TDMA MAC; tdma_advanced and tdma_scripted extend it."""

    PARAMETERS: tuple[ParameterSpec, ...] = TDMA_PARAMETERS
    # Parameters applied at once instead of at the next slot boundary.
    IMMEDIATE_PARAMETERS = frozenset({"always_send_test_data", "service_timeout_seconds",
                                      *MANUAL_TRANSMIT_PARAMETER_NAMES, *RATE_PARAMETER_NAMES})

    def __init__(self, logger, counters: Counter | None = None):
        self.log = logger  # rclpy-style: info/warning/error/debug(text, **throttle options)
        self.counters: Counter[str] = counters if counters is not None else Counter()
        self.identity = ""  # the node's name: keys seeded random draws (seeded_random)
        self.config = None
        self.pending: tuple[Any, float, float] | None = None  # config, apply_at, set_at
        self.always_send_test_data = False
        self.manual = ManualTransmitQueue(self.counters)  # user modem commands (tdma/nmea_to_modem)
        self.rates = RateAdapter()  # per-destination rates (rate_policy: adaptive)
        self._budget_values: tuple = (-1, -1, -1.0, None)  # max bytes, packet length, profile
        self.reset()

    # ----- configuration ------------------------------------------------------------------

    @classmethod
    def build_config(cls, values: Mapping[str, Any]):
        return build_tdma_config(values)

    @classmethod
    def validate(cls, values: Mapping[str, Any]) -> str | None:
        """Pure validator over the merged candidate values: the reason to refuse, or None."""
        try:
            cls.build_config(values)
            rate_settings(values)
        except ValueError as exc:  # ScheduleError, or a rate adaptation setting
            return str(exc)
        return None

    def reset(self) -> None:
        """Forget the channel history (configure, activate)."""
        self.last_tx_start: float | None = None
        self.last_tx_length = 0.0

    def apply_immediate(self, values: Mapping[str, Any]) -> None:
        self.always_send_test_data = bool(values["always_send_test_data"])
        self.manual.configure(values)
        profile = modem_profile(values["modem_profile"])
        self._budget_values = (values["maximum_miniframe_bytes"],
                               values["maximum_dataframe_bytes"],
                               values["packet_length_seconds"], profile)
        settings = rate_settings(values)
        if (settings, profile.broadcast_address) != (self.rates.settings,
                                                     self.rates.broadcast_address):
            self.rates.configure(settings, profile.broadcast_address)
            self.log.info(f"rate_policy {settings.policy}" + (
                f": rates {list(settings.candidates)}, fallback {settings.fallback}"
                if settings.adaptive else ""))

    def configure(self, values: Mapping[str, Any]) -> None:
        """Build (files are read again) and install; ScheduleError when it cannot work."""
        config = self.build_config(values)
        self.apply_immediate(values)
        self.reset()
        self.install(config, reason="configured")

    def apply(self, values: Mapping[str, Any], changed, now: float, active: bool) -> None:
        """An accepted change: immediate settings now, the schedule at the next slot boundary."""
        self.apply_immediate(values)
        if not set(changed) - self.IMMEDIATE_PARAMETERS:
            return
        try:
            config = self.build_config(values)
        except ScheduleError as exc:  # validated a moment ago; only a changed file can fail
            self.counters["config_errors"] += 1
            self.log.error(f"parameter change not applied: {exc}")
            return
        if not active or self.config is None:
            self.install(config, reason="parameters set")
            return
        apply_at = self.boundary_after(now)
        self.pending = (config, apply_at, now)
        self.log.info(f"schedule change accepted ({', '.join(sorted(changed))}); takes effect "
                      f"at the next slot boundary, t={apply_at:.3f}")

    def boundary_after(self, now: float) -> float:
        """When a schedule change accepted at `now` takes effect: the end of the current slot."""
        return now + self.config.schedule.position(now).remaining_slot_seconds

    def apply_pending(self, reason: str = "applied on deactivate") -> None:
        if self.pending is not None:
            self.install(self.pending[0], reason=reason)

    def install(self, config, reason: str) -> None:
        self.config = config
        self.pending = None
        self.on_config_installed(config)
        self.log.info(self.describe(config, reason))
        for note in config.frames.notes:
            self.counters["clipped_budgets"] += 1
            self.log.warning(note)

    def describe(self, config, reason: str) -> str:
        """One log line for an installed configuration."""
        schedule, frames = config.schedule, config.frames
        return (
            f"schedule ({reason}): {schedule.num_slots} slots x "
            f"{schedule.slot_duration_seconds:g} s, active {format_slots(schedule.active_slots)}, "
            f"guard {schedule.guard_time_seconds:g} s, packet "
            f"{schedule.packet_length_seconds:g} s, rates {frames.miniframe_rate}/"
            f"{frames.dataframe_rate}, budget {frames.maximum_miniframe_bytes}+"
            f"{frames.maximum_dataframe_bytes} bytes")

    def on_config_installed(self, config) -> None:
        """Hook for extensions."""

    # ----- decisions ----------------------------------------------------------------------

    def begin_tick(self, now: float) -> None:
        """Slot-boundary config swap and clock-jump handling, before any decision."""
        if self.pending is not None:
            config, apply_at, set_at = self.pending
            if now >= apply_at or now < set_at:  # boundary reached, or clock jumped back
                self.install(config, reason="slot boundary")
        if self.last_tx_start is not None and self.last_tx_start > now:
            self.counters["clock_jumps_back"] += 1
            self.log.warning(f"clock jumped back to {now:.3f} (last transmission at "
                             f"{self.last_tx_start:.3f}); forgetting the previous transmission")
            self.last_tx_start = None

    def may_send(self, now: float, duration_s: float) -> bool:
        return self.config.schedule.may_transmit(
            now, self.last_tx_start, duration_s, self.last_tx_length).allowed

    def next_action(self, now: float, held: FrameBudget | None) -> Action:
        """What to do now; `held` is the budget of a packet the pipeline holds, if any."""
        return self.data_action(now, held)

    def data_action(self, now: float, held: FrameBudget | None) -> Action:
        if held is not None:
            return SEND_HELD if self.may_send(now, held.packet_duration_s) else None
        frames, dest, fallback = self.adapt(now, self.frames_for_next_packet())
        if not self.may_send(now, frames.packet_duration_s):
            return None
        slot = self.config.schedule.position(now).current_slot
        return RequestData(frames, self.config.slot_tags.get(slot, SlotTags()),
                           self.on_opportunity(now), dest, fallback)

    def at_rate(self, frames: FrameBudget, dataframe_rate: int) -> FrameBudget:
        """The budget of `frames` with another dataframe rate (the configured byte limits and
        packet length, clipped to the rate)."""
        if dataframe_rate == frames.dataframe_rate:
            return frames
        mini, data, length, profile = self._budget_values
        return frame_settings(frames.miniframe_rate, dataframe_rate, mini, data, length, profile)

    def adapt(self, now: float, frames: FrameBudget
              ) -> tuple[FrameBudget, int | None, FrameBudget | None]:
        """(budget, destination to ask the queue for, budget of the fallback request) of the
        next request: with rate_policy adaptive, a destination whose link allows a faster rate
        than the fallback (they take turns), then, should the queue have nothing for it, any
        packet at the most robust rate (`acomms_core.mac.rate_adaptation`); else `frames`."""
        if not self.rates.settings.adaptive:
            return frames, None, None
        dest, rate = self.rates.next_target(now)
        fallback = self.at_rate(frames, self.rates.settings.fallback)
        if dest is None:
            return fallback, None, None
        return self.at_rate(frames, rate), dest, fallback

    def next_decision_time_s(self, now: float, held: FrameBudget | None,
                             tick_s: float) -> float | None:
        """The first tick time after now at which a tick could do anything (a packet may start,
        a pending schedule takes effect), scanning ticks now + k·tick_s up to one cycle; None:
        tick as usual (a policy whose decisions this scan does not cover, e.g. pings). Ticks
        before it would only find nothing to do, so the node may sleep through them."""
        if not self.predictable() or self.config is None:
            return None
        duration = held.packet_duration_s if held else self.shortest_packet_s()
        horizon = max(1, min(MAX_DECISION_SCAN_TICKS, int(self.scan_horizon_s() / tick_s) + 1))
        # where could_act is the schedule's may_send, the ticks of a stretch the schedule keeps
        # closed are stepped over (to SKIP_MARGIN_TICKS before its end, scanned as usual)
        skips = (type(self).could_act is TdmaPolicy.could_act
                 and type(self).may_send is TdmaPolicy.may_send)
        k = 1
        while k <= horizon:
            t = now + k * tick_s
            if self.pending is not None and t >= self.pending[1]:
                return t
            if self.could_act(t, duration):
                return t
            if skips:
                k = max(k, self._last_closed_tick(now, t, duration, tick_s))
            k += 1
        return now + horizon * tick_s

    def _last_closed_tick(self, now: float, t: float, duration_s: float, tick_s: float) -> int:
        """A tick index k (t = now + k·tick_s) up to which every tick falls where the schedule
        refuses this packet and before any pending change: those ticks need no look."""
        closed_s = self.config.schedule.closed_for_s(t, duration_s)
        until = t + closed_s
        if self.pending is not None:
            until = min(until, self.pending[1])
        if until == math.inf:
            return MAX_DECISION_SCAN_TICKS
        return int((until - now) / tick_s) - SKIP_MARGIN_TICKS

    def scan_horizon_s(self) -> float:
        """How far ahead next_decision_time_s looks: one cycle (every opportunity repeats)."""
        return self.config.schedule.cycle_duration_seconds

    def predictable(self) -> bool:
        """Whether `could_act` covers every decision of next_action (extensions that add
        actions the scan does not know about, e.g. pings, return False)."""
        return type(self).next_action is TdmaPolicy.next_action

    def could_act(self, t: float, duration_s: float) -> bool:
        """Whether a tick at t could start a packet of this length (for next_decision_time_s)."""
        return self.may_send(t, duration_s)

    def frames_for_next_packet(self) -> FrameBudget:
        return self.config.frames

    def shortest_packet_s(self) -> float:
        """On-air time of the shortest packet the next request may ask for (any candidate rate
        under rate adaptation), for next_decision_time_s."""
        frames = self.frames_for_next_packet()
        if not self.rates.settings.adaptive:
            return frames.packet_duration_s
        return min(self.at_rate(frames, rate).packet_duration_s
                   for rate in self.rates.settings.candidates)

    def on_opportunity(self, now: float) -> tuple[str, ...]:
        """Hook: a packet may start now; returns modem commands to issue first."""
        return ()

    def on_transmit(self, frames: FrameBudget, now: float) -> None:
        """A packet with this budget goes to the modem now."""
        self.last_tx_start = now
        self.last_tx_length = frames.packet_duration_s

    def on_nothing_to_send(self, now: float, frames: FrameBudget) -> None:
        """Hook: the queue had nothing for this opportunity."""

    # ----- status -------------------------------------------------------------------------

    def software_muted(self) -> bool:
        return False

    def status(self, now: float) -> dict[str, Any]:
        """TdmaStatus fields (header aside)."""
        config = self.config
        schedule = config.schedule
        here = schedule.position(now)
        tags = config.slot_tags.get(here.current_slot, SlotTags())
        return {
            "we_are_active": schedule.is_active(here.current_slot) and not self.software_muted(),
            "current_slot": here.current_slot,
            "minimum_priority": tags.minimum_priority or 0,
            "require_tags": list(tags.require_tags),
            "exclude_tags": list(tags.exclude_tags),
            "remaining_slot_seconds": here.remaining_slot_seconds,
            "remaining_active_seconds": schedule.remaining_active_seconds(now),
            "time_to_next_active": schedule.time_to_next_active(now),
            "time_to_next_dedicated_slot": schedule.time_to_next_in(now, config.untagged_slots),
            "slot_duration_seconds": schedule.slot_duration_seconds,
        }


class SoftwareMute:
    """Mixin for policies with the software_mute parameter: applied at once, and no
    transmission while it is true (next_action checks `software_mute`)."""

    software_mute = False
    IMMEDIATE_PARAMETERS = TdmaPolicy.IMMEDIATE_PARAMETERS | {"software_mute"}

    def apply_immediate(self, values: Mapping[str, Any]) -> None:
        super().apply_immediate(values)
        muted = bool(values["software_mute"])
        if muted != self.software_mute:
            self.log.warning(f"software_mute is now {muted}")
        self.software_mute = muted

    def software_muted(self) -> bool:
        return self.software_mute
