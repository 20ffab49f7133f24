"""Advanced TDMA policy (ROS-free): software mute, nav/comms slots, modem pings, skew.

On top of `TdmaPolicy`: software_mute stops every transmission at once; nav_slots / comms_slots
select which active slots carry navigation pings and which carry data ("" = every active slot,
"none" = no slot; slots outside active_slots are ignored); at the start of each nav slot the
policy asks for pings_per_slot modem pings and then one transponder ping, each only when its reply
timeout plus the guard time still fits in the slot; skew_cycle_sec shifts the whole cycle.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from acomms_core.mac.policy import WAIT, Action, Ping, blame
from acomms_core.mac.tdma import (
    SOFTWARE_MUTE_PARAMETER,
    TDMA_PARAMETERS,
    SoftwareMute,
    TdmaConfig,
    TdmaPolicy,
    build_tdma_config,
)
from acomms_core.mac.tdma_schedule import ScheduleError, format_slots, parse_slots
from acomms_core.modems.profile import FrameBudget
from acomms_core.ros.parameter_spec import ParameterSpec

ADVANCED_PARAMETERS = (
    SOFTWARE_MUTE_PARAMETER,
    ParameterSpec("nav_slots", "",
                  "Active slots that carry navigation pings: int, list or range string; "
                  "'' = every active slot, 'none' = no slot", dynamic_typing=True),
    ParameterSpec("comms_slots", "",
                  "Active slots that carry data packets: int, list or range string; "
                  "'' = every active slot, 'none' = no slot", dynamic_typing=True),
    ParameterSpec("skew_cycle_sec", 0.0, "Shift of this vehicle's cycle start, s",
                  -86400.0, 86400.0),
    ParameterSpec("pings_per_slot", 0, "Modem pings sent at the start of each nav slot", 0, 100),
    ParameterSpec("ping_modem", True, "Send the pings_per_slot modem pings in nav slots"),
    ParameterSpec("ping_modem_src", 1, "Modem address to ping", 0, 255),
    ParameterSpec("ping_modem_timeout_sec", 5.0, "Reply timeout of a modem ping (node clock), s",
                  1.0, 600.0),
    ParameterSpec("ping_cdr", 4, "Coprocessor data rate code sent with modem pings", 0, 255),
    ParameterSpec("ping_transponders", False, "Ping navigation transponders once per nav slot"),
    ParameterSpec("ping_transponder_a", True, "Include transponder A in transponder pings"),
    ParameterSpec("ping_transponder_b", True, "Include transponder B in transponder pings"),
    ParameterSpec("ping_transponder_c", True, "Include transponder C in transponder pings"),
    ParameterSpec("ping_transponder_d", True, "Include transponder D in transponder pings"),
    ParameterSpec("transponder_reply_timeout_sec", 5.0,
                  "Reply timeout of a transponder ping (node clock), s", 0.1, 600.0),
)


@dataclasses.dataclass(frozen=True)
class PingSettings:
    pings_per_slot: int = 0
    ping_modem: bool = True
    ping_modem_src: int = 1
    ping_modem_timeout_sec: float = 5.0
    ping_cdr: int = 4
    ping_transponders: bool = False
    transponder_mask: tuple[bool, bool, bool, bool] = (True, True, True, True)
    transponder_reply_timeout_sec: float = 5.0

    @property
    def modem_pings(self) -> int:
        return self.pings_per_slot if self.ping_modem else 0


@dataclasses.dataclass(frozen=True)
class AdvancedConfig(TdmaConfig):
    nav_slots: tuple[int, ...] = ()
    comms_slots: tuple[int, ...] = ()
    pings: PingSettings = PingSettings()


def slot_mask(value, active_slots: tuple[int, ...], num_slots: int) -> tuple[int, ...]:
    """nav_slots/comms_slots value -> the active slots it selects."""
    if isinstance(value, str) and value.strip() == "":
        return active_slots
    if isinstance(value, str) and value.strip().lower() == "none":
        return ()
    wanted = set(parse_slots(value, num_slots))
    return tuple(slot for slot in active_slots if slot in wanted)


def _ping_settings(values: Mapping[str, Any]) -> PingSettings:
    return PingSettings(
        pings_per_slot=values["pings_per_slot"], ping_modem=values["ping_modem"],
        ping_modem_src=values["ping_modem_src"],
        ping_modem_timeout_sec=values["ping_modem_timeout_sec"],
        ping_cdr=values["ping_cdr"], ping_transponders=values["ping_transponders"],
        transponder_mask=tuple(bool(values[f"ping_transponder_{x}"]) for x in "abcd"),
        transponder_reply_timeout_sec=values["transponder_reply_timeout_sec"])


def _check_pings_fit(pings: PingSettings, schedule) -> None:
    for name, enabled, timeout in (
            ("ping_modem_timeout_sec", pings.modem_pings > 0, pings.ping_modem_timeout_sec),
            ("transponder_reply_timeout_sec", pings.ping_transponders,
             pings.transponder_reply_timeout_sec)):
        if enabled and timeout + schedule.guard_time_seconds >= schedule.slot_duration_seconds:
            raise ScheduleError(
                f"{name}: {name} + guard_time_seconds ({timeout:g} + "
                f"{schedule.guard_time_seconds:g}) must be less than slot_duration_seconds "
                f"({schedule.slot_duration_seconds:g}), otherwise no ping fits in a nav slot")


def build_advanced_config(values: Mapping[str, Any]) -> AdvancedConfig:
    base = build_tdma_config(values)
    schedule = base.schedule
    pings = _ping_settings(values)
    masks = {}
    for name in ("nav_slots", "comms_slots"):
        with blame(name):
            masks[name] = slot_mask(values[name], schedule.active_slots, schedule.num_slots)
    if masks["nav_slots"]:
        _check_pings_fit(pings, schedule)
    return AdvancedConfig(**{f.name: getattr(base, f.name) for f in dataclasses.fields(TdmaConfig)},
                          nav_slots=masks["nav_slots"], comms_slots=masks["comms_slots"],
                          pings=pings)


class TdmaAdvancedPolicy(SoftwareMute, TdmaPolicy):
    """TDMA with mute, nav pings and comms/nav slot masks."""

    PARAMETERS = TDMA_PARAMETERS + ADVANCED_PARAMETERS

    @classmethod
    def build_config(cls, values: Mapping[str, Any]):
        return build_advanced_config(values)

    def reset(self) -> None:
        super().reset()
        self.nav_slot_serial = None
        self.modem_pings_sent = 0
        self.transponder_pinged = False

    # ----- decisions ----------------------------------------------------------------------

    def next_action(self, now: float, held: FrameBudget | None) -> Action:
        if self.software_mute:
            return None
        config: AdvancedConfig = self.config
        serial = config.schedule.slot_serial(now)
        if serial != self.nav_slot_serial:
            self.nav_slot_serial = serial
            self.modem_pings_sent = 0
            self.transponder_pinged = False
        slot = config.schedule.position(now).current_slot
        if slot in config.nav_slots:
            action = self._nav_ping(now, config)
            if action is not None:
                return action
        if slot in config.comms_slots:
            return self.data_action(now, held)
        return None

    def _nav_ping(self, now: float, config: AdvancedConfig) -> Action:
        """The next ping due in this nav slot, WAIT while pings hold the channel, else None."""
        pings, schedule = config.pings, config.schedule
        remaining = schedule.position(now).remaining_slot_seconds
        for kind, due, timeout in (
                ("modem", self.modem_pings_sent < pings.modem_pings,
                 pings.ping_modem_timeout_sec),
                ("transponder", pings.ping_transponders and not self.transponder_pinged,
                 pings.transponder_reply_timeout_sec)):
            if not due:
                continue
            if remaining < timeout + schedule.guard_time_seconds:
                self.counters[f"{kind}_pings_skipped"] += 1
                self.log.warning(f"{remaining:.2f} s left in nav slot: no time for a {kind} ping",
                                 throttle_duration_sec=60.0)
                self.finish_pings(kind)
                continue
            if not self.may_send(now, timeout):
                return WAIT  # previous ping or packet still holds the channel
            return Ping(kind, timeout)
        return None

    def finish_pings(self, kind: str) -> None:
        if kind == "modem":
            self.modem_pings_sent = self.config.pings.modem_pings
        else:
            self.transponder_pinged = True

    def ping_unavailable(self, kind: str) -> None:
        """The node has no service for this ping: skip the rest of this kind in this slot."""
        self.counters["ping_service_unavailable"] += 1
        self.finish_pings(kind)

    def ping_started(self, kind: str, now: float, timeout_s: float) -> None:
        """Until the reply (or timeout) the ping owns the channel."""
        if kind == "modem":
            self.modem_pings_sent += 1
        else:
            self.transponder_pinged = True
        self.last_tx_start, self.last_tx_length = now, timeout_s
        self.counters[f"{kind}_pings_sent"] += 1

    def ping_finished(self, now: float) -> None:
        if self.last_tx_start is not None and self.last_tx_start <= now:
            # The channel is free once the reply is in: keep only the guard time after it.
            self.last_tx_start, self.last_tx_length = now, 0.0

    # ----- status -------------------------------------------------------------------------

    def status(self, now: float) -> dict[str, Any]:
        """TdmaAdvancedStatus fields: the TdmaStatus ones, then these (flat, as ros_acomms)."""
        config: AdvancedConfig = self.config
        frames, schedule = config.frames, config.schedule
        return {
            **super().status(now),
            "software_mute": self.software_mute,
            "message": (f"active_slots: {format_slots(schedule.active_slots)}, "
                        f"comms_slots: {format_slots(config.comms_slots)}, "
                        f"nav_slots: {format_slots(config.nav_slots)}"),
            "miniframe_rate": frames.miniframe_rate,
            "dataframe_rate": frames.dataframe_rate,
            "maximum_miniframe_bytes": frames.maximum_miniframe_bytes,
            "maximum_dataframe_bytes": frames.maximum_dataframe_bytes,
            "num_slots": schedule.num_slots,
            "active_slots": list(schedule.active_slots),
            "nav_slots": list(config.nav_slots),
            "comms_slots": list(config.comms_slots),
            "pings_per_slot": config.pings.modem_pings,
            "ping_modem_src": config.pings.ping_modem_src,
            "ping_transponders": config.pings.ping_transponders,
        }
