"""The embedded runner's orchestration: a whole scenario in one process (see `cli` for acomms_run).

`Runner` composes every node of `describe_stack(scenario)` (simulator services, each vehicle's
stack, the sim clock; each group with its lifecycle_manager) in one rclpy Context with a
MultiThreadedExecutor spinning in a background thread, brings the groups up stage by stage
(`startup`; a group that fails stops the run with the node and the reason, and what is up is
brought down again),
then lets the scenario run for its duration in simulated time while a progress bar (`progress`)
counts simulated seconds. Clock modes (`CLOCK_MODES`):
- `deterministic` (default with sim time): the runner moves every node to a SingleThreadedExecutor
  it drives itself: it drains all work due now (`acomms_sim.clock.executor_stepper`), then sets
  /clock (sim_clock_node in mode `stepped`) straight to the next ROS-time timer deadline of any
  node, at most `warp` × real time (`warp=None`: as fast as possible). With `participants`
  (nodes in other processes running `acomms_sim.clock.participant`), each step also waits for
  their Tocks. A callback that raises, or a step or participant that does not finish within
  `step_timeout_s` wall seconds, stops the run (`RunStopped`, one line naming the node and the
  simulated time).
- `free`: sim_clock_node free-running at the warp factor, the multi-threaded executor; nodes can
  fall behind (counted and reported as warnings).
- `wall`: scenarios without sim time (a real modem). Meanwhile the recorder node
(`recorder`) publishes the scenario's traffic (`traffic`) and records transmissions, receptions
and deliveries (`matching`) into a `report.RunRecord`. `stop()` shuts the groups down
(deactivate, clean up, in reverse order) and destroys everything.
"""

from __future__ import annotations

import dataclasses
import pathlib
import sys
import threading
import time
from typing import Any, TextIO

import rclpy
from lifecycle_msgs.srv import GetState
from rclpy.context import Context
from rclpy.executors import MultiThreadedExecutor, SingleThreadedExecutor
from std_srvs.srv import Trigger

from acomms_bringup.description.scenario import Scenario
from acomms_bringup.description.stack import NodeGroup, StackDescription, describe_stack
from acomms_bringup.run import report
from acomms_bringup.run.compose import start_sim_clock
from acomms_bringup.run.emulated_modems import EmulatedModems
from acomms_bringup.run.local_events import plan_events
from acomms_bringup.run.observers import (
    ReceptionObservers,
    attach_dispatch_observers,
    attach_queue_ledgers,
    attach_remote_events,
    observed_receptions,
)
from acomms_bringup.run.partitioned import Partition
from acomms_bringup.run.progress import Progress
from acomms_bringup.run.recorder import Recorder
from acomms_bringup.run.run_errors import RunError, RunStopped  # noqa: F401 (re-exported)
from acomms_bringup.run.shutdown import EndPhases, shut_down_stages
from acomms_bringup.run.startup import (
    SETTLED_STATES,
    GroupFailed,
    Startup,
    StartupError,
    count_endpoints,
    poll_until,
)
from acomms_bringup.run.stepped_run import SteppedRun, hand_back_executor
from acomms_bringup.run.traffic import TrafficError, plan_traffic
from acomms_core.modems.profile import ModemProfile
from acomms_core.modems.registry import MODEM_PROFILE_PARAMETER, modem_profile
from acomms_core.ros.deferred_endpoints import DeferredEndpoints
from acomms_core.ros.ros_support import lifecycle_state_label, now_s
from acomms_sim.clock.events_stepper import default_step_executor
from acomms_sim.clock.stepping import (
    DEFAULT_STEP_TIMEOUT_S,
    StepStats,
)

CLOCK_MODES = ("deterministic", "free")
GROUP_START_TIMEOUT_S = 120.0  # wall seconds for one start-up stage to come up
FAILURE_LOG_WAIT_S = 3.0  # wall seconds for a failed node's log line to reach /rosout
SHUTDOWN_TIMEOUT_S = 30.0
STALL_TIMEOUT_S = 30.0  # wall seconds without simulated time moving before giving up


def with_clock(stack: StackDescription, mode: str, participants: tuple[str, ...] = (),
               tock_timeout_s: float = DEFAULT_STEP_TIMEOUT_S) -> StackDescription:
    """The stack with its sim_clock_node in `stepped` mode for a deterministic run."""
    if mode != "deterministic":
        return stack
    groups = []
    for group in stack.groups:
        nodes = tuple(dataclasses.replace(node, parameters={
            **node.parameters, "mode": "stepped", "participants": list(participants) or [""],
            "tock_timeout_s": tock_timeout_s})
            if node.executable == "sim_clock_node" else node for node in group.nodes)
        groups.append(dataclasses.replace(group, nodes=nodes))
    return dataclasses.replace(stack, groups=tuple(groups))


def vehicle_profiles(scenario: Scenario, stack: StackDescription) -> dict[str, ModemProfile]:
    """Each vehicle's modem profile: the `modem_profile` its nodes are given, else the default."""
    profiles = {}
    run_here = {group.name for group in stack.groups}
    full = stack if all(v.name in run_here for v in scenario.vehicles) else describe_stack(scenario)
    for vehicle in scenario.vehicles:
        names = [node.parameters[MODEM_PROFILE_PARAMETER.name]
                 for node in full.group(vehicle.name).nodes
                 if MODEM_PROFILE_PARAMETER.name in node.parameters]
        try:
            profiles[vehicle.name] = modem_profile(names[0] if names
                                                   else MODEM_PROFILE_PARAMETER.default)
        except ValueError as exc:
            raise RunError(f"vehicle {vehicle.name}: {exc}") from None
    return profiles


def run_endpoints(runner: Runner) -> dict:
    """DDS endpoints of every node of a started run (`startup.count_endpoints`): by kind, total,
    and per vehicle (the total over the vehicles this process runs)."""
    names = [*runner.nodes, runner.recorder.get_fully_qualified_name()]
    counts = count_endpoints(runner.recorder, names)
    here = {group.name for group in runner.stack.groups}
    counts["per_vehicle"] = round(counts["total"] / max(1, sum(
        v.name in here for v in runner.scenario.vehicles)))
    return counts


def _node_state(runner: Runner, name: str) -> str:
    """A managed node's state: asked through its get_state service, a lean node's read from
    the node object (it has no such service)."""
    if runner.lean:
        return lifecycle_state_label(runner.nodes[name])
    response = runner.call(GetState, f"{name}/get_state", GetState.Request())
    return "no answer" if response is None else response.current_state.label


def _logger_name(fully_qualified_name: str) -> str:
    return fully_qualified_name.strip("/").replace("/", ".")



def destroyed_while_waiting(exc: BaseException) -> bool:
    """rclpy's MultiThreadedExecutor (the free clock's) builds its wait set in the spinning
    thread while callbacks in its workers may destroy entities (a node shutting down releases
    its publishers), and so may the main thread (`Runner.stop` stops the traffic while the spin
    thread goes on); a QoS event handler being destroyed then raises InvalidHandle from
    `add_to_wait_set`. No callback failed: the next spin builds the wait set without it."""
    if type(exc).__name__ != "InvalidHandle":
        return False
    frame = exc.__traceback__
    while frame is not None and frame.tb_next is not None:
        frame = frame.tb_next
    return frame is not None and frame.tb_frame.f_code.co_name == "add_to_wait_set"

def spin_once_reporting(runner: Runner, timeout_s: float) -> bool:
    """One spin of the runner's executor; False once the context is shut down. rclpy re-raises
    a callback's exception out of spin_once, which would stop every node of the process: it is
    reported (once per kind), counted, and the run goes on."""
    from rclpy.executors import ExternalShutdownException, ShutdownException

    try:
        runner.executor.spin_once(timeout_sec=timeout_s)
    except (ExternalShutdownException, ShutdownException):
        return False
    except Exception as exc:  # noqa: BLE001 - a node callback failed
        if not runner.context.ok():
            return False
        if destroyed_while_waiting(exc):
            return True
        runner.callback_errors += 1
        kind = f"{type(exc).__name__}: {exc}"
        if kind not in runner._reported:
            runner._reported.add(kind)
            print(f"acomms_run: a callback failed (the run goes on): {kind}", file=sys.stderr)
    return True


def _failure_reason(runner, manager) -> str:
    """The manager's message, with the failed nodes' last error logged on /rosout (lean
    nodes: handed over by their logger, `compose.ErrorLines`)."""
    failed = [_logger_name(name) for name, problem in manager.node_problems() if problem]

    def logged() -> bool:
        with runner.recorder.lock:
            return all(runner.recorder.errors.get(name) for name in failed)

    runner._spin_until(logged, FAILURE_LOG_WAIT_S)
    reason = manager.last_message
    with runner.recorder.lock:
        for name, problem in manager.node_problems():
            lines = runner.recorder.errors.get(_logger_name(name), [])
            if problem and lines:
                reason += f"; {name} logged: {lines[-1]}"
    return reason


class Runner:
    """One scenario in one process: start() brings it up, run() runs it, stop() brings it down.

    Usable from tests: `nodes` maps fully qualified names to the node objects, `context` and
    `executor` are the rclpy ones (the executor spins in a background thread).
    """

    def __init__(self, scenario: Scenario, stream: TextIO = sys.stdout, progress: bool = True,
                 num_threads: int = 4, clock_mode: str = "free",
                 warp: float | None = -1.0, participants: tuple[str, ...] = (),
                 step_timeout_s: float = DEFAULT_STEP_TIMEOUT_S, exclude: tuple[str, ...] = (),
                 step_executor: str | None = None, checkpoint=None, lean: bool | None = None,
                 processes: int | None = None, participant_log: pathlib.Path | None = None):
        """warp: deterministic throttle, None = as fast as possible, -1 = the scenario's;
        exclude: groups run by participants in other processes (acomms_participant);
        step_executor: 'events' or 'single' (deterministic clock; default: events if rclpy has
        the EventsExecutor); checkpoint: called where start-up and the run can stop (between
        steps, while waiting for a stage); what it raises ends start() or run() (acomms_run:
        `StopSignals.check`); lean: `compose.lean_options`, None: the scenario's runtime.lean;
        processes, participant_log: `partitioned.Partition.plan`"""
        self.scenario = scenario
        self.lean = scenario.lean if lean is None else lean
        self.stream = stream
        self.clock_mode = clock_mode if scenario.clock.use_sim_time else "wall"
        self.partition = Partition.plan(self, processes, (exclude, participants), participant_log)
        exclude, participants = Partition.split(self.partition, exclude, participants)
        self.warp = scenario.clock.warp_factor if warp == -1.0 else warp
        self.participants = tuple(participants)
        self.step_timeout_s = step_timeout_s
        self.step_executor_kind = step_executor or default_step_executor()
        self.checkpoint = Partition.guard(self.partition, checkpoint or (lambda: None))
        self.stats = StepStats()
        self._behind: dict[str, str] = {}  # free clock: node -> fell-behind counts
        stack = describe_stack(scenario)
        try:
            self.plans = plan_traffic(scenario, stack)
            self.event_plans = plan_events(scenario)
        except TrafficError as exc:
            raise RunError(str(exc)) from None
        stack = dataclasses.replace(stack, groups=tuple(
            g for g in stack.groups if g.name not in exclude))
        self.stack = with_clock(stack, self.clock_mode, self.participants, step_timeout_s)
        self.record = report.RunRecord(
            scenario=scenario.name, vehicles={v.name: v.src for v in scenario.vehicles},
            duration_s=scenario.duration_seconds, warp_factor=scenario.clock.warp_factor,
            start_time_s=scenario.clock.origin_s, clock_mode=self.clock_mode,
            warp=self.warp if self.clock_mode == "deterministic" else scenario.clock.warp_factor)
        self.progress = Progress(stream, scenario.duration_seconds, progress)
        self.num_threads = num_threads
        self.context: Context | None = None
        self.executor: MultiThreadedExecutor | None = None
        self.recorder: Recorder | None = None
        self.nodes: dict[str, Any] = {}
        self.managers: list[tuple[NodeGroup, Any]] = []
        self._thread: threading.Thread | None = None
        self._pause = threading.Event()  # set: the background spin thread ends (stepping)
        self.step_executor: SingleThreadedExecutor | None = None
        self.callback_errors = 0
        self._reported: set[str] = set()  # kinds of callback failure reported
        self._started_wall = 0.0
        self.start_s = 0.0
        self.startup_phases: dict[str, float] = {}
        self.end_phases = EndPhases()  # wall s of the end of the run, by phase
        # callables(runner) run once every group is up, before the traffic starts (issue 21:
        # MCAP recording, live view)
        self.started_hooks: list = []
        self.emulated_modems = EmulatedModems(scenario)  # evologics, connection: emulated

    # ---- life cycle of the run -------------------------------------------------------------
    def start(self, log_level: str = "warn") -> None:
        """Create every node and bring every group to active, in order; RunError on failure."""
        started = time.monotonic()
        if self.partition is not None:  # they come up while this process does
            self.partition.spawn(log_level)
        self.context = Context()
        rclpy.init(context=self.context,
                   args=["acomms_run", "--ros-args", "--log-level", log_level])
        self.executor = MultiThreadedExecutor(num_threads=self.num_threads, context=self.context)
        observed = observed_receptions(self.scenario, self.stack)
        self.recorder = Recorder(self.scenario, self.plans, self.record,
                                 vehicle_profiles(self.scenario, self.stack),
                                 events=self.event_plans, observed_receptions=observed,
                                 context=self.context)
        self._reception_observers = ReceptionObservers(self, observed)
        start_sim_clock(self.recorder, self.stack.sim_start_s)  # issue 16: clock.start_time
        self.executor.add_node(self.recorder)
        self.stack = self.emulated_modems.serve(self.stack)  # evologics emulators, if any
        init_s = time.monotonic() - started
        try:  # no thread spins the executor meanwhile (see `startup`): only `_spin_until`
            self._start_groups()
        finally:  # a failed start-up is brought down by stop(), through the executor
            self.spin_in_background()
        self.startup_phases, started = {"init_s": init_s, **self.startup_phases}, time.monotonic()
        if self.partition is not None:
            self.partition.wait_until_joined()
        self.start_s = now_s(self.recorder)
        wall = self.clock_mode == "wall"
        if wall:  # no fixed start: second 0 of the outputs, traffic and events is now
            self.record.start_time_s = self.start_s
        attach_queue_ledgers(self)
        attach_remote_events(self, {v.name for v in self.scenario.vehicles} - {
            g.name for g in self.stack.groups})
        attach_dispatch_observers(self)
        self._reception_observers.subscribe_unobserved()
        for hook in self.started_hooks:
            hook(self)
        self._started_wall = time.monotonic()
        self.startup_phases["attach_s"] = self._started_wall - started  # + participants join
        self.recorder.start_traffic(self.start_s if wall else None)

    def _spin(self) -> None:
        """Spin until shutdown or `_pause` (a callback's exception: `spin_once_reporting`)."""
        while (self.context is not None and self.context.ok() and not self._pause.is_set()
               and spin_once_reporting(self, 0.1)):
            pass

    def _spin_until(self, predicate, timeout_s: float) -> bool:
        """Wait until predicate() holds while the executor makes progress: spun by the background
        thread when it runs, else here (start-up); the checkpoint (None or raises) is polled too."""
        def ready() -> bool:
            return self.checkpoint() or predicate()
        if self._thread is not None and self._thread.is_alive():
            return poll_until(ready, timeout_s)
        deadline = time.monotonic() + timeout_s
        while not ready():
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not spin_once_reporting(self, min(0.1, remaining)):
                return ready()
        return True

    @property
    def running(self) -> bool:
        """Every group is up and the traffic has started (start() returned)."""
        return self._started_wall > 0

    def _start_groups(self) -> None:
        """Every group up, stage by stage (`startup`), waiting through `_spin_until`."""
        startup = Startup(self.context, self.executor, self._spin_until, GROUP_START_TIMEOUT_S,
                          lean=self.lean, nodes=self.nodes, managers=self.managers,
                          local_clocks=self.clock_mode == "deterministic",  # SteppedRun's
                          error_sink=self.recorder.note_error,
                          created=self._reception_observers)
        try:
            startup.run(self.stack)
        except GroupFailed as exc:
            raise RunError(f"group {exc.group.name}: {_failure_reason(self, exc.manager)}"
                           ) from None
        except StartupError as exc:
            raise RunError(str(exc)) from None
        finally:
            self.startup_phases = startup.phases

    def sim_elapsed_s(self) -> float:
        return now_s(self.recorder) - self.start_s

    def run(self, duration_s: float | None = None) -> None:
        """Let the scenario run for duration_s simulated seconds (default: the scenario's).
        RunStopped when a deterministic run cannot go on (the record keeps what ran)."""
        duration_s = self.scenario.duration_seconds if duration_s is None else duration_s
        if self.clock_mode == "deterministic":
            SteppedRun(self).run(duration_s)
        else:
            run_free(self, duration_s)
        self.progress.update(duration_s, time.monotonic() - self._started_wall, final=True)

    def mac_counters(self) -> dict[str, dict[str, int]]:
        """The counters of every MAC node of this process, by fully qualified name."""
        from acomms_core.nodes.mac_node import MacNode

        return {name: node.locked(dict, node.counters) for name, node in self.nodes.items()
                if isinstance(node, MacNode)}

    def bridge_summaries(self) -> dict[str, dict]:
        """What every bridge node of this process counted (nodes with `bridge_summary()`)."""
        return {name: node.bridge_summary() for name, node in sorted(self.nodes.items())
                if callable(getattr(node, "bridge_summary", None))}

    def check_fell_behind(self) -> None:
        """Free clock: warn (console and summary) when a MAC count of falling behind grew."""
        for node, counts in report.fell_behind(self.mac_counters()).items():
            if self._behind.get(node) != counts:
                self._behind[node] = counts
                print(f"\nacomms_run: warning at simulated {self.sim_elapsed_s():.0f} s: "
                      f"{report.fell_behind_warning(node, counts)}", file=sys.stderr)
        self.record.warnings = [report.fell_behind_warning(node, counts)
                                for node, counts in sorted(self._behind.items())]

    # ---- deterministic stepping --------------------------------------------------------------
    def clock_node(self):
        from acomms_sim.nodes.sim_clock_node import SimClockNode

        return next(n for n in self.nodes.values() if isinstance(n, SimClockNode))

    def resume_in_executor(self, coroutine):
        """A started coroutine (a shutdown that has to wait) as a task of the executor, spun in
        the background from now on."""
        task = self.executor.create_task(coroutine)
        if self._thread is None or not self._thread.is_alive():
            self.spin_in_background()
        return task

    def spin_in_background(self) -> None:
        """Spin self.executor in a background thread until `_pause` is set or shutdown."""
        self._pause.clear()
        self._thread = threading.Thread(target=self._spin, name="acomms_run executor",
                                        daemon=True)
        self._thread.start()

    def stop(self) -> list[str]:
        """Stop traffic, shut every group down (reverse order), destroy everything: nodes are
        destroyed only once no thread spins them, and after the context is shut down, with the
        endpoints the shutdown released (`DeferredEndpoints`: cheaper then).

        Returns the problems met (empty when the shutdown was clean)."""
        problems = []
        phase = self.end_phases.phase
        if self.recorder is not None:  # after stepping no thread spins the recorder until the
            with phase("stop_traffic"):  # hand-back; a free run's spin thread goes on: what it
                self.recorder.stop_traffic()  # meets destroyed is `destroyed_while_waiting`
        if self.step_executor is not None:
            with phase("hand_back"):  # spun only if the shutdown has to wait
                hand_back_executor(self)
        if self.recorder is not None:
            self.recorder.book_unexplained_arrivals()
        if self.clock_mode == "free":
            self.check_fell_behind()
        deferred = DeferredEndpoints()
        if self.recorder is not None:
            self.end_record()
            with phase("lifecycle"), deferred:
                problems += shut_down_groups(self)
        tear_down(self, deferred)
        if self.partition is not None:
            problems += self.partition.stop()
        return problems

    def end_record(self) -> None:
        """The end of the run: its simulated and wall seconds are taken, nothing more is booked
        (a wall or free run's nodes go on while they shut down); once."""
        if self.recorder is not None and self.recorder.close_books():
            self.record.end_s = max(0.0, self.sim_elapsed_s())
            self.record.wall_seconds = (time.monotonic() - self._started_wall
                                        if self._started_wall else 0.0)

    # ---- helpers (also used by tests) ------------------------------------------------------
    def wait_for(self, future, timeout_s: float):
        deadline = time.monotonic() + timeout_s
        while not future.done():
            if time.monotonic() > deadline:
                future.cancel()
                return None
            time.sleep(0.01)
        return future.result()

    def call(self, srv_type, name: str, request, timeout_s: float = 10.0):
        """Call a service from the recorder node (the executor thread answers it)."""
        client = self.recorder.create_client(srv_type, name)
        try:
            deadline = time.monotonic() + timeout_s
            while not client.service_is_ready():
                if time.monotonic() > deadline:
                    return None
                time.sleep(0.02)
            return self.wait_for(client.call_async(request), max(0.1, deadline - time.monotonic()))
        finally:
            self.recorder.destroy_client(client)

    def call_manager(self, group: NodeGroup, service: str) -> tuple[bool, str]:
        response = self.call(Trigger, f"{group.manager.fully_qualified_name}/{service}",
                             Trigger.Request(), SHUTDOWN_TIMEOUT_S)
        if response is None:
            return False, f"{service}: no answer within {SHUTDOWN_TIMEOUT_S:g} s"
        return response.success, response.message

    def node_states(self) -> dict[str, str]:
        """Every managed node's state, through its get_state service (lean: the node's own)."""
        return {d.fully_qualified_name: _node_state(self, d.fully_qualified_name)
                for group in self.stack.groups for d in group.nodes}

    def all_active(self) -> bool:
        return all(state == "active" for state in self.node_states().values())

    def summary(self) -> dict:
        with self.recorder.lock:
            return report.summarize(self.record)


def run_free(runner: Runner, duration_s: float) -> None:
    """The free clock: wait until simulated time reached duration_s, warning when a MAC fell
    behind; RunError when simulated time stops moving."""
    last_sim, last_move = -1.0, time.monotonic()
    last_check = time.monotonic()
    while True:
        runner.checkpoint()
        elapsed = runner.sim_elapsed_s()
        if elapsed >= duration_s:
            break
        runner.progress.update(elapsed, time.monotonic() - runner._started_wall)
        if time.monotonic() - last_check > 1.0:
            last_check = time.monotonic()
            runner.check_fell_behind()
        if elapsed > last_sim:
            last_sim, last_move = elapsed, time.monotonic()
        elif time.monotonic() - last_move > STALL_TIMEOUT_S:
            raise RunError(f"simulated time stopped at {elapsed:.1f} s "
                           f"(no /clock for {STALL_TIMEOUT_S:g} wall s)")
        time.sleep(0.05)


def shut_down_groups(runner: Runner) -> list[str]:
    """Every settled group of `runner` down: in-process after stepping (`shutdown`), else
    through the managers' services, one group after another; the problems met."""
    if isinstance(runner.executor, SingleThreadedExecutor):
        return shut_down_stages(runner.managers, SHUTDOWN_TIMEOUT_S, runner.resume_in_executor)
    problems = []
    for group, manager in reversed(runner.managers):
        if manager.manager_state not in SETTLED_STATES:
            continue  # start-up interrupted: destroy_node releases its nodes
        ok, message = runner.call_manager(group, "shutdown")
        if not ok:
            problems.append(f"group {group.name}: {message}")
    return problems


def tear_down(runner: Runner, deferred: DeferredEndpoints) -> None:
    """After the groups' shutdown: no thread spins the nodes any more, the context is shut down,
    then the endpoints `deferred` kept and every node are destroyed (rclpy's shutdown would
    destroy the nodes first, while the context is up: the higher cost, `DeferredEndpoints`)."""
    phase = runner.end_phases.phase
    with phase("executor"):
        runner._pause.set()  # the background spin ends
        if runner._thread is not None:
            runner._thread.join(timeout=5.0)
        if runner.executor is not None:
            runner.executor.shutdown(timeout_sec=5.0)
    nodes = [node for node in [*runner.nodes.values(), runner.recorder] if node is not None]
    with phase("context"):
        if runner.context is not None and runner.context.ok():
            for node in nodes:
                runner.context.untrack_node(node)
            rclpy.shutdown(context=runner.context)
    with phase("destroy"):
        deferred.destroy()
        for node in nodes:
            try:
                node.destroy_node()
            except Exception:  # already destroyed with a failed startup: nothing to do
                pass
        runner.nodes.clear()
        runner.emulated_modems.close()  # after the drivers: no pty closes under a running node
