"""tdma_advanced_node: TDMA MAC with software mute, nav/comms slots, modem pings and skew.

Adds to tdma_node (all parameters changeable at runtime, schedule changes at the next slot
boundary; software_mute at once):

- software_mute: no transmissions at all while true (status shows we_are_active false);
- nav_slots / comms_slots: which active slots carry navigation pings and which carry data
  packets ("" = every active slot, "none" = no slot; slots outside active_slots are ignored);
- pings_per_slot modem pings (`ping_modem` service of the driver or simulator) to ping_modem_src,
  then one transponder ping (`ping_transponders`) if ping_transponders, at the start of each nav
  slot, before any data packet of that slot; a ping is only started when ping_modem_timeout_sec
  (transponder_reply_timeout_sec) plus the guard time still fits in the slot;
- skew_cycle_sec: shifts this vehicle's whole cycle relative to cycle_start_time;
- per-slot tags and minimum priority (slot_tags, from tdma_node) go to the queue with each request.

Publishes `tdma_advanced_status` (TdmaAdvancedStatus) instead of `tdma_status`.
"""

from __future__ import annotations

import dataclasses
import sys

from acomms_core.mac.tdma_schedule import ScheduleError, format_slots, parse_slots
from acomms_core.nodes.tdma_node import (
    TDMA_PARAMETERS,
    DynamicParameterSpec,
    TdmaConfig,
    TdmaNode,
)
from acomms_core.ros.ros_support import ParameterSpec, run_node
from acomms_interfaces.msg import TdmaAdvancedStatus
from acomms_interfaces.srv import PingModem, PingTransponders

ADVANCED_PARAMETERS = (
    ParameterSpec("software_mute", False, "True: never transmit (applies at once)"),
    DynamicParameterSpec("nav_slots", "",
                         "Active slots that carry navigation pings: int, list or range string; "
                         "'' = every active slot, 'none' = no slot"),
    DynamicParameterSpec("comms_slots", "",
                         "Active slots that carry data packets: int, list or range string; "
                         "'' = every active slot, 'none' = no slot"),
    ParameterSpec("skew_cycle_sec", 0.0, "Shift of this vehicle's cycle start, s",
                  -86400.0, 86400.0),
    ParameterSpec("pings_per_slot", 0, "Modem pings sent at the start of each nav slot", 0, 100),
    ParameterSpec("ping_modem", True, "Send the pings_per_slot modem pings in nav slots"),
    ParameterSpec("ping_modem_src", 1, "Modem address to ping", 0, 255),
    ParameterSpec("ping_modem_timeout_sec", 5.0, "Reply timeout of a modem ping, s", 1.0, 600.0),
    ParameterSpec("ping_cdr", 4, "Coprocessor data rate code sent with modem pings", 0, 255),
    ParameterSpec("ping_transponders", False, "Ping navigation transponders once per nav slot"),
    ParameterSpec("ping_transponder_a", True, "Include transponder A in transponder pings"),
    ParameterSpec("ping_transponder_b", True, "Include transponder B in transponder pings"),
    ParameterSpec("ping_transponder_c", True, "Include transponder C in transponder pings"),
    ParameterSpec("ping_transponder_d", True, "Include transponder D in transponder pings"),
    ParameterSpec("transponder_reply_timeout_sec", 5.0, "Reply timeout of a transponder ping, s",
                  0.1, 600.0),
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


class TdmaAdvancedNode(TdmaNode):
    """TDMA MAC with mute, nav pings and comms/nav slot masks (lifecycle node)."""

    STATUS_TYPE = TdmaAdvancedStatus
    STATUS_TOPIC = "tdma_advanced_status"
    IMMEDIATE_PARAMETERS = TdmaNode.IMMEDIATE_PARAMETERS | {"software_mute"}

    def __init__(self, node_name: str = "tdma_advanced_node", **kwargs):
        self._ping_modem_client = None
        self._ping_transponders_client = None
        self._software_mute = False
        super().__init__(node_name, **kwargs)

    def parameter_specs(self):
        return TDMA_PARAMETERS + ADVANCED_PARAMETERS

    def build_config(self, values: dict) -> AdvancedConfig:
        base = super().build_config(values)
        schedule = base.schedule
        pings = PingSettings(
            pings_per_slot=values["pings_per_slot"], ping_modem=values["ping_modem"],
            ping_modem_src=values["ping_modem_src"],
            ping_modem_timeout_sec=values["ping_modem_timeout_sec"],
            ping_cdr=values["ping_cdr"], ping_transponders=values["ping_transponders"],
            transponder_mask=tuple(bool(values[f"ping_transponder_{x}"]) for x in "abcd"),
            transponder_reply_timeout_sec=values["transponder_reply_timeout_sec"])
        nav = slot_mask(values["nav_slots"], schedule.active_slots, schedule.num_slots)
        comms = slot_mask(values["comms_slots"], schedule.active_slots, schedule.num_slots)
        if nav:
            for name, enabled, timeout in (
                    ("ping_modem_timeout_sec", pings.modem_pings > 0,
                     pings.ping_modem_timeout_sec),
                    ("transponder_reply_timeout_sec", pings.ping_transponders,
                     pings.transponder_reply_timeout_sec)):
                if enabled and timeout + schedule.guard_time_seconds >= \
                        schedule.slot_duration_seconds:
                    raise ScheduleError(
                        f"{name} + guard_time_seconds ({timeout:g} + "
                        f"{schedule.guard_time_seconds:g}) must be less than "
                        f"slot_duration_seconds ({schedule.slot_duration_seconds:g}), "
                        "otherwise no ping fits in a nav slot")
        return AdvancedConfig(**{f.name: getattr(base, f.name)
                                 for f in dataclasses.fields(TdmaConfig)},
                              nav_slots=nav, comms_slots=comms, pings=pings)

    def _apply_immediate_parameters(self, values: dict) -> None:
        super()._apply_immediate_parameters(values)
        muted = bool(values["software_mute"])
        if muted != self._software_mute:
            self.get_logger().warning(f"software_mute is now {muted}")
        self._software_mute = muted

    def software_muted(self) -> bool:
        return self._software_mute

    def _create_extra_interfaces(self) -> None:
        self._ping_modem_client = self.create_client(PingModem, "ping_modem")
        self._ping_transponders_client = self.create_client(PingTransponders,
                                                            "ping_transponders")

    def _destroy_extra_interfaces(self) -> None:
        for client in (self._ping_modem_client, self._ping_transponders_client):
            if client is not None:
                self.destroy_client(client)
        self._ping_modem_client = self._ping_transponders_client = None

    def _reset_runtime_state(self) -> None:
        super()._reset_runtime_state()
        self._nav_slot_serial = None
        self._modem_pings_sent = 0
        self._transponder_pinged = False

    # ----- transmit loop ------------------------------------------------------------------

    def _tick(self, now: float) -> None:
        if self._software_mute:
            return
        config: AdvancedConfig = self._config
        schedule = config.schedule
        serial = schedule.slot_serial(now)
        if serial != self._nav_slot_serial:
            self._nav_slot_serial = serial
            self._modem_pings_sent = 0
            self._transponder_pinged = False
        slot = schedule.position(now).current_slot
        if slot in config.nav_slots and self._nav_pings(now, config):
            return
        if slot in config.comms_slots:
            self._try_send_packet(now)

    def _nav_pings(self, now: float, config: AdvancedConfig) -> bool:
        """Start the next ping due in this nav slot; True while pings still hold the channel."""
        pings = config.pings
        schedule = config.schedule
        remaining = schedule.position(now).remaining_slot_seconds
        for kind, due, timeout in (
                ("modem", self._modem_pings_sent < pings.modem_pings,
                 pings.ping_modem_timeout_sec),
                ("transponder", pings.ping_transponders and not self._transponder_pinged,
                 pings.transponder_reply_timeout_sec)):
            if not due:
                continue
            if remaining < timeout + schedule.guard_time_seconds:
                self.counters[f"{kind}_pings_skipped"] += 1
                self.get_logger().warning(
                    f"{remaining:.2f} s left in nav slot: no time for a {kind} ping",
                    throttle_duration_sec=60.0)
                self._finish_pings(kind)
                continue
            if not schedule.may_transmit(now, self._last_tx_start, timeout,
                                         self._last_tx_length).allowed:
                return True  # previous ping or packet still holds the channel
            if kind == "modem":
                self._send_modem_ping(now, config)
            else:
                self._send_transponder_ping(now, config)
            return True
        return False

    def _finish_pings(self, kind: str) -> None:
        if kind == "modem":
            self._modem_pings_sent = self._config.pings.modem_pings
        else:
            self._transponder_pinged = True

    def _send_modem_ping(self, now: float, config: AdvancedConfig) -> None:
        pings = config.pings
        if not self._ping_modem_client.service_is_ready():
            self.counters["ping_service_unavailable"] += 1
            self.get_logger().warning("ping_modem service not available; skipping pings",
                                      throttle_duration_sec=10.0)
            self._finish_pings("modem")
            return
        request = PingModem.Request(dest=pings.ping_modem_src,
                                    rate=config.frames.miniframe_rate, cdr=pings.ping_cdr,
                                    hexdata=[], timeout_sec=pings.ping_modem_timeout_sec)
        self._modem_pings_sent += 1
        self._start_ping(now, pings.ping_modem_timeout_sec,
                         self._ping_modem_client.call_async(request), "modem")

    def _send_transponder_ping(self, now: float, config: AdvancedConfig) -> None:
        pings = config.pings
        self._transponder_pinged = True
        if not self._ping_transponders_client.service_is_ready():
            self.counters["ping_service_unavailable"] += 1
            self.get_logger().warning("ping_transponders service not available; skipping",
                                      throttle_duration_sec=10.0)
            return
        request = PingTransponders.Request(transponder_dest_mask=list(pings.transponder_mask),
                                           timeout_sec=pings.transponder_reply_timeout_sec)
        self._start_ping(now, pings.transponder_reply_timeout_sec,
                         self._ping_transponders_client.call_async(request), "transponder")

    def _start_ping(self, now: float, timeout: float, future, kind: str) -> None:
        # Until the reply (or timeout) the ping owns the channel.
        self._last_tx_start, self._last_tx_length = now, timeout
        self.counters[f"{kind}_pings_sent"] += 1
        self._set_busy(future)
        self._busy_deadline += timeout
        future.add_done_callback(lambda f: self._on_ping_done(f, kind))

    def _on_ping_done(self, future, kind: str) -> None:
        with self._lock:
            if future is not self._busy_future:
                return
            self._busy_future = None
            now = self._now()
            if self._last_tx_start is not None and self._last_tx_start <= now:
                # The channel is free once the reply is in: keep only the guard time after it.
                self._last_tx_start, self._last_tx_length = now, 0.0
            try:
                response = future.result()
            except Exception as exc:
                self.counters[f"{kind}_ping_errors"] += 1
                self.get_logger().error(f"{kind} ping failed: {exc}")
                return
            if kind == "modem":
                if response.timed_out:
                    self.counters["modem_ping_timeouts"] += 1
                else:
                    self.counters["modem_ping_replies"] += 1
                    self.get_logger().info(
                        f"modem ping reply: one-way travel time "
                        f"{response.one_way_travel_time:.4f} s")
            else:
                self.get_logger().info(
                    f"transponder ping travel times: {list(response.travel_times)}")

    # ----- status -------------------------------------------------------------------------

    def advanced_status(self, now: float) -> TdmaAdvancedStatus:
        config: AdvancedConfig = self._config
        frames = config.frames
        schedule = config.schedule
        msg = TdmaAdvancedStatus()
        msg.tdma_status = self.basic_status(now)
        msg.software_mute = self._software_mute
        msg.message = (f"active_slots: {format_slots(schedule.active_slots)}, "
                       f"comms_slots: {format_slots(config.comms_slots)}, "
                       f"nav_slots: {format_slots(config.nav_slots)}")
        msg.miniframe_rate = frames.miniframe_rate
        msg.dataframe_rate = frames.dataframe_rate
        msg.maximum_miniframe_bytes = frames.maximum_miniframe_bytes
        msg.maximum_dataframe_bytes = frames.maximum_dataframe_bytes
        msg.num_slots = schedule.num_slots
        msg.active_slots = list(schedule.active_slots)
        msg.nav_slots = list(config.nav_slots)
        msg.comms_slots = list(config.comms_slots)
        msg.pings_per_slot = config.pings.modem_pings
        msg.ping_modem_src = config.pings.ping_modem_src
        msg.ping_transponders = config.pings.ping_transponders
        return msg

    def build_status(self, now: float):
        return self.advanced_status(now)


def main(args=None) -> int:
    return run_node(TdmaAdvancedNode, args)


if __name__ == "__main__":
    sys.exit(main())
