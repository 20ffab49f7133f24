"""The runner's deterministic clock: one `SteppedRun` drives a started `Runner` through time.

It stops the runner's background spinning and moves every node to an executor it drives itself
(rclpy's EventsExecutor drained by `acomms_sim.clock.events_stepper.EventsStepper`, or with
`--executor single` a SingleThreadedExecutor drained by `executor_stepper.ExecutorStepper`):
drain all work due now;
with Tick/Tock participants in other processes, repeat Tick rounds at the same time until no
message between processes is in flight (`acomms_sim.clock.stepping.Settlement`, counted by
`acomms_sim.clock.crossing`; work that stayed inside a process was settled by its own drain);
then move time straight to the earliest
pending event (ROS-time timer deadlines here, `next_event` of the participants), at most `warp` ×
real time: /clock is published (sim_clock_node in mode `stepped`) for other processes, and the
clocks of this process's nodes are set directly, in a fixed order (`LocalClocks`; on the
EventsExecutor lazily: at each step only the clocks of the nodes with a timer due, the others
when first read or before their node's next callback, so a step costs what is due rather than
the node count). Time does not
move while a node waits for the reply to a `call_awaited` service call (the steppers hold the
step; `AWAITED.stepping()` tells the callers not to abandon calls on wall-clock timeouts: see
acomms_core.ros.service_calls). A callback that
raises or a step that does not finish within the step timeout becomes `RunStopped` (one line: the
node and the simulated time); the runner's checkpoint (a stop signal) is polled between steps,
while throttled and while waiting for Tocks. After the run the nodes' clocks stay at the last
step's time without /clock subscriptions (`LocalClocks.release(resubscribe=False)`: the
shutdown follows, and a later run adopts them again), and a SingleThreadedExecutor takes the
nodes back for the shutdown (`hand_back_executor`).
"""

from __future__ import annotations

import time

from acomms_bringup.run.run_errors import RunStopped
from acomms_core.ros.service_calls import AWAITED
from acomms_sim.clock.events_stepper import EXECUTOR_EVENTS, EventsStepper, make_executor
from acomms_sim.clock.executor_stepper import (
    CallbackFailed,
    ExecutorStepper,
    node_name,
    unready_local_clients,
)
from acomms_sim.clock.local_clocks import LocalClocks
from acomms_sim.clock.stepping import (
    Settlement,
    StepTimeout,
    WarpThrottle,
    Watchdog,
    next_step_ns,
    ns_to_seconds,
    seconds_to_ns,
)

THROTTLE_SLICE_S = 0.25  # longest single sleep of the warp throttle (progress stays live)
TOCK_POLL_S = 0.0002  # wall wait between polls for participants' Tocks (single executor)
TOCK_WAIT_S = 0.01  # longest wall wait for the next event (a Tock) on the EventsExecutor
JOIN_TIMEOUT_S = 30.0
DISCOVERY_POLL_S = 0.005  # wall wait between checks that local clients see their servers


class SteppedRun:
    """Deterministic stepping of one started Runner (see the module docstring)."""

    def __init__(self, runner):
        self.runner = runner
        self.clock = runner.clock_node()
        self.settlement = Settlement()  # when a step with participants is settled
        self._work_seen = 0  # this process's crossing work at its last round's end

    def _take_over_executor(self):
        """Stop the background spin; move every node to an executor run here (the
        EventsExecutor where rclpy has it and the runner asks for it, else single-threaded)."""
        runner = self.runner
        executor = make_executor(runner.context, runner.step_executor_kind)  # before the spin stops
        runner._pause.set()
        if runner._thread is not None:
            runner._thread.join(timeout=JOIN_TIMEOUT_S)
        runner.step_executor = executor
        for node in runner.executor.get_nodes():
            runner.step_executor.add_node(node)
        crossing = bool(runner.participants)  # other processes to settle steps with
        if runner.step_executor_kind == EXECUTOR_EVENTS:
            return EventsStepper(runner.step_executor, runner.context, runner.step_timeout_s,
                                 bookkeeping=[self.clock], count_crossing=crossing)
        return ExecutorStepper(runner.step_executor, runner.step_timeout_s,
                               bookkeeping=[self.clock], count_crossing=crossing)

    def run(self, duration_s: float) -> None:
        runner = self.runner
        stepper = self._take_over_executor()
        lazy = isinstance(stepper, EventsStepper)  # it brings a node's clock up before a callback
        clocks = LocalClocks(self._ordered_nodes(), lazy=lazy)
        clocks.adopt()
        throttle = WarpThrottle(runner.warp)
        start_ns = seconds_to_ns(runner.start_s)
        clocks.set_ns(start_ns)
        stepper.use_clocks(clocks)
        now_ns, end_ns = start_ns, start_ns + seconds_to_ns(duration_s)
        try:
            self._wait_for_local_services(stepper, start_ns)
            with AWAITED.stepping():
                while True:
                    runner.checkpoint()  # a stop signal ends the run between two steps
                    remote = self._settle(stepper, now_ns)
                    runner.progress.update(ns_to_seconds(now_ns - start_ns), self._wall_s())
                    if now_ns >= end_ns:
                        break
                    now_ns = next_step_ns(now_ns, stepper.next_deadline_ns() + remote, end_ns)
                    self._throttle(throttle, ns_to_seconds(now_ns - start_ns))
                    self.clock.set_time_ns(now_ns)  # /clock, for other processes and tools
                    clocks.set_ns(now_ns, stepper.due_nodes(now_ns) if lazy else None)
                    runner.stats.steps += 1
        except CallbackFailed as exc:
            raise RunStopped(f"{exc} at simulated time "
                             f"{ns_to_seconds(now_ns - start_ns):.3f} s") from None
        except StepTimeout as exc:
            raise RunStopped(str(exc)) from None
        finally:
            runner.stats.callbacks = stepper.callbacks
            runner.record.steps = runner.stats.steps
            with runner.end_phases.phase("release_clocks"):
                stepper.close()
                clocks.release(resubscribe=False)  # a later run adopts them again

    def _wait_for_local_services(self, stepper, start_ns: int) -> None:
        """Before time moves: every client whose server runs in this process sees it ready
        (else a first call at the start would find no service, depending on discovery speed).
        RunStopped naming one client after the step timeout. The wait is start-up: its wall
        time counts in startup_wall_s, not in the run's."""
        started = time.monotonic()
        watchdog = Watchdog(stepper.watchdog.timeout_s)
        watchdog.arm("service discovery", started)
        while unready := unready_local_clients(stepper.nodes):
            self.runner.checkpoint()  # a stop signal while discovery is still going on
            if watchdog.expired(time.monotonic()):
                watchdog.what = unready[0]
                raise RunStopped(watchdog.message(0.0))
            stepper.drain(ns_to_seconds(start_ns), now_ns=start_ns)
            time.sleep(DISCOVERY_POLL_S)
        waited = time.monotonic() - started
        self.runner._started_wall += waited
        self.runner.record.startup_wall_s += waited

    def _ordered_nodes(self) -> list:
        """This process's nodes in a fixed order (the order their clocks move in, so the order
        of timers due at one time): the recorder, the described nodes in creation order, then
        any other node of the executor by name."""
        runner = self.runner
        ordered = [runner.recorder, *runner.nodes.values()]
        known = {id(node) for node in ordered}
        others = [n for n in runner.step_executor.get_nodes() if id(n) not in known]
        return ordered + sorted(others, key=node_name)

    def _wall_s(self) -> float:
        return time.monotonic() - self.runner._started_wall

    def _settle(self, stepper: ExecutorStepper | EventsStepper, now_ns: int) -> list[int]:
        """Drain this process; with participants, repeat Tick rounds at now_ns until the step
        is settled (`Settlement`: a quiet round that sent, over all processes, as many
        deliveries between processes as the round before had received; work that stayed inside
        a process is settled by its own drain). The participants' next events. On the
        EventsExecutor the wait for Tocks blocks on the next event (no polling: the participants
        get the cores)."""
        stepper.drain(ns_to_seconds(now_ns), now_ns=now_ns)
        if not self.runner.participants:
            return []
        wait_event = getattr(stepper, "wait_event", None)
        crossing = stepper.crossing
        while True:
            tock_round = self.clock.start_round(now_ns)
            self.runner.stats.rounds += 1
            while not tock_round.complete:
                self.runner.checkpoint()
                if self.clock.round_overdue():
                    raise StepTimeout(self.clock.overdue_message())
                if wait_event is not None:
                    wait_event(TOCK_WAIT_S)
                elif not stepper.drain(ns_to_seconds(now_ns), now_ns=now_ns):
                    time.sleep(TOCK_POLL_S)
            stepper.drain(ns_to_seconds(now_ns), now_ns=now_ns)
            quiet = tock_round.quiet and crossing.work == self._work_seen
            self._work_seen = crossing.work
            sent, received = tock_round.totals()
            if self.settlement.settled(quiet, sent + crossing.sent,
                                       received + crossing.received, time.monotonic()):
                self.runner.stats.unbalanced = self.settlement.unbalanced
                return tock_round.next_event_ns()

    def _throttle(self, throttle: WarpThrottle, sim_s: float) -> None:
        """Wait until stepping to sim_s keeps within warp × real time (progress stays live)."""
        while True:
            self.runner.checkpoint()
            wait = throttle.wait_s(sim_s, self._wall_s())
            if wait <= 0:
                return
            self.runner.progress.update(sim_s - wait * throttle.warp, self._wall_s())
            time.sleep(min(wait, THROTTLE_SLICE_S))


def hand_back_executor(runner) -> None:
    """After stepping, a SingleThreadedExecutor holds `runner`'s nodes again for the shutdown:
    the one that stepped (it owns the run's tasks and futures) or, after the EventsExecutor (not
    made for a second thread creating clients meanwhile), a fresh one with every node; not spun
    (the shutdown runs in the caller's thread) unless a shutdown has to wait for something
    (`Runner.resume_in_executor`). Not a multi-threaded one: the shutdown's transitions destroy
    publishers and subscriptions, and rclpy's MultiThreadedExecutor, building its wait set in
    its spin thread while a transition destroys in a worker thread, adds the destroyed QoS event
    handler anyway and raises InvalidHandle out of spin (rclpy issue 1284). The start-up
    executor is retired."""
    from rclpy.executors import SingleThreadedExecutor

    retired, runner.executor, runner.step_executor = (runner.executor, runner.step_executor,
                                                      None)
    retired.shutdown(timeout_sec=1.0)
    if not isinstance(runner.executor, SingleThreadedExecutor):
        events = runner.executor
        runner.executor = SingleThreadedExecutor(context=runner.context)
        for node in events.get_nodes():
            events.remove_node(node)
            runner.executor.add_node(node)
        events.shutdown()
