"""MacNode: the lifecycle node every MAC kind runs in; the policy decides, the pipeline sends.

A MAC node is a thin adapter over its ROS-free policy (`acomms_core.mac.registry.MAC_KINDS`):

- parameters: the kind's ParameterSpecs, declared with the policy's pure validator (a refused
  start-up value raises ValueError with the reason; a refused change is answered with it) and an
  apply step (`policy.apply`: schedule changes at the next slot boundary, others at once);
- configure: the policy's configuration is built again (files re-read), the status and
  /diagnostics publishers and the queue/modem clients are created; activate: tick and status
  timers (node clock, so sim time works); cleanup/shutdown release everything (NodeResources);
- every tick: `policy.next_action(now, held)`, carried out by the shared `TransmitPipeline`
  (request data, hold, send) or by `handle_action` (extensions: pings);
- status: the policy's fields in the kind's status message every status_period_seconds, counters
  on /diagnostics, while anyone subscribes to either (`StatusCadence`: no timer otherwise);
- manual transmit (ros_acomms): a std_msgs/String on `tdma/nmea_to_modem` is kept
  (`acomms_core.mac.manual_transmit`) and its lines go out on `nmea_to_modem` (the modem
  driver's command topic) in the next transmit opportunity, instead of a packet; policies' own
  modem commands (scripted plans) use the same publisher.

The generic `mac_node` executable serves any registered kind named by its read-only `mac_kind`
parameter; node classes with extra ROS I/O (pings, modem commands) set MAC_KIND and add hooks.
"""

from __future__ import annotations

import importlib
import sys
import threading
from collections import Counter

from diagnostic_msgs.msg import DiagnosticArray
from rcl_interfaces.msg import ParameterDescriptor
from rclpy.clock import JumpThreshold
from rclpy.duration import Duration
from rclpy.exceptions import ParameterException
from rclpy.lifecycle import TransitionCallbackReturn
from std_msgs.msg import String

from acomms_core.mac.policy import RequestData
from acomms_core.mac.registry import mac_kind
from acomms_core.mac.tdma_schedule import ScheduleError
from acomms_core.nodes.mac_transmit import TransmitPipeline
from acomms_core.ros.parameter_spec import check_values
from acomms_core.ros.ros_support import (
    ManagedNode,
    NodeResources,
    counters_diagnostics,
    declare_parameters,
    is_active,
    listened,
    now_s,
    parameter_values,
    run_node,
    wake_timer_at,
)
from acomms_core.ros.shared_messages import shared_callback
from acomms_core.ros.status_cadence import StatusCadence
from acomms_core.time_grid import TimeGrid, ns_to_seconds, seconds_to_ns
from acomms_interfaces.msg import CST

MANUAL_TRANSMIT_TOPIC = "tdma/nmea_to_modem"  # ros_acomms' name, relative to the namespace


def message_class(type_name: str):
    """'pkg/msg/Type' -> the Python message class."""
    package, _, name = type_name.rpartition("/")
    return getattr(importlib.import_module(package.replace("/", ".")), name)


def fill_message(msg, fields: dict, stamp):
    """Set a (nested) message's fields from a (nested) dict; every header gets `stamp`."""
    for name, value in fields.items():
        if isinstance(value, dict):
            fill_message(getattr(msg, name), value, stamp)
        else:
            setattr(msg, name, value)
    if hasattr(msg, "header"):
        msg.header.stamp = stamp
    return msg


class ParameterRefused(ParameterException, ValueError):
    """A start-up value of the wrong type or out of range: the reason a scenario gives too, as
    the ValueError every refused start-up raises and the ParameterException rclpy would."""

    def __init__(self, reason: str):
        Exception.__init__(self, reason)


class MacNode(ManagedNode):
    """A MAC lifecycle node for one registered kind (MAC_KIND, or the mac_kind parameter)."""

    MAC_KIND: str | None = None
    DIAGNOSTIC_NAME = "tdma"  # the /diagnostics entry is "<node>: <DIAGNOSTIC_NAME>"

    def __init__(self, node_name: str | None = None, **kwargs):
        super().__init__(node_name or (f"{self.MAC_KIND}_node" if self.MAC_KIND else "mac_node"),
                         **kwargs)
        self.kind = mac_kind(self.MAC_KIND or self.declare_parameter(
            "mac_kind", "tdma", ParameterDescriptor(
                description="Registered MAC kind this node runs", read_only=True)).value)
        self._lock = threading.RLock()
        self.counters: Counter[str] = Counter()
        self.policy = self.kind.policy(self.get_logger(), self.counters)
        self.policy.identity = self.get_fully_qualified_name()  # keys seeded random draws
        self.pipeline = TransmitPipeline(self, self.policy)
        self._status_publisher = self._diagnostics_publisher = self._nmea_publisher = None
        self.status_cadence = StatusCadence(self, self._publish_status)
        self._last_tick_time: float | None = None  # node-clock time of the latest real tick
        self._tick_timer = None
        self._jump_handler = None
        self._grid: TimeGrid | None = None  # the tick timer's grid (activation time, period)
        self._wake_ns: int | None = None  # the tick timer sleeps until this grid time
        self._names = {spec.name for spec in self.kind.parameters}
        overrides = {p.name: p.value for p in kwargs.get("parameter_overrides") or ()
                     if p.name in self._names}
        reason = check_values(self.kind.parameters, overrides)  # types and ranges, as scenarios
        if reason:
            raise ParameterRefused(reason)
        # Declared here so `ros2 param` sees them before configure; a refused start-up value
        # raises ValueError with the reason (run_node turns that into exit status 1).
        self._declared = False
        declare_parameters(self, self.kind.parameters, self._validate, self._apply)
        self._declared = True

    def locked(self, function, *args):
        """Run a callback with the node's lock held (service responses, timers)."""
        with self._lock:
            return function(*args)

    @property
    def last_tick_time(self) -> float | None:
        """Node-clock time of the latest tick; a tick slept through because nothing could
        happen in it (see `_schedule_tick`) counts as done."""
        last, wake_ns, grid = self._last_tick_time, self._wake_ns, self._grid  # read once: the
        if last is None or wake_ns is None or grid is None:  # executor thread may clear them
            return last
        now_ns = self.get_clock().now().nanoseconds
        if now_ns >= wake_ns:
            return last
        return max(last, ns_to_seconds(grid.latest_at_or_before(now_ns)))

    @last_tick_time.setter
    def last_tick_time(self, value: float | None) -> None:
        self._last_tick_time = value

    @property
    def idle(self) -> bool:
        """No service call in flight (tests use it to step sim time deterministically)."""
        return self.pipeline.idle

    # ----- parameters ---------------------------------------------------------------------

    def _validate(self, values: dict) -> str | None:
        """The kind's pure validator; a refused change is also logged (start-up: ValueError)."""
        reason = self.kind.validate(values)
        if reason and self._declared:
            self.get_logger().warning(f"refused parameter change: {reason}")
        return reason

    def _apply(self, values: dict, changed: frozenset) -> None:
        with self._lock:
            self.pipeline.service_timeout_s = float(values["service_timeout_seconds"])
            self.policy.apply(values, changed, now_s(self), is_active(self))
            self._schedule_tick(None)  # the change may open an opportunity: tick as usual
            if self._grid_tick_lost():
                self._on_tick()

    # ----- lifecycle ----------------------------------------------------------------------

    def on_configure(self, state) -> TransitionCallbackReturn:
        values = parameter_values(self, self._names)
        with self._lock:
            try:
                self.policy.configure(values)  # files (slot tags, plans) are read again
            except ScheduleError as exc:
                self.get_logger().error(f"configure failed: {exc}")
                return TransitionCallbackReturn.FAILURE
            self.pipeline.service_timeout_s = float(values["service_timeout_seconds"])
            self.pipeline.reset()
        cadence = self.status_cadence
        cadence.forget_publishers()
        self._status_publisher = cadence.publisher(
            self.configured, message_class(self.kind.status_type), self.kind.status_topic)
        self._diagnostics_publisher = cadence.publisher(self.configured, DiagnosticArray,
                                                        "/diagnostics")
        self.pipeline.create_clients(self.configured)
        self._nmea_publisher = self.configured.publisher(String, "nmea_to_modem")
        self.configured.subscription(String, MANUAL_TRANSMIT_TOPIC, self._on_manual_transmit, 10)
        self.configured.subscription(CST, "cst", shared_callback(CST, self._on_link_report), 100,
                                     raw=True)
        self.create_interfaces(self.configured)
        if "software_mute" in self._names:
            self._subscribe_mute_switch()
        return TransitionCallbackReturn.SUCCESS

    def _subscribe_mute_switch(self) -> None:
        """`set_software_mute` (std_msgs/Bool, transient local): what mac_switcher_node sends;
        it sets the software_mute parameter (validated and applied like any change)."""
        from rclpy.parameter import Parameter
        from std_msgs.msg import Bool

        from acomms_core.nodes.mac_switcher_node import MUTE_QOS, MUTE_TOPIC

        def on_mute(msg: Bool) -> None:
            self.counters["mute_commands"] += 1
            self.set_parameters([Parameter("software_mute", Parameter.Type.BOOL,
                                           bool(msg.data))])

        self.configured.subscription(Bool, MUTE_TOPIC, on_mute, MUTE_QOS)

    def create_interfaces(self, resources: NodeResources) -> None:
        """Hook: extra clients/publishers, created in on_configure through `resources`."""

    def on_activate(self, state) -> TransitionCallbackReturn:
        with self._lock:
            self.policy.reset()
            self.pipeline.reset(keep_held=True)  # a packet held over a deactivate is still sent
            self.last_tick_time = None
        timers = self.activated
        period_s = self.get_parameter("tick_period_seconds").value
        self._grid = TimeGrid(self.get_clock().now().nanoseconds, seconds_to_ns(period_s))
        self._wake_ns = None
        self._tick_timer = timers.timer(period_s, self._on_tick)
        self._jump_handler = self.get_clock().create_jump_callback(
            JumpThreshold(min_forward=None, min_backward=Duration(nanoseconds=-1)),
            post_callback=self._on_clock_jump_back)
        self.status_cadence.start(timers, self.get_parameter("status_period_seconds").value)
        return super().on_activate(state)

    def on_deactivate(self, state) -> TransitionCallbackReturn:
        with self._lock:
            self.policy.apply_pending()
            self._tick_timer = self._wake_ns = self._jump_handler = None
        self.status_cadence.stop()
        return super().on_deactivate(state)

    def on_release(self) -> None:
        """Drop the held packet and what configure made (ManagedNode releases the entities)."""
        with self._lock:
            self.pipeline.drop_held("on cleanup")
            self.pipeline.reset()
            self.policy.reset()
            self._tick_timer = self._wake_ns = self._jump_handler = None
        self.pipeline.forget_clients()
        self._status_publisher = self._diagnostics_publisher = self._nmea_publisher = None
        self.status_cadence.release()
        self.forget_interfaces()

    def forget_interfaces(self) -> None:
        """Hook: drop references to what create_interfaces made (already destroyed)."""

    # ----- transmit loop ------------------------------------------------------------------

    def _on_tick(self) -> None:
        now = now_s(self)
        with self._lock:
            if not is_active(self) or self.policy.config is None:
                return
            try:
                self._tick(now)
            finally:
                self._schedule_tick(None if self.pipeline.busy() else
                                    self.policy.next_decision_time_s(
                                        now, self.pipeline.held_frames,
                                        ns_to_seconds(self._grid.period_ns)))
                # Set last, so "ticked at t and idle" really means t's decision is complete and
                # the next wake is set (a clock moved on before that would delay the wake).
                self.last_tick_time = now

    def _on_clock_jump_back(self, _jump) -> None:
        """Sim time restarted: tick as usual from the new time (the schedule decides anew)."""
        with self._lock:
            self._schedule_tick(None)

    def _grid_tick_lost(self) -> bool:
        """Now is a grid time whose tick has not run: the timer was just reset (a parameter
        change) after it came due, so that tick would be lost; the caller runs it."""
        if self._tick_timer is None or self._grid is None or not is_active(self):
            return False
        now_ns = self.get_clock().now().nanoseconds
        last_s = self._last_tick_time
        return self._grid.latest_at_or_before(now_ns) == now_ns and (
            last_s is None or seconds_to_ns(last_s) < now_ns)

    def _schedule_tick(self, decision_s: float | None) -> None:
        """Wake the tick timer at the grid time of the next possible decision (None: the next
        tick). The ticks in between would find nothing to do: a deterministic clock skips them,
        and transmit times stay those of ticking every period."""
        if self._tick_timer is None or self._grid is None:
            return
        clock = self.get_clock()
        now_ns = clock.now().nanoseconds
        for _attempt in range(3):
            wake_ns = self._grid.wake_for(decision_s, now_ns)
            self._wake_ns = wake_ns if wake_ns > self._grid.next_after(now_ns) else None
            if not wake_timer_at(self._tick_timer, wake_ns, now_ns):
                self._wake_ns = None  # deactivated by another thread meanwhile
                return
            # The timer counts its period from the clock at reset: if /clock moved it meanwhile
            # (another executor thread), the wake would come late; set it again from the new time.
            moved_ns = clock.now().nanoseconds
            if moved_ns == now_ns:
                return
            now_ns = moved_ns

    def _tick(self, now: float) -> None:
        self.policy.begin_tick(now)
        if self.pipeline.busy():
            return
        action = self.policy.next_action(now, self.pipeline.held_frames)
        if isinstance(action, RequestData):
            manual = self.policy.manual.take(action.tags)
            if manual is not None:  # the user's modem commands use this opportunity
                self.publish_modem_commands(manual)
                self.policy.on_transmit(action.frames, now)
                self.get_logger().info(f"sent manual modem commands instead of a packet: "
                                       f"{list(manual)}")
                return
            if action.modem_commands:
                self.publish_modem_commands(action.modem_commands)
        if not self.pipeline.run(action, now):
            self.handle_action(action, now)

    def handle_action(self, action, now: float) -> None:
        """Hook: actions other than data (pings); None and Wait do nothing."""

    def publish_modem_commands(self, commands: tuple[str, ...]) -> None:
        """Modem commands (NMEA) to the modem driver's `nmea_to_modem`."""
        publisher = self._nmea_publisher
        for command in commands:
            if publisher is not None:
                publisher.publish(String(data=command))

    def _on_link_report(self, msg: CST) -> None:
        """A packet heard (CST): its SNR updates the link estimate of its sender (rate
        adaptation, on the node clock)."""
        if msg.mode == 2:  # packet timeout: no SNR of a packet
            return
        with self._lock:
            if self.policy.rates.observe(int(msg.src), float(msg.snr_in), now_s(self)):
                self.counters["link_reports"] += 1

    def _on_manual_transmit(self, msg: String) -> None:
        with self._lock:
            if not self.policy.manual.add(msg.data):
                self.get_logger().warning(f"{MANUAL_TRANSMIT_TOPIC}: empty command ignored")

    # ----- status -------------------------------------------------------------------------

    def _publish_status(self) -> None:
        status_wanted = listened(self._status_publisher)
        diagnostics_wanted = listened(self._diagnostics_publisher)
        if not (status_wanted or diagnostics_wanted):
            return
        time = self.get_clock().now()
        with self._lock:
            if self.policy.config is None or self._status_publisher is None:
                return
            now = ns_to_seconds(time.nanoseconds)
            fields = {**self.policy.status(now), **self.policy.rates.status(now)}
            counters = dict(self.counters)
            muted = self.policy.software_muted()
        stamp = time.to_msg()
        if status_wanted:
            self._status_publisher.publish(
                fill_message(message_class(self.kind.status_type)(), fields, stamp))
        if diagnostics_wanted:
            self._diagnostics_publisher.publish(counters_diagnostics(
                f"{self.get_fully_qualified_name()}: {self.DIAGNOSTIC_NAME}",
                "muted" if muted else "running", counters, stamp))


def main(args=None) -> int:
    """`mac_node`: the MAC kind named by the mac_kind parameter."""
    return run_node(MacNode, args)


if __name__ == "__main__":
    sys.exit(main())
