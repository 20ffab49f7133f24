"""sim_clock_node: the simulation clock, published on `/clock` for nodes with use_sim_time.

Two modes (parameter `mode`):
- `free_running`: every `publish_period_s` of wall (steady) time, publish
  sim time = start_time_s + warp_factor × wall time elapsed while active. warp_factor can be
  changed at run time (the clock continues from where it is, without a jump).
- `lockstep`: time only moves when an external simulator (Gazebo, MBARI WEC sim, a test) sends a
  Tick on `/tick`: the clock advances by exactly Tick.duration, `/clock` is published, and a Tock
  with the same step_id is published on `/tock`. A Tick whose step_id is not the previous one + 1
  (or 0, a restart) is still executed but answered with STATUS_SEQUENCING; a Tick with
  STATUS_RESET restarts the clock at the Tick's header stamp. A negative duration is refused
  (Tock with STATUS_SEQUENCING, time unchanged).
"""

from __future__ import annotations

import sys
import threading
import time

from rclpy.clock import Clock, ClockType
from rclpy.lifecycle import LifecycleNode, TransitionCallbackReturn
from rclpy.qos import QoSDurabilityPolicy, QoSProfile
from rosgraph_msgs.msg import Clock as ClockMsg

from acomms_core.ros.ros_support import (
    NodeResources,
    ParameterSpec,
    declare_parameters,
    is_active,
    parameter_values,
    run_node,
    seconds_to_time_msg,
    stamp_seconds,
)
from acomms_interfaces.msg import Tick, Tock

MODES = ("free_running", "lockstep")
SPECS = [
    ParameterSpec("mode", "free_running", "'free_running' (warp factor) or 'lockstep' (tick/tock)"),
    ParameterSpec("warp_factor", 1.0, "free_running: sim seconds per wall second", 0.001, 1e5),
    ParameterSpec("publish_period_s", 0.02, "free_running: wall time between /clock messages, s",
                  0.001, 10.0),
    ParameterSpec("start_time_s", 0.0, "sim time at the first activation, s", 0.0, 1e10),
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
        self.last_step_id: int | None = None
        self.steps = 0
        self._warp_factor = values["warp_factor"]  # the rate the clock runs at right now
        self._mode = values["mode"]  # the mode configured
        self._wall_anchor = None
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


def main(args=None) -> int:
    return run_node(SimClockNode, args)


if __name__ == "__main__":
    sys.exit(main())
