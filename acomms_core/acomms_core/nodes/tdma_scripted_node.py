"""tdma_scripted_node: TDMA MAC that cycles a test plan of per-packet settings (comms testing).

The plan is a YAML file (parameter tdma_scripted_test_plan_file) with a `test_cycle` list; each
entry sets, for its next packet_tx_count packets, the miniframe/dataframe rates, the byte budgets
(default: the rate table's), packet_duration_sec (default: a full packet at those rates) and
modem_commands, NMEA strings published on `nmea_to_modem` (std_msgs/String) when the entry
starts, before its first packet. With cycle_on_tx_packet false an entry's packet counts even when
the queue had nothing to send (the channel time is still used), so command-only plans advance.
After the last entry the plan starts over. Example: config/tdma_scripted_test_plan.yaml.

Everything else is tdma_advanced_node (slots, mute, pings). With no plan, or with
tdma_scripted_test_plan_enabled false, the node sends with its own rate parameters. A new plan file
(or a changed one, re-read when the parameter is set again) is validated like every parameter and
takes effect at the next slot boundary, starting from its first entry.
Publishes `tdma_scripted_status` (TdmaScriptedStatus).
"""

from __future__ import annotations

import dataclasses
import sys

from std_msgs.msg import String

from acomms_core.mac.tdma_schedule import (
    FrameSettings,
    ScheduleError,
    TestPlanEntry,
    parse_test_plan,
)
from acomms_core.nodes.tdma_advanced_node import (
    ADVANCED_PARAMETERS,
    AdvancedConfig,
    TdmaAdvancedNode,
)
from acomms_core.nodes.tdma_node import TDMA_PARAMETERS, HeldPacket
from acomms_core.ros.ros_support import ParameterSpec, run_node
from acomms_interfaces.msg import TdmaScriptedStatus

SCRIPTED_PARAMETERS = (
    ParameterSpec("tdma_scripted_test_plan_file", "",
                  "YAML test plan ({test_cycle: [...]}) to cycle; empty: no plan"),
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


class TdmaScriptedNode(TdmaAdvancedNode):
    """TDMA MAC running a scripted comms test plan (lifecycle node)."""

    STATUS_TYPE = TdmaScriptedStatus
    STATUS_TOPIC = "tdma_scripted_status"

    def __init__(self, node_name: str = "tdma_scripted_node", **kwargs):
        self._command_publisher = None
        self._installed_plan: tuple[TestPlanEntry, ...] | None = None
        super().__init__(node_name, **kwargs)

    def parameter_specs(self):
        return TDMA_PARAMETERS + ADVANCED_PARAMETERS + SCRIPTED_PARAMETERS

    def build_config(self, values: dict) -> ScriptedConfig:
        base = super().build_config(values)
        plan = parse_test_plan(values["tdma_scripted_test_plan_file"], base.frames)
        schedule = base.schedule
        for index, entry in enumerate(plan):
            needed = entry.frames.packet_length_seconds + schedule.guard_time_seconds
            if needed >= schedule.slot_duration_seconds:
                raise ScheduleError(
                    f"test plan entry {index}: packet_duration_sec + guard_time_seconds "
                    f"({entry.frames.packet_length_seconds:g} + "
                    f"{schedule.guard_time_seconds:g}) must be less than slot_duration_seconds "
                    f"({schedule.slot_duration_seconds:g})")
        return ScriptedConfig(**{f.name: getattr(base, f.name)
                                 for f in dataclasses.fields(AdvancedConfig)},
                              plan=plan,
                              plan_enabled=bool(values["tdma_scripted_test_plan_enabled"]))

    def _create_extra_interfaces(self) -> None:
        super()._create_extra_interfaces()
        self._command_publisher = self.create_lifecycle_publisher(String, "nmea_to_modem", 10)

    def _destroy_extra_interfaces(self) -> None:
        super()._destroy_extra_interfaces()
        if self._command_publisher is not None:
            self.destroy_lifecycle_publisher(self._command_publisher)
        self._command_publisher = None

    def _reset_runtime_state(self) -> None:
        super()._reset_runtime_state()
        self._reset_plan_position()
        self._last_frames: FrameSettings | None = None

    def _reset_plan_position(self) -> None:
        self._plan_index = 0
        self._plan_tx_count = 0       # packets sent with the current entry
        self._entry_started = False   # its modem commands were issued
        self._this_cycle_commands: tuple[str, ...] = ()
        self._last_cycle_commands: tuple[str, ...] = ()

    def _on_config_installed(self, config) -> None:
        if config.plan != self._installed_plan:
            self._reset_plan_position()
        self._installed_plan = config.plan

    # ----- plan stepping ------------------------------------------------------------------

    def _current_entry(self) -> TestPlanEntry | None:
        config: ScriptedConfig = self._config
        if not config.plan_active:
            return None
        return config.plan[self._plan_index % len(config.plan)]

    def _frames_for_next_packet(self) -> FrameSettings:
        entry = self._current_entry()
        return self._config.frames if entry is None else entry.frames

    def _on_packet_opportunity(self, now: float) -> None:
        entry = self._current_entry()
        if entry is not None and not self._entry_started:
            self._entry_started = True
            self._last_cycle_commands = self._this_cycle_commands
            self._this_cycle_commands = entry.modem_commands
            for command in entry.modem_commands:
                self._command_publisher.publish(String(data=command))
                self.counters["modem_commands_sent"] += 1
                self.get_logger().info(f"test plan entry {self._plan_index}: modem command "
                                       f"{command!r}")

    def _count_packet(self) -> None:
        entry = self._current_entry()
        if entry is None:
            return
        self._plan_tx_count += 1
        if self._plan_tx_count >= entry.packet_tx_count:
            self._plan_index = (self._plan_index + 1) % len(self._config.plan)
            self._plan_tx_count = 0
            self._entry_started = False

    def _on_transmit(self, held: HeldPacket, now: float) -> None:
        self._last_frames = held.frames
        self._count_packet()

    def _on_nothing_to_send(self, now: float, frames: FrameSettings) -> None:
        entry = self._current_entry()
        if entry is not None and not entry.cycle_on_tx_packet:
            # The step uses its channel time even without data, so the plan keeps moving.
            self._last_tx_start, self._last_tx_length = now, frames.packet_length_seconds
            self._last_frames = frames
            self._count_packet()

    # ----- status -------------------------------------------------------------------------

    def build_status(self, now: float) -> TdmaScriptedStatus:
        msg = TdmaScriptedStatus()
        msg.tdma_advanced_status = self.advanced_status(now)
        last = self._last_frames or self._config.frames
        msg.last_miniframe_rate = last.miniframe_rate
        msg.last_dataframe_rate = last.dataframe_rate
        msg.last_maximum_miniframe_bytes = last.maximum_miniframe_bytes
        msg.last_maximum_dataframe_bytes = last.maximum_dataframe_bytes
        entry = self._current_entry()
        if entry is None:
            msg.this_cycle_tx_count = -1
            msg.this_cycle_tx_total = -1
            msg.packet_duration_sec = self._config.frames.packet_length_seconds
        else:
            msg.this_cycle_tx_count = self._plan_tx_count
            msg.this_cycle_tx_total = entry.packet_tx_count
            msg.packet_duration_sec = entry.frames.packet_length_seconds
        msg.this_cycle_modem_commands = list(self._this_cycle_commands)
        msg.last_cycle_modem_commands = list(self._last_cycle_commands)
        return msg


def main(args=None) -> int:
    return run_node(TdmaScriptedNode, args)


if __name__ == "__main__":
    sys.exit(main())
