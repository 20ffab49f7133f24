"""tdma_node: basic TDMA media access control for one vehicle's modem.

In this vehicle's active slots it asks the message queue for a packet's worth of data
(`get_next_packet_data`, with the byte budget of the configured rates and the slot's tags) and
hands the packet to the modem (`queue_tx_packet`, driver or simulator). The slot math lives in
`acomms_core.mac.tdma_schedule`; this node adds the ROS plumbing:

- every schedule parameter can be changed while active (`ros2 param set`); a valid change takes
  effect at the next slot boundary of the running schedule, an invalid one is refused with the
  reason and the old schedule keeps running;
- all timing uses the node clock, so `use_sim_time` and faster-than-real-time simulation work;
- a packet the queue returned too late to start inside its slot (slow service, clock jump) is held
  and sent at the next opportunity, never sent outside the slot;
- `tdma_status` (TdmaStatus) every status_period_seconds; counters of what was sent, held or
  dropped on `/diagnostics`.
"""

from __future__ import annotations

import dataclasses
import sys
import threading
import time
from collections import Counter

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from rclpy.lifecycle import LifecycleNode, TransitionCallbackReturn
from rclpy.parameter import Parameter

from acomms_core.mac.tdma_schedule import (
    FrameSettings,
    ScheduleError,
    SlotTags,
    TdmaSchedule,
    format_slots,
    frame_settings,
    parse_slot_tags,
)
from acomms_core.ros.ros_support import ParameterSpec, declare_parameters, run_node
from acomms_interfaces.msg import Packet, TdmaStatus
from acomms_interfaces.srv import GetNextPacketData, QueueTxPacket


class DynamicParameterSpec(ParameterSpec):
    """A parameter that may be set as an int, a list or a string (slot lists: 3, [1, 2], "0:2")."""

    def descriptor(self):
        descriptor = super().descriptor()
        descriptor.dynamic_typing = True
        return descriptor


TDMA_PARAMETERS = (
    ParameterSpec("num_slots", 4, "Slots in one TDMA cycle", 1, 10000),
    ParameterSpec("slot_duration_seconds", 30.0, "Length of one slot, s", 0.001, 86400.0),
    DynamicParameterSpec("cycle_start_time", "2024-01-01T00:00:00Z",
                         "When slot 0 of some cycle started: ISO 8601 (UTC if no zone) or "
                         "seconds since the epoch (number or string); every vehicle on the "
                         "channel must use the same value"),
    DynamicParameterSpec("active_slots", 0,
                         "Slots this vehicle transmits in: an int, a list, or a range string such "
                         "as '0,2,5:7' (ranges may wrap: '6:1')"),
    ParameterSpec("guard_time_seconds", 5.0,
                  "Silence kept after each packet and before the end of a slot, s", 0.0, 3600.0),
    ParameterSpec("packet_length_seconds", -1.0,
                  "On-air time reserved per packet, s; negative: a full packet at the configured "
                  "rates from the Micromodem rate table", -1.0, 3600.0),
    ParameterSpec("always_send_test_data", False,
                  "Pad every packet to the full byte budget with zeros and send one in each "
                  "opportunity even when the queue is empty (channel testing)"),
    ParameterSpec("miniframe_rate", 1, "Micromodem rate number for miniframes", 0, 6),
    ParameterSpec("dataframe_rate", 5, "Micromodem rate number for dataframes", 0, 6),
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
                  "Wall-clock time to wait for the queue or modem to answer before giving up, s",
                  0.1, 600.0),
)


@dataclasses.dataclass(frozen=True)
class TdmaConfig:
    """Everything the MAC needs from its parameters, validated; swapped at slot boundaries."""

    schedule: TdmaSchedule
    frames: FrameSettings
    slot_tags: dict[int, SlotTags]
    untagged_slots: tuple[int, ...]  # active slots without tags ("dedicated" slots)


@dataclasses.dataclass
class HeldPacket:
    packet: Packet
    frames: FrameSettings
    queued_message_ids: tuple[int, ...]


class TdmaNode(LifecycleNode):
    """Basic TDMA MAC (lifecycle node); tdma_advanced_node and tdma_scripted_node extend it."""

    STATUS_TYPE = TdmaStatus
    STATUS_TOPIC = "tdma_status"
    # Parameters applied at once instead of at the next slot boundary.
    IMMEDIATE_PARAMETERS = frozenset({"always_send_test_data", "service_timeout_seconds"})

    def __init__(self, node_name: str = "tdma_node", **kwargs):
        super().__init__(node_name, **kwargs)
        self._lock = threading.RLock()
        self._parameters_declared = False
        self._config: TdmaConfig | None = None
        self._pending: tuple[TdmaConfig, float, float] | None = None  # config, apply_at, set_at
        self._status_publisher = None
        self._diagnostics_publisher = None
        self._queue_client = None
        self._modem_client = None
        self._tick_timer = None
        self._status_timer = None
        self._active = False
        self.counters: Counter[str] = Counter()
        self._reset_runtime_state()
        # Declared here so `ros2 param` sees them before configure; a refused start-up value
        # raises ValueError with the reason (run_node turns that into exit status 1).
        declare_parameters(self, self.parameter_specs(), self._validate_change)
        self.add_post_set_parameters_callback(self._on_parameters_set)
        self._parameters_declared = True

    # ----- parameters ---------------------------------------------------------------------

    def parameter_specs(self) -> tuple[ParameterSpec, ...]:
        return TDMA_PARAMETERS

    def build_config(self, values: dict) -> TdmaConfig:
        """Validated configuration from parameter values; ScheduleError says what is wrong."""
        frames = frame_settings(values["miniframe_rate"], values["dataframe_rate"],
                                values["maximum_miniframe_bytes"],
                                values["maximum_dataframe_bytes"],
                                values["packet_length_seconds"])
        schedule = TdmaSchedule.create(
            num_slots=values["num_slots"],
            slot_duration_seconds=values["slot_duration_seconds"],
            active_slots=values["active_slots"],
            cycle_start_time=values["cycle_start_time"],
            guard_time_seconds=values["guard_time_seconds"],
            packet_length_seconds=frames.packet_length_seconds,
            skew_seconds=values.get("skew_cycle_sec", 0.0))
        slot_tags = parse_slot_tags(values["slot_tags"], schedule.num_slots)
        untagged = tuple(s for s in schedule.active_slots
                         if not slot_tags.get(s, SlotTags()).is_tagged)
        return TdmaConfig(schedule, frames, slot_tags, untagged)

    def _parameter_names(self) -> set[str]:
        return {spec.name for spec in self.parameter_specs()}

    def _current_values(self) -> dict:
        return {name: self.get_parameter(name).value for name in self._parameter_names()
                if self.has_parameter(name)}

    def _validate_change(self, change: dict) -> str | None:
        names = self._parameter_names()
        relevant = {k: v for k, v in change.items() if k in names}
        if not relevant:
            return None
        values = self._current_values()
        values.update(relevant)
        try:
            self.build_config(values)
        except ScheduleError as exc:
            if self._parameters_declared:  # at start-up the ValueError carries the reason
                self.get_logger().warning(
                    f"refused parameter change ({', '.join(sorted(relevant))}): {exc}")
            return str(exc)
        return None

    def _on_parameters_set(self, parameters: list[Parameter]) -> None:
        """Post-set: apply a change that passed validation (schedule: at the next slot start)."""
        if not self._parameters_declared:
            return
        names = {p.name for p in parameters} & self._parameter_names()
        if not names:
            return
        values = self._current_values()
        with self._lock:
            self._apply_immediate_parameters(values)
            if not names - self.IMMEDIATE_PARAMETERS:
                return
            try:
                config = self.build_config(values)
            except ScheduleError as exc:  # validated a moment ago; only a changed file can fail
                self.counters["config_errors"] += 1
                self.get_logger().error(f"parameter change not applied: {exc}")
                return
            if not self._active or self._config is None:
                self._install_config(config, reason="parameters set")
                return
            now = self._now()
            apply_at = now + self._config.schedule.position(now).remaining_slot_seconds
            self._pending = (config, apply_at, now)
            self.get_logger().info(
                f"schedule change accepted ({', '.join(sorted(names))}); takes effect at the "
                f"next slot boundary, t={apply_at:.3f}")

    def _apply_immediate_parameters(self, values: dict) -> None:
        self._always_send_test_data = bool(values["always_send_test_data"])
        self._service_timeout = float(values["service_timeout_seconds"])

    def _install_config(self, config: TdmaConfig, reason: str) -> None:
        self._config = config
        self._pending = None
        self._on_config_installed(config)
        schedule = config.schedule
        self.get_logger().info(
            f"schedule ({reason}): {schedule.num_slots} slots x "
            f"{schedule.slot_duration_seconds:g} s, active {format_slots(schedule.active_slots)}, "
            f"guard {schedule.guard_time_seconds:g} s, packet "
            f"{schedule.packet_length_seconds:g} s, rates {config.frames.miniframe_rate}/"
            f"{config.frames.dataframe_rate}, budget {config.frames.maximum_miniframe_bytes}+"
            f"{config.frames.maximum_dataframe_bytes} bytes")
        for note in config.frames.notes:
            self.counters["clipped_budgets"] += 1
            self.get_logger().warning(note)

    def _on_config_installed(self, config: TdmaConfig) -> None:
        """Hook for subclasses (runs with the lock held)."""

    # ----- lifecycle ----------------------------------------------------------------------

    def on_configure(self, state) -> TransitionCallbackReturn:
        try:
            values = self._current_values()
            config = self.build_config(values)  # files (slot tags, plans) are read again
        except ScheduleError as exc:
            self.get_logger().error(f"configure failed: {exc}")
            return TransitionCallbackReturn.FAILURE
        with self._lock:
            self._apply_immediate_parameters(values)
            self._reset_runtime_state()
            self._install_config(config, reason="configured")
        self._status_publisher = self.create_lifecycle_publisher(
            self.STATUS_TYPE, self.STATUS_TOPIC, 10)
        self._diagnostics_publisher = self.create_lifecycle_publisher(
            DiagnosticArray, "/diagnostics", 10)
        self._queue_client = self.create_client(GetNextPacketData, "get_next_packet_data")
        self._modem_client = self.create_client(QueueTxPacket, "queue_tx_packet")
        self._create_extra_interfaces()
        return TransitionCallbackReturn.SUCCESS

    def _create_extra_interfaces(self) -> None:
        """Hook: subclasses create their clients/publishers in on_configure."""

    def _destroy_extra_interfaces(self) -> None:
        """Hook: subclasses release what _create_extra_interfaces made."""

    def on_activate(self, state) -> TransitionCallbackReturn:
        with self._lock:
            self._active = True
            held = self._held  # a packet held over a deactivate is still sent
            self._reset_runtime_state()
            self._held = held
        tick = self.get_parameter("tick_period_seconds").value
        status = self.get_parameter("status_period_seconds").value
        self._tick_timer = self.create_timer(tick, self._on_tick)
        self._status_timer = self.create_timer(status, self._publish_status)
        return super().on_activate(state)

    def on_deactivate(self, state) -> TransitionCallbackReturn:
        with self._lock:
            self._active = False
            if self._pending is not None:
                self._install_config(self._pending[0], reason="applied on deactivate")
        for timer in (self._tick_timer, self._status_timer):
            if timer is not None:
                self.destroy_timer(timer)
        self._tick_timer = self._status_timer = None
        return super().on_deactivate(state)

    def on_cleanup(self, state) -> TransitionCallbackReturn:
        self._release()
        return TransitionCallbackReturn.SUCCESS

    def on_shutdown(self, state) -> TransitionCallbackReturn:
        for timer in (self._tick_timer, self._status_timer):
            if timer is not None:
                self.destroy_timer(timer)
        self._tick_timer = self._status_timer = None
        self._release()
        return TransitionCallbackReturn.SUCCESS

    def _release(self) -> None:
        with self._lock:
            self._active = False
            if self._held is not None:
                self.counters["dropped_packets"] += 1
                self.get_logger().warning(
                    "dropping a held packet on cleanup (message ids "
                    f"{list(self._held.queued_message_ids)})")
            self._reset_runtime_state()
        for publisher in (self._status_publisher, self._diagnostics_publisher):
            if publisher is not None:
                self.destroy_lifecycle_publisher(publisher)
        for client in (self._queue_client, self._modem_client):
            if client is not None:
                self.destroy_client(client)
        self._status_publisher = self._diagnostics_publisher = None
        self._queue_client = self._modem_client = None
        self._destroy_extra_interfaces()

    def _reset_runtime_state(self) -> None:
        self._busy_future = None          # the service call in flight, if any
        self._busy_deadline = 0.0         # monotonic time after which that call is abandoned
        self._last_tx_start: float | None = None
        self._last_tx_length = 0.0
        self._held: HeldPacket | None = None
        self.last_tick_time: float | None = None  # node-clock time of the latest tick

    # ----- time ---------------------------------------------------------------------------

    def _now(self) -> float:
        return self.get_clock().now().nanoseconds / 1e9

    @property
    def idle(self) -> bool:
        """No service call in flight (tests use it to step sim time deterministically)."""
        return self._busy_future is None

    # ----- transmit loop ------------------------------------------------------------------

    def _on_tick(self) -> None:
        now = self._now()
        with self._lock:
            if not self._active or self._config is None:
                return
            try:
                self._tick_locked(now)
            finally:
                # Set last, so "ticked at t and idle" really means t's decision is complete.
                self.last_tick_time = now

    def _tick_locked(self, now: float) -> None:
        if self._pending is not None:
            config, apply_at, set_at = self._pending
            if now >= apply_at or now < set_at:  # boundary reached, or clock jumped back
                self._install_config(config, reason="slot boundary")
        if self._busy_future is not None:
            if time.monotonic() < self._busy_deadline:
                return
            self.counters["service_timeouts"] += 1
            self.get_logger().warning("queue/modem service did not answer in time; "
                                      "giving up on that call")
            self._busy_future = None
        if self._last_tx_start is not None and self._last_tx_start > now:
            self.counters["clock_jumps_back"] += 1
            self.get_logger().warning(
                f"clock jumped back to {now:.3f} (last transmission at "
                f"{self._last_tx_start:.3f}); forgetting the previous transmission")
            self._last_tx_start = None
        self._tick(now)

    def _tick(self, now: float) -> None:
        """One transmit decision (lock held, nothing in flight). Subclasses add mute, pings."""
        self._try_send_packet(now)

    def _frames_for_next_packet(self) -> FrameSettings:
        return self._config.frames

    def _may_send(self, now: float, packet_length: float) -> bool:
        decision = self._config.schedule.may_transmit(
            now, self._last_tx_start, packet_length, self._last_tx_length)
        return decision.allowed

    def _try_send_packet(self, now: float) -> None:
        if self._held is not None:
            if self._may_send(now, self._held.frames.packet_length_seconds):
                held, self._held = self._held, None
                self._send_to_modem(held, now)
            return
        frames = self._frames_for_next_packet()
        if not self._may_send(now, frames.packet_length_seconds):
            return
        self._on_packet_opportunity(now)
        tags = self._config.slot_tags.get(self._config.schedule.position(now).current_slot,
                                          SlotTags())
        if not self._queue_client.service_is_ready():
            if self._always_send_test_data:
                self._send_to_modem(self._test_packet(frames, dest=255), now)
                return
            self.counters["queue_unavailable"] += 1
            self.get_logger().warning("get_next_packet_data service not available; "
                                      "skipping this transmit opportunity",
                                      throttle_duration_sec=10.0)
            return
        request = GetNextPacketData.Request(
            num_miniframe_bytes=frames.maximum_miniframe_bytes,
            num_dataframe_bytes=frames.maximum_dataframe_bytes,
            match_dest=False, dest=0,
            minimum_priority=tags.minimum_priority or 0,
            require_tags=list(tags.require_tags), exclude_tags=list(tags.exclude_tags))
        future = self._queue_client.call_async(request)
        self._set_busy(future)
        future.add_done_callback(lambda f: self._on_packet_data(f, frames))

    def _on_packet_opportunity(self, now: float) -> None:
        """Hook: a packet may start now and is about to be requested (lock held)."""

    def _set_busy(self, future) -> None:
        self._busy_future = future
        self._busy_deadline = time.monotonic() + self._service_timeout

    def _test_packet(self, frames: FrameSettings, dest: int) -> HeldPacket:
        packet = Packet(dest=dest, packet_type=Packet.PACKET_TYPE_AUTO,
                        miniframe_rate=frames.miniframe_rate,
                        dataframe_rate=frames.dataframe_rate,
                        miniframe_bytes=bytes(frames.maximum_miniframe_bytes),
                        dataframe_bytes=bytes(frames.maximum_dataframe_bytes))
        return HeldPacket(packet, frames, ())

    def _on_packet_data(self, future, frames: FrameSettings) -> None:
        with self._lock:
            if future is not self._busy_future:
                self.counters["late_responses"] += 1  # abandoned after a timeout
                return
            try:
                self._handle_packet_data(future, frames)
            finally:
                # Idle unless the packet went on to the modem (a new call in flight).
                if self._busy_future is future:
                    self._busy_future = None

    def _handle_packet_data(self, future, frames: FrameSettings) -> None:
        try:
            response = future.result()
        except Exception as exc:  # a failed service call must not kill the node
            self.counters["queue_errors"] += 1
            self.get_logger().error(f"get_next_packet_data failed: {exc}")
            return
        if response is None:
            self.counters["queue_errors"] += 1
            return
        miniframe = bytes(response.miniframe_bytes)
        dataframe = bytes(response.dataframe_bytes)
        ids = tuple(response.queued_message_ids)
        if (len(miniframe) > frames.maximum_miniframe_bytes
                or len(dataframe) > frames.maximum_dataframe_bytes):
            self.counters["dropped_packets"] += 1
            self.get_logger().error(
                f"queue returned {len(miniframe)}+{len(dataframe)} bytes for a "
                f"{frames.maximum_miniframe_bytes}+{frames.maximum_dataframe_bytes} byte "
                f"budget; packet dropped (message ids {list(ids)})")
            return
        now = self._now()
        if response.num_messages == 0 and not miniframe and not dataframe:
            if not self._always_send_test_data:
                self.counters["empty_queue_responses"] += 1
                self._on_nothing_to_send(now, frames)
                return
        self.counters["payload_bytes_from_queue"] += len(miniframe) + len(dataframe)
        if self._always_send_test_data:
            miniframe += bytes(frames.maximum_miniframe_bytes - len(miniframe))
            dataframe += bytes(frames.maximum_dataframe_bytes - len(dataframe))
        packet = Packet(dest=response.dest, packet_type=Packet.PACKET_TYPE_AUTO,
                        miniframe_rate=frames.miniframe_rate,
                        dataframe_rate=frames.dataframe_rate,
                        miniframe_bytes=miniframe, dataframe_bytes=dataframe)
        held = HeldPacket(packet, frames, ids)
        if not self._active or not self._may_send(now, frames.packet_length_seconds):
            # The answer came too late to start inside the slot: keep it for the next one.
            self.counters["held_packets"] += 1
            self._held = held
            self.get_logger().warning(
                "packet data arrived too late for this slot; holding it for the next "
                "transmit opportunity")
            return
        self._send_to_modem(held, now)

    def _on_nothing_to_send(self, now: float, frames: FrameSettings) -> None:
        """Hook: the queue had nothing for this opportunity (lock held)."""

    def _send_to_modem(self, held: HeldPacket, now: float) -> None:
        if not self._modem_client.service_is_ready():
            self.counters["modem_unavailable"] += 1
            self._held = held
            self.get_logger().warning("queue_tx_packet service not available; holding the "
                                      "packet", throttle_duration_sec=10.0)
            return
        request = QueueTxPacket.Request(queue=QueueTxPacket.Request.QUEUE_IMMEDIATE,
                                        insert_at_head=False, packet=held.packet)
        self._last_tx_start = now
        self._last_tx_length = held.frames.packet_length_seconds
        self._on_transmit(held, now)
        future = self._modem_client.call_async(request)
        self._set_busy(future)
        future.add_done_callback(lambda f: self._on_modem_response(f, held))

    def _on_transmit(self, held: HeldPacket, now: float) -> None:
        """Hook: a packet is being handed to the modem (lock held)."""

    def _on_modem_response(self, future, held: HeldPacket) -> None:
        with self._lock:
            if future is self._busy_future:
                self._busy_future = None
            try:
                response = future.result()
            except Exception as exc:
                response = None
                self.get_logger().error(f"queue_tx_packet failed: {exc}")
            size = len(held.packet.miniframe_bytes) + len(held.packet.dataframe_bytes)
            if response is None or not response.success:
                self.counters["modem_refused_packets"] += 1
                self.get_logger().error(
                    f"modem did not accept the packet; dropped (message ids "
                    f"{list(held.queued_message_ids)})")
                return
            self.counters["packets_sent"] += 1
            self.counters["bytes_sent"] += size
            if response.position_in_queue > 0:
                # The modem still had packets queued: this one may start after our slot.
                self.counters["modem_backlog"] += 1
                self.get_logger().warning(
                    f"modem queued the packet at position {response.position_in_queue}; it may "
                    "not start inside this slot", throttle_duration_sec=10.0)
            self.get_logger().debug(
                f"queued packet for tx: dest {held.packet.dest}, "
                f"{len(held.packet.miniframe_bytes)} miniframe + "
                f"{len(held.packet.dataframe_bytes)} dataframe bytes, position "
                f"{response.position_in_queue}")

    # ----- status -------------------------------------------------------------------------

    def software_muted(self) -> bool:
        return False

    def basic_status(self, now: float) -> TdmaStatus:
        config = self._config
        schedule = config.schedule
        here = schedule.position(now)
        tags = config.slot_tags.get(here.current_slot, SlotTags())
        msg = TdmaStatus()
        msg.header.stamp = self.get_clock().now().to_msg()
        msg.we_are_active = schedule.is_active(here.current_slot) and not self.software_muted()
        msg.current_slot = here.current_slot
        msg.minimum_priority = tags.minimum_priority or 0
        msg.require_tags = list(tags.require_tags)
        msg.exclude_tags = list(tags.exclude_tags)
        msg.remaining_slot_seconds = here.remaining_slot_seconds
        msg.remaining_active_seconds = schedule.remaining_active_seconds(now)
        msg.time_to_next_active = schedule.time_to_next_active(now)
        msg.time_to_next_dedicated_slot = schedule.time_to_next_in(now, config.untagged_slots)
        msg.slot_duration_seconds = schedule.slot_duration_seconds
        return msg

    def build_status(self, now: float):
        return self.basic_status(now)

    def _publish_status(self) -> None:
        now = self._now()
        with self._lock:
            if self._config is None or self._status_publisher is None:
                return
            status = self.build_status(now)
            counters = dict(self.counters)
        self._status_publisher.publish(status)
        diagnostics = DiagnosticArray()
        diagnostics.header.stamp = self.get_clock().now().to_msg()
        entry = DiagnosticStatus(
            level=DiagnosticStatus.OK, name=f"{self.get_fully_qualified_name()}: tdma",
            message="muted" if self.software_muted() else "running",
            values=[KeyValue(key=k, value=str(v)) for k, v in sorted(counters.items())])
        diagnostics.status.append(entry)
        self._diagnostics_publisher.publish(diagnostics)


def main(args=None) -> int:
    return run_node(TdmaNode, args)


if __name__ == "__main__":
    sys.exit(main())
