"""Join a deterministic clock from another process: answer every Tick with a Tock.

    participant = StepParticipant(executor, "participant_auv2")   # nodes already in executor
                                                   # (an EventsExecutor or single-threaded)
    participant.spin(until=lambda: done)

On each Tick from the conductor (sim_clock_node in mode `conductor` or `stepped` with
`participants`), the participant lets its nodes' clocks reach the Tick's time (/clock is
published before the Tick; or, given `clocks` (`local_clocks.LocalClocks`), sets them to
the Tick's time itself, in a fixed order), drains its executor to quiescence
(`ExecutorStepper`) and publishes a Tock with the step_id, its name (listed in the conductor's
`participants`), its next pending ROS-time timer deadline, its cumulative deliveries `sent`
to and `received` from other processes and, as `work`, the deliveries and service traffic
between processes since its last Tock (`acomms_sim.clock.crossing`; the conductor settles the
step by them: `stepping.Settlement`): work that stayed in this process needs no repeated round.
`acomms_participant` (`main`) runs described nodes this way from the command line.
"""

from __future__ import annotations

import time
from collections import deque

from builtin_interfaces.msg import Time as TimeMsg
from rclpy.executors import ShutdownException, SingleThreadedExecutor, TimeoutException
from rclpy.node import Node
from rclpy.qos import QoSDurabilityPolicy, QoSProfile

from acomms_core.ros.service_calls import AWAITED
from acomms_interfaces.msg import Tick, Tock
from acomms_sim.clock.events_stepper import EventsStepper
from acomms_sim.clock.executor_stepper import CallbackFailed, ExecutorStepper
from acomms_sim.clock.stepping import (
    DEFAULT_STEP_TIMEOUT_S,
    NS_PER_S,
    StepTimeout,
    Watchdog,
    split_ns,
    stamp_ns,
)

TIME_POLL_S = 0.0005  # wall wait while the step's /clock is still on its way


class StepParticipant:
    """Answers Ticks for every node of `executor` (a SingleThreadedExecutor) under `name`."""

    def __init__(self, executor, name: str, step_timeout_s: float = DEFAULT_STEP_TIMEOUT_S):
        self.name = name
        self.node = Node(name, context=executor.context)
        latched = QoSProfile(depth=10, durability=QoSDurabilityPolicy.TRANSIENT_LOCAL)
        self._tock_pub = self.node.create_publisher(Tock, "/tock", latched)
        self.node.create_subscription(Tick, "/tick", self._ticks_append, latched)
        self._ticks: deque = deque()
        executor.add_node(self.node)
        self.executor = executor
        # rclpy's EventsExecutor (a step costs what its callbacks cost) or a
        # SingleThreadedExecutor (rebuilds a wait set over every entity per wait)
        self.events = not isinstance(executor, SingleThreadedExecutor)
        self.stepper = (EventsStepper(executor, executor.context, step_timeout_s,
                                      bookkeeping=[self.node]) if self.events
                        else ExecutorStepper(executor, step_timeout_s, bookkeeping=[self.node]))
        self.steps = 0
        self.error: str | None = None  # set when a callback failed or a step timed out
        # optional LocalClocks (adopted) of the nodes: set to each Tick's time in a fixed order
        # instead of waiting for every node's /clock (best effort: one lost is a stuck step)
        self.clocks = None
        self._clock_ns: int | None = None
        self._work_reported = 0  # stepper.crossing.work at the last Tock

    def _ticks_append(self, tick: Tick) -> None:
        self._ticks.append(tick)

    def spin_once(self, timeout_s: float = 0.01) -> None:
        if self.events:
            try:
                self.executor.spin_once(timeout_sec=timeout_s)
            except (ShutdownException, TimeoutException):
                raise
            except Exception as error:  # a node callback raised
                raise CallbackFailed(self.stepper.failed_node or "a node", error) from None
            while self._ticks:
                self.answer(self._ticks.popleft())
            return
        try:
            handler, _entity, node = self.executor.wait_for_ready_callbacks(timeout_sec=timeout_s)
        except TimeoutException:
            handler = None
        if handler is not None:
            handler()
            if handler.exception() is not None:
                raise CallbackFailed(node.get_fully_qualified_name(), handler.exception())
        while self._ticks:
            self.answer(self._ticks.popleft())

    def spin(self, until=lambda: False) -> None:
        """Answer Ticks until `until()` or shutdown; a failure is kept in `error` and stops."""
        try:
            with AWAITED.stepping():
                while self.executor.context.ok() and not until():
                    self.spin_once()
        except (CallbackFailed, StepTimeout) as exc:
            self.error = str(exc)
        except ShutdownException:
            pass

    def _wait_for_time(self, time_ns: int) -> int:
        """Drain until every sim-time node's clock reached time_ns; the work done."""
        watchdog = Watchdog(self.stepper.watchdog.timeout_s)
        watchdog.arm(f"{self.name}: /clock for the Tick", time.monotonic())
        work = 0
        while True:
            behind = [n for n in self.stepper.nodes if n is not self.node
                      and n.get_clock().ros_time_is_active
                      and n.get_clock().now().nanoseconds < time_ns]
            if not behind:
                return work
            if watchdog.expired(time.monotonic()):
                raise StepTimeout(watchdog.message(time_ns / NS_PER_S))
            ran = self.stepper.drain(time_ns / NS_PER_S)
            work += ran
            if not ran:
                time.sleep(TIME_POLL_S)

    def answer(self, tick: Tick) -> None:
        now_ns = stamp_ns(tick.header.stamp)
        if self.clocks is not None and now_ns != self._clock_ns:
            self.clocks.set_ns(now_ns)
            self._clock_ns = now_ns
        if self.events:  # the drain waits for the clocks to reach now_ns and due timers
            self.stepper.drain(now_ns / NS_PER_S, now_ns=now_ns)
        else:
            self._wait_for_time(now_ns)
            self.stepper.drain(now_ns / NS_PER_S)
        crossing = self.stepper.crossing
        work, self._work_reported = crossing.work - self._work_reported, crossing.work
        future = [d for d in self.stepper.next_deadline_ns() if d > now_ns]
        tock = Tock(step_id=tick.step_id, status=Tock.STATUS_OK, node_name=self.name,
                    has_next_event=bool(future), work=min(work, 2**32 - 1),
                    sent=crossing.sent, received=max(0, crossing.received))
        tock.header.stamp = tick.header.stamp
        if future:
            tock.next_event = TimeMsg(**split_ns(min(future)))
        self.steps += 1
        self._tock_pub.publish(tock)
