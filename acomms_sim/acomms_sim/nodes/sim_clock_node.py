"""sim_clock_node: the simulation clock, published on `/clock` for nodes with use_sim_time.

Four modes (parameter `mode`):
- `free_running`: every `publish_period_s` of wall (steady) time, publish
  sim time = start_time_s + warp_factor × wall time elapsed while active. warp_factor can be
  changed at run time (the clock continues from where it is, without a jump).
- `lockstep`: time only moves when an external simulator (Gazebo, MBARI WEC sim, a test) sends a
  Tick on `/tick`: the clock advances by exactly Tick.duration, `/clock` is published, and a Tock
  with the same step_id is published on `/tock`. A Tick whose step_id is not the previous one + 1
  (or 0, a restart) is still executed but answered with STATUS_SEQUENCING; a Tick with
  STATUS_RESET restarts the clock at the Tick's header stamp. A negative duration is refused
  (Tock with STATUS_SEQUENCING, time unchanged).
- `stepped`: deterministic time driven in-process (acomms_run's default clock): the driver calls
  `set_time_ns(t)` (publishes /clock) after every node finished the work due now; with
  `participants` it also sends each step's Tick (`start_round`) and collects their Tocks
  (`round`), as the conductor does.
- `conductor`: deterministic time across processes: the node sends a Tick for the current time,
  waits until every name in `participants` answered with a Tock for that step (a participant:
  `acomms_sim.clock.participant`), repeats the step at the same time until it is settled (no
  message between processes in flight: `acomms_sim.clock.stepping.Settlement` over the
  deliveries the Tocks report), then jumps to the earliest
  `next_event` they reported (at most `max_step_s` ahead). A participant that does not answer
  within `tock_timeout_s` wall seconds stops the clock with one error line naming it and the
  simulated time.
"""

from __future__ import annotations

import sys
import threading
import time

from builtin_interfaces.msg import Time as TimeMsg
from rclpy.clock import Clock, ClockType
from rclpy.lifecycle import LifecycleNode, TransitionCallbackReturn
from rclpy.parameter import Parameter
from rclpy.qos import QoSDurabilityPolicy, QoSProfile
from rosgraph_msgs.msg import Clock as ClockMsg

from acomms_core.ros.ros_support import (
    NodeResources,
    ParameterSpec,
    declare_parameters,
    is_active,
    listened,
    parameter_values,
    run_node,
    seconds_to_duration_msg,
    seconds_to_time_msg,
    stamp_seconds,
)
from acomms_interfaces.msg import Tick, Tock
from acomms_sim.clock.stepping import (
    DEFAULT_STEP_TIMEOUT_S,
    Settlement,
    TockRound,
    Watchdog,
    next_step_ns,
    ns_to_seconds,
    seconds_to_ns,
    split_ns,
    stamp_ns,
)

MODES = ("free_running", "lockstep", "stepped", "conductor")
SPECS = [
    ParameterSpec("mode", "free_running", "'free_running' (warp factor) or 'lockstep' (tick/tock)"),
    ParameterSpec("warp_factor", 1.0, "free_running: sim seconds per wall second", 0.001, 1e5),
    ParameterSpec("publish_period_s", 0.02, "free_running: wall time between /clock messages, s",
                  0.001, 10.0),
    ParameterSpec("start_time_s", 0.0, "absolute sim time (Unix seconds, not an offset) at the "
                  "first activation, s", 0.0, 1e10),
    ParameterSpec("participants", [""], "stepped/conductor: node_name of every Tock participant "
                  "whose answer each step waits for", read_only=True,
                  parameter_type=Parameter.Type.STRING_ARRAY),
    ParameterSpec("tock_timeout_s", DEFAULT_STEP_TIMEOUT_S,
                  "conductor: wall seconds a participant may take to answer a Tick", 0.01, 1e6),
    ParameterSpec("max_step_s", 1.0, "conductor: largest step when no participant reports a "
                  "next event, s", 1e-6, 1e6),
]


def check_mode(values: dict) -> str | None:
    if values["mode"] not in MODES:
        return f"mode must be one of {list(MODES)}, not {values['mode']!r}"
    return None


class SimClockNode(LifecycleNode):
    def __init__(self, node_name: str = "sim_clock_node", **kwargs):
        super().__init__(node_name, **kwargs)
        values = declare_parameters(self, SPECS, self._validate, self._apply)
        self._lock = threading.Lock()
        self.sim_time_s = values["start_time_s"]
        self._start_ns = seconds_to_ns(values["start_time_s"])  # messages count from here
        self.last_step_id: int | None = None
        self.steps = 0
        self._warp_factor = values["warp_factor"]  # the rate the clock runs at right now
        self._mode = values["mode"]  # the mode configured
        self._wall_anchor = None
        self.round: TockRound | None = None  # stepped/conductor: the Tock round under way
        self._settlement = Settlement()  # conductor: when a step is settled
        self._step_id = -1
        self._round_time_ns = 0
        self._watchdog = Watchdog(values["tock_timeout_s"])
        self.stopped_reason: str | None = None  # conductor: why the clock stopped
        self._resources = NodeResources(self)  # configure .. cleanup
        self._activity = NodeResources(self)  # activate .. deactivate: the free-running timer

    def _validate(self, values: dict) -> str | None:
        """Pure: reads the lifecycle state, changes nothing."""
        reason = check_mode(values)
        if (reason is None and is_active(self)
                and values["mode"] != self.get_parameter("mode").value):
            reason = "mode can only change while the node is not active"
        return reason

    def _apply(self, values: dict, changed: frozenset) -> None:
        with self._lock:
            if self._wall_anchor is not None:
                self._rebase()  # time so far at the old warp factor
            self._warp_factor = values["warp_factor"]
        if "publish_period_s" in changed and len(self._activity):
            self._activity.release()
            self._start_timer(values["publish_period_s"])

    def _start_timer(self, period_s: float) -> None:
        self._activity.timer(period_s, self._on_timer,
                             clock=Clock(clock_type=ClockType.STEADY_TIME))

    def _rebase(self) -> None:
        """Fold elapsed wall time into sim_time_s and restart the wall anchor."""
        now = time.monotonic()
        self.sim_time_s += (now - self._wall_anchor) * self._warp_factor
        self._wall_anchor = now

    def on_configure(self, state) -> TransitionCallbackReturn:
        self._mode = self.get_parameter("mode").value
        latched = QoSProfile(depth=10, durability=QoSDurabilityPolicy.TRANSIENT_LOCAL)
        self.clock_pub = self._resources.publisher(ClockMsg, "/clock", 10)
        self.tock_pub = self._resources.publisher(Tock, "/tock", latched)
        if self._mode == "lockstep":
            self._resources.subscription(Tick, "/tick", self._on_tick, 10)
        if self._mode in ("stepped", "conductor"):
            # Latched: a participant that subscribes late still gets the step it must answer.
            self.tick_pub = self._resources.publisher(Tick, "/tick", QoSProfile(
                depth=1, durability=QoSDurabilityPolicy.TRANSIENT_LOCAL))
            # Transient local like the participants' Tock publishers: a Tock sent before
            # discovery matched the two (a slow second process) still arrives.
            self._resources.subscription(Tock, "/tock", self._on_tock, QoSProfile(
                depth=100, durability=QoSDurabilityPolicy.TRANSIENT_LOCAL))
        return TransitionCallbackReturn.SUCCESS

    def on_activate(self, state) -> TransitionCallbackReturn:
        result = super().on_activate(state)
        if self._mode == "free_running":
            values = parameter_values(self, ["warp_factor", "publish_period_s"])
            with self._lock:
                self._warp_factor = values["warp_factor"]
                self._wall_anchor = time.monotonic()
            self._start_timer(values["publish_period_s"])
        self._publish_clock()
        if self._mode == "conductor":
            self._activity.timer(self.get_parameter("publish_period_s").value, self._conduct,
                                 clock=Clock(clock_type=ClockType.STEADY_TIME))
            self.start_round(seconds_to_ns(self.sim_time_s))
        return result

    def on_deactivate(self, state) -> TransitionCallbackReturn:
        self._stop()
        return super().on_deactivate(state)

    def on_cleanup(self, state) -> TransitionCallbackReturn:
        self._stop()
        self._resources.release()
        return TransitionCallbackReturn.SUCCESS

    def on_shutdown(self, state) -> TransitionCallbackReturn:
        return self.on_cleanup(state)

    def _stop(self) -> None:
        """Stop the free-running timer, keeping the time reached."""
        self._activity.release()
        with self._lock:
            if self._wall_anchor is not None:
                self._rebase()
                self._wall_anchor = None

    def _publish_clock(self) -> None:
        self.clock_pub.publish(ClockMsg(clock=seconds_to_time_msg(self.sim_time_s)))

    def _on_timer(self) -> None:
        with self._lock:
            self._rebase()
        self._publish_clock()

    # ---- deterministic stepping (stepped, conductor) -----------------------------------------
    def participants(self) -> frozenset[str]:
        return frozenset(n for n in self.get_parameter("participants").value if n)

    def set_time_ns(self, time_ns: int) -> None:
        """Publish /clock = time_ns exactly (stepped/conductor), if anyone subscribes (a
        one-process run sets its nodes' clocks directly; a later subscriber gets the next)."""
        self.sim_time_s = ns_to_seconds(time_ns)
        self.steps += 1
        if listened(self.clock_pub):
            self.clock_pub.publish(ClockMsg(clock=_time_msg(time_ns)))

    def start_round(self, now_ns: int) -> TockRound:
        """Send the Tick of a new step at now_ns (the time /clock last carried)."""
        self._step_id += 1
        tick = Tick(step_id=self._step_id, status=Tick.STATUS_OK)
        tick.header.stamp = _time_msg(now_ns)
        tick.duration = seconds_to_duration_msg(ns_to_seconds(now_ns - self._round_time_ns))
        self._round_time_ns = now_ns
        self.round = TockRound(self._step_id, self.participants())
        self._watchdog.arm("tock", time.monotonic())
        self.tick_pub.publish(tick)
        return self.round

    def round_overdue(self) -> bool:
        return self.round is not None and not self.round.complete and self._watchdog.expired(
            time.monotonic())

    def overdue_message(self) -> str:
        missing = ", ".join(self.round.missing())
        return (f"participant {missing} did not answer Tick {self.round.step_id} within "
                f"{self._watchdog.timeout_s:g} wall s at simulated time "
                f"{ns_to_seconds(self._round_time_ns - self._start_ns):.3f} s")

    def _on_tock(self, tock: Tock) -> None:
        if self.round is None or not is_active(self):
            return
        next_ns = (stamp_ns(tock.next_event) if tock.has_next_event else None)
        self.round.answer(tock.node_name, tock.step_id, next_ns, int(tock.work), int(tock.sent),
                          int(tock.received))
        if self._mode == "conductor" and self.round.complete:
            self._conduct()

    def _conduct(self) -> None:
        """conductor: settle the step, then jump to the next event; stop on a silent one."""
        if self.stopped_reason is not None or self.round is None:
            return
        if self.round_overdue():
            self.stopped_reason = self.overdue_message()
            self.get_logger().error(f"clock stopped: {self.stopped_reason}")
            return
        if not self.round.complete:
            return
        now_ns = self._round_time_ns
        if self._settlement.settled(self.round.quiet, *self.round.totals(), time.monotonic()):
            max_ns = now_ns + seconds_to_ns(self.get_parameter("max_step_s").value)
            now_ns = next_step_ns(now_ns, self.round.next_event_ns(), max_ns)
            self.set_time_ns(now_ns)
        self.start_round(now_ns)

    def _on_tick(self, tick: Tick) -> None:
        if not is_active(self):
            return
        status = Tock.STATUS_OK
        duration = stamp_seconds(tick.duration)
        if tick.status & Tick.STATUS_RESET:
            self.sim_time_s = stamp_seconds(tick.header.stamp)
            self.last_step_id = None
            status |= Tock.STATUS_RESET
        if (self.last_step_id is not None and tick.step_id != self.last_step_id + 1
                and tick.step_id != 0):
            status |= Tock.STATUS_SEQUENCING
            self.get_logger().warning(
                f"tick step_id {tick.step_id} after {self.last_step_id}: out of sequence")
        if duration < 0:
            status |= Tock.STATUS_SEQUENCING
            self.get_logger().warning(f"tick {tick.step_id} has a negative duration; ignored")
        else:
            self.sim_time_s += duration
            self.steps += 1
            self._publish_clock()
        self.last_step_id = tick.step_id
        tock = Tock(step_id=tick.step_id, status=status, node_name=self.get_fully_qualified_name())
        tock.header.stamp = seconds_to_time_msg(self.sim_time_s)
        self.tock_pub.publish(tock)


def _time_msg(time_ns: int):
    return TimeMsg(**split_ns(time_ns))


def main(args=None) -> int:
    return run_node(SimClockNode, args)


if __name__ == "__main__":
    sys.exit(main())
