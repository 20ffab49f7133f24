"""Scripted TDMA policy (ROS-free): cycles a test plan of per-packet settings (comms testing).

Each `test_cycle` entry of the plan (tdma_scripted_test_plan_file) sets, for its next
packet_tx_count packets, the rates, byte budgets (default: the modem profile's),
packet_duration_sec and modem_commands, issued when the entry starts, before its first packet.
With cycle_on_tx_packet false an entry's packet counts even when the queue had nothing to send.
After the last entry the plan starts over; a new plan starts from its first entry. Everything else
is `TdmaAdvancedPolicy`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from acomms_core.mac.policy import blame
from acomms_core.mac.tdma import TDMA_PARAMETERS
from acomms_core.mac.tdma_advanced import (
    ADVANCED_PARAMETERS,
    AdvancedConfig,
    TdmaAdvancedPolicy,
    build_advanced_config,
)
from acomms_core.mac.tdma_schedule import ScheduleError, TestPlanEntry, parse_test_plan
from acomms_core.modems.profile import FrameBudget
from acomms_core.ros.parameter_spec import ParameterSpec

PLAN_FILE = "tdma_scripted_test_plan_file"
SCRIPTED_PARAMETERS = (
    ParameterSpec(PLAN_FILE, "", "YAML test plan ({test_cycle: [...]}) to cycle; empty: no plan"),
    ParameterSpec("tdma_scripted_test_plan_enabled", True,
                  "Use the test plan (false: send with this node's own rate parameters)"),
)


@dataclasses.dataclass(frozen=True)
class ScriptedConfig(AdvancedConfig):
    plan: tuple[TestPlanEntry, ...] = ()
    plan_enabled: bool = True

    @property
    def plan_active(self) -> bool:
        return bool(self.plan) and self.plan_enabled


def build_scripted_config(values: Mapping[str, Any]) -> ScriptedConfig:
    base = build_advanced_config(values)
    schedule = base.schedule
    with blame(PLAN_FILE):
        plan = parse_test_plan(values[PLAN_FILE], base.frames, base.profile)
        for index, entry in enumerate(plan):
            needed = entry.frames.packet_duration_s + schedule.guard_time_seconds
            if needed >= schedule.slot_duration_seconds:
                raise ScheduleError(
                    f"test plan entry {index}: packet_duration_sec + guard_time_seconds "
                    f"({entry.frames.packet_duration_s:g} + {schedule.guard_time_seconds:g}) "
                    f"must be less than slot_duration_seconds "
                    f"({schedule.slot_duration_seconds:g})")
    return ScriptedConfig(**{f.name: getattr(base, f.name)
                             for f in dataclasses.fields(AdvancedConfig)},
                          plan=plan, plan_enabled=bool(values["tdma_scripted_test_plan_enabled"]))


class TdmaScriptedPolicy(TdmaAdvancedPolicy):
    """TDMA running a scripted comms test plan."""

    PARAMETERS = TDMA_PARAMETERS + ADVANCED_PARAMETERS + SCRIPTED_PARAMETERS

    def __init__(self, logger, counters=None):
        self._installed_plan: tuple[TestPlanEntry, ...] | None = None
        super().__init__(logger, counters)

    @classmethod
    def build_config(cls, values: Mapping[str, Any]):
        return build_scripted_config(values)

    def reset(self) -> None:
        super().reset()
        self.reset_plan_position()
        self.last_frames: FrameBudget | None = None

    def reset_plan_position(self) -> None:
        self.plan_index = 0
        self.plan_tx_count = 0        # packets sent with the current entry
        self.entry_started = False    # its modem commands were issued
        self.this_cycle_commands: tuple[str, ...] = ()
        self.last_cycle_commands: tuple[str, ...] = ()

    def on_config_installed(self, config) -> None:
        if config.plan != self._installed_plan:
            self.reset_plan_position()
        self._installed_plan = config.plan

    # ----- plan stepping ------------------------------------------------------------------

    def current_entry(self) -> TestPlanEntry | None:
        config: ScriptedConfig = self.config
        if not config.plan_active:
            return None
        return config.plan[self.plan_index % len(config.plan)]

    def frames_for_next_packet(self) -> FrameBudget:
        entry = self.current_entry()
        return self.config.frames if entry is None else entry.frames

    def adapt(self, now: float, frames: FrameBudget):
        """A running test plan's entry sets the rates; rate adaptation only outside a plan."""
        if self.current_entry() is not None:
            return frames, None, None
        return super().adapt(now, frames)

    def on_opportunity(self, now: float) -> tuple[str, ...]:
        entry = self.current_entry()
        if entry is None or self.entry_started:
            return ()
        self.entry_started = True
        self.last_cycle_commands = self.this_cycle_commands
        self.this_cycle_commands = entry.modem_commands
        self.counters["modem_commands_sent"] += len(entry.modem_commands)
        for command in entry.modem_commands:
            self.log.info(f"test plan entry {self.plan_index}: modem command {command!r}")
        return entry.modem_commands

    def _count_packet(self) -> None:
        entry = self.current_entry()
        if entry is None:
            return
        self.plan_tx_count += 1
        if self.plan_tx_count >= entry.packet_tx_count:
            self.plan_index = (self.plan_index + 1) % len(self.config.plan)
            self.plan_tx_count = 0
            self.entry_started = False

    def on_transmit(self, frames: FrameBudget, now: float) -> None:
        super().on_transmit(frames, now)
        self.last_frames = frames
        self._count_packet()

    def on_nothing_to_send(self, now: float, frames: FrameBudget) -> None:
        entry = self.current_entry()
        if entry is not None and not entry.cycle_on_tx_packet:
            # The step uses its channel time even without data, so the plan keeps moving.
            self.last_tx_start, self.last_tx_length = now, frames.packet_duration_s
            self.last_frames = frames
            self._count_packet()

    # ----- status -------------------------------------------------------------------------

    def status(self, now: float) -> dict[str, Any]:
        """TdmaScriptedStatus fields."""
        last = self.last_frames or self.config.frames
        entry = self.current_entry()
        return {
            **super().status(now),  # flat, as ros_acomms
            "last_miniframe_rate": last.miniframe_rate,
            "last_dataframe_rate": last.dataframe_rate,
            "last_maximum_miniframe_bytes": last.maximum_miniframe_bytes,
            "last_maximum_dataframe_bytes": last.maximum_dataframe_bytes,
            "this_cycle_tx_count": -1 if entry is None else self.plan_tx_count,
            "this_cycle_tx_total": -1 if entry is None else entry.packet_tx_count,
            "packet_duration_sec": (self.config.frames if entry is None
                                    else entry.frames).packet_duration_s,
            "this_cycle_modem_commands": list(self.this_cycle_commands),
            "last_cycle_modem_commands": list(self.last_cycle_commands),
        }
