"""acomms_run SCENARIO.yaml: the embedded runner — a whole scenario in one process.

Composes every node of `describe_stack(scenario)` (simulator services, each vehicle's stack, the
sim clock; each group with its lifecycle_manager) in one rclpy Context with a
MultiThreadedExecutor, brings the groups up in order (a group that fails stops the run with the
node and the reason, and what is up is brought down again), then lets the scenario run for its
duration in simulated time (sim_clock_node at the warp factor) while a progress bar counts
simulated seconds. Meanwhile a recorder node (`/acomms_run`) publishes the scenario's `traffic`
on the source vehicles' topics and records every transmission (`<vehicle>/transmit`), every
arrival's fate (`<vehicle>/reception_events`, SimReceptionEvent) and every message that comes
out of a destination's packet_dispatch_node. At the end the groups are shut down (deactivate,
clean up, in reverse order), the summary table is printed and the outputs are written
(`acomms_bringup.run.report`): summary.json, timeline.csv, timeline.json, timeline.png,
messages.csv.

    acomms_run acomms_bringup/config/demo.yaml [--duration S] [--warp W] [--out DIR] [--quiet]

Exit status: 0 after a complete run, 1 for a bad scenario file or a node that would not start
(one message naming the file and key, or the node and the reason), 130 when interrupted (the
summary of what ran is still written).
"""

from __future__ import annotations

import argparse
import dataclasses
import pathlib
import sys
import threading
import time
from collections import defaultdict
from typing import Any, TextIO

import rclpy
from lifecycle_msgs.srv import GetState
from rcl_interfaces.msg import Log
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.context import Context
from rclpy.executors import MultiThreadedExecutor
from rclpy.node import Node
from rclpy.parameter import Parameter
from std_srvs.srv import Trigger

from acomms_bringup.description.scenario import (
    Scenario,
    ScenarioError,
    Traffic,
    Vehicle,
    load_scenario,
)
from acomms_bringup.description.stack import NodeGroup, StackDescription, describe_stack
from acomms_bringup.run import report
from acomms_bringup.run.compose import ComposeError, create_node
from acomms_bringup.run.traffic import TrafficError, build_message, match_key, message_class

DEFAULT_OUT_DIR = "acomms_demo_out"
GROUP_START_TIMEOUT_S = 120.0  # wall seconds for one group to come up
SHUTDOWN_TIMEOUT_S = 30.0
STALL_TIMEOUT_S = 30.0  # wall seconds without simulated time moving before giving up
BROADCAST = 121  # no vehicle has this SRC: every other vehicle is a destination


class RunError(RuntimeError):
    """The run cannot go on; the message says what and why (printed without a traceback)."""


@dataclasses.dataclass
class TrafficPlan:
    """One traffic entry with what the runner needs to publish it and to recognise arrivals."""

    vehicle: Vehicle
    traffic: Traffic
    cls: type
    publish_topic: str  # relative, where destinations' packet_dispatch_node publishes it
    destinations: tuple[str, ...]
    next_due_s: float = 0.0
    seq: int = 0
    sent: dict[Any, report.SentMessage] = dataclasses.field(default_factory=dict)  # key -> msg

    @property
    def label(self) -> str:
        return self.traffic.topic


def plan_traffic(scenario: Scenario, stack: StackDescription) -> list[TrafficPlan]:
    """Resolve every traffic entry against its codec config and ROS type (RunError if bad)."""
    from acomms_core.codecs.config import CodecConfigError, load_codec_config
    from acomms_core.codecs.ros_types import normalize_type_name

    file = str(scenario.path or scenario.name)
    plans = []
    for vehicle in scenario.vehicles:
        if not vehicle.traffic:
            continue
        queue = stack.group(vehicle.name).node("message_queue_node")
        default_dest = int(queue.parameters.get("default_dest", BROADCAST))
        try:
            codecs = load_codec_config(str(vehicle.codec_config))
        except (CodecConfigError, OSError) as exc:
            raise RunError(f"{file}: codec config of vehicle {vehicle.name}: {exc}") from None
        for traffic in vehicle.traffic:
            codec = next((m for m in codecs.message_codecs
                          if traffic.topic in [t.lstrip("~/") for t in m.subscribe_topics()]),
                         None)
            if codec is None or not codec.publish_topic:
                raise RunError(f"{file}: {traffic.key_path}.topic: the codec config has no "
                               f"publish_topic for {traffic.topic}")
            if normalize_type_name(codec.ros_type) != traffic.ros_type:
                raise RunError(f"{file}: {traffic.key_path}.type: codec config says "
                               f"{codec.ros_type}")
            dest = codec.default_dest if codec.default_dest is not None else default_dest
            by_src = [v.name for v in scenario.vehicles if v.src == dest and v is not vehicle]
            destinations = tuple(by_src or [v.name for v in scenario.vehicles
                                            if v is not vehicle])
            try:
                cls = message_class(traffic.ros_type, traffic.key_path)
                build_message(cls, traffic.fields, seq=0, vehicle=vehicle.name, time_s=0.0,
                              key_path=traffic.key_path)
            except TrafficError as exc:
                raise RunError(f"{file}: {exc}") from None
            plans.append(TrafficPlan(vehicle, traffic, cls, codec.publish_topic.lstrip("~/"),
                                     destinations, next_due_s=traffic.start_seconds))
    return plans


def _seconds(stamp) -> float:
    return stamp.sec + stamp.nanosec * 1e-9


class Recorder(Node):
    """Publishes the scenario's traffic and records what happened (see module docstring)."""

    def __init__(self, scenario: Scenario, plans: list[TrafficPlan], record: report.RunRecord,
                 **kwargs):
        super().__init__("acomms_run", parameter_overrides=[
            Parameter("use_sim_time", value=scenario.clock.use_sim_time)], **kwargs)
        from acomms_interfaces.msg import SimReceptionEvent, TransmittedPacket

        self.scenario, self.plans, self.record = scenario, plans, record
        self.lock = threading.Lock()
        self.errors: dict[str, list[str]] = defaultdict(list)  # logger name -> ERROR lines
        self._group = MutuallyExclusiveCallbackGroup()
        self._traffic_timer = None
        self._traffic_publishers = {}
        for vehicle in scenario.vehicles:
            ns = vehicle.namespace
            self.create_subscription(TransmittedPacket, f"{ns}/transmit",
                                     lambda m, v=vehicle: self._on_transmit(v, m), 100,
                                     callback_group=self._group)
            self.create_subscription(SimReceptionEvent, f"{ns}/reception_events",
                                     lambda m, v=vehicle: self._on_event(v, m), 100,
                                     callback_group=self._group)
        for plan in plans:
            self._traffic_publishers[id(plan)] = self.create_publisher(
                plan.cls, f"{plan.vehicle.namespace}/{plan.traffic.topic}", 50)
        by_topic: dict[tuple[str, type], list[TrafficPlan]] = defaultdict(list)
        for plan in plans:
            by_topic[(plan.publish_topic, plan.cls)].append(plan)
        for (topic, cls), topic_plans in by_topic.items():
            for receiver in scenario.vehicles:
                self.create_subscription(
                    cls, f"{receiver.namespace}/{topic}",
                    lambda m, r=receiver, p=topic_plans: self._on_arrival(r, p, m), 50,
                    callback_group=self._group)
        self.create_subscription(Log, "/rosout", self._on_log, 100, callback_group=self._group)

    def now_s(self) -> float:
        return self.get_clock().now().nanoseconds * 1e-9

    # ---- traffic ---------------------------------------------------------------------------
    def start_traffic(self) -> None:
        if not self.plans:
            return
        period = min(0.5, min(p.traffic.period_seconds for p in self.plans) / 2.0)
        self._traffic_timer = self.create_timer(period, self._on_traffic_timer,
                                                callback_group=self._group)
        self._on_traffic_timer()

    def stop_traffic(self) -> None:
        if self._traffic_timer is not None:
            self.destroy_timer(self._traffic_timer)
            self._traffic_timer = None

    def _on_traffic_timer(self) -> None:
        now = self.now_s()
        for plan in self.plans:
            if now < plan.next_due_s:
                continue
            while plan.next_due_s <= now:  # missed periods (a clock jump) are skipped
                plan.next_due_s += plan.traffic.period_seconds
            plan.seq += 1
            message = build_message(plan.cls, plan.traffic.fields, seq=plan.seq,
                                    vehicle=plan.vehicle.name, time_s=now,
                                    key_path=plan.traffic.key_path)
            sent = report.SentMessage(plan.label, plan.vehicle.name, plan.seq, now,
                                      plan.destinations)
            with self.lock:
                plan.sent[match_key(message)] = sent
                self.record.sent.append(sent)
            self._traffic_publishers[id(plan)].publish(message)

    def _on_arrival(self, receiver: Vehicle, plans: list[TrafficPlan], message) -> None:
        now = self.now_s()
        key = match_key(message)
        with self.lock:
            match = None
            for plan in plans:
                if plan.vehicle is receiver:
                    continue
                if isinstance(key, str):
                    found = plan.sent.get(key)
                    if found is not None:
                        match = found
                else:  # a stamp, possibly rounded by the codec: the nearest sent one
                    tolerance = min(1.0, plan.traffic.period_seconds / 2.0)
                    nearest = min(plan.sent.items(), key=lambda item: abs(item[0] - key),
                                  default=None)
                    if nearest is not None and abs(nearest[0] - key) < tolerance:
                        match = nearest[1]
                if match is not None:
                    break
            if match is None:
                self.record.unmatched[f"{plans[0].label} at {receiver.name}"] += 1
            elif receiver.name not in match.destinations:
                self.record.overheard[f"{match.topic} at {receiver.name}"] += 1
            elif not any((d.topic, d.source, d.destination, d.seq)
                         == (match.topic, match.source, receiver.name, match.seq)
                         for d in self.record.deliveries):
                self.record.deliveries.append(report.Delivery(
                    match.topic, match.source, receiver.name, match.seq, match.sent_s, now))

    # ---- channel events --------------------------------------------------------------------
    def _on_transmit(self, vehicle: Vehicle, message) -> None:
        from acomms_core.modems.modem_rates import rate_info
        from acomms_interfaces.msg import Packet
        from acomms_sim.physics.packet_performance import packet_duration_s

        packet = message.packet
        try:
            fdp = (packet.packet_type == Packet.PACKET_TYPE_FDP
                   or (packet.packet_type == Packet.PACKET_TYPE_AUTO
                       and rate_info(packet.dataframe_rate).fdp))
            duration = packet_duration_s(fdp, packet.miniframe_rate, packet.dataframe_rate,
                                         len(packet.miniframe_bytes), len(packet.dataframe_bytes))
        except ValueError:
            duration = 0.0
        with self.lock:
            self.record.transmissions.append(report.Transmission(
                vehicle.name, vehicle.src, int(packet.dest), _seconds(message.xst.time),
                duration, len(packet.miniframe_bytes) + len(packet.dataframe_bytes)))

    def _on_event(self, vehicle: Vehicle, event) -> None:
        with self.lock:
            self.record.receptions.append(report.Reception(
                vehicle.name, int(event.src), int(event.dest), _seconds(event.transmit_time),
                _seconds(event.arrival_time), _seconds(event.duration), event.outcome,
                float(event.snr_db), bool(event.collided)))

    def _on_log(self, log: Log) -> None:
        if log.level >= Log.ERROR:
            with self.lock:
                self.errors[log.name].append(log.msg)


class Progress:
    """A progress bar in simulated seconds: carriage-return updates on a terminal, a plain line
    every 10 % otherwise (logs, CI)."""

    def __init__(self, stream: TextIO, total_s: float, enabled: bool = True):
        self.stream, self.total_s, self.enabled = stream, total_s, enabled
        self.tty = enabled and hasattr(stream, "isatty") and stream.isatty()
        self._last_bucket = -1
        self._last_draw = 0.0

    def line(self, sim_s: float, wall_s: float) -> str:
        fraction = min(1.0, max(0.0, sim_s / self.total_s))
        bar = "#" * int(fraction * 30)
        rate = sim_s / wall_s if wall_s > 0 else 0.0
        return (f"[{bar:<30}] {sim_s:6.0f}/{self.total_s:.0f} simulated s  "
                f"{wall_s:5.1f} wall s  x{rate:.1f}")

    def update(self, sim_s: float, wall_s: float, final: bool = False) -> None:
        if not self.enabled:
            return
        if self.tty:
            now = time.monotonic()
            if final or now - self._last_draw >= 0.25:
                self._last_draw = now
                self.stream.write("\r" + self.line(sim_s, wall_s) + ("\n" if final else ""))
                self.stream.flush()
            return
        bucket = int(min(1.0, sim_s / self.total_s) * 10)
        if bucket > self._last_bucket or final:
            self._last_bucket = bucket
            self.stream.write(self.line(sim_s, wall_s) + "\n")
            self.stream.flush()


def _logger_name(fully_qualified_name: str) -> str:
    return fully_qualified_name.strip("/").replace("/", ".")


class Runner:
    """One scenario in one process: start() brings it up, run() runs it, stop() brings it down.

    Usable from tests: `nodes` maps fully qualified names to the node objects, `context` and
    `executor` are the rclpy ones (the executor spins in a background thread).
    """

    def __init__(self, scenario: Scenario, stream: TextIO = sys.stdout, progress: bool = True,
                 num_threads: int = 4):
        self.scenario = scenario
        self.stream = stream
        self.stack = describe_stack(scenario)
        self.plans = plan_traffic(scenario, self.stack)
        self.record = report.RunRecord(
            scenario=scenario.name, vehicles={v.name: v.src for v in scenario.vehicles},
            duration_s=scenario.duration_seconds, warp_factor=scenario.clock.warp_factor)
        self.progress = Progress(stream, scenario.duration_seconds, progress)
        self.num_threads = num_threads
        self.context: Context | None = None
        self.executor: MultiThreadedExecutor | None = None
        self.recorder: Recorder | None = None
        self.nodes: dict[str, Any] = {}
        self.managers: list[tuple[NodeGroup, Any]] = []
        self._thread: threading.Thread | None = None
        self.callback_errors = 0
        self._started_wall = 0.0
        self.start_s = 0.0

    # ---- life cycle of the run -------------------------------------------------------------
    def start(self, log_level: str = "warn") -> None:
        """Create every node and bring every group to active, in order; RunError on failure."""
        self.context = Context()
        rclpy.init(context=self.context,
                   args=["acomms_run", "--ros-args", "--log-level", log_level])
        self.executor = MultiThreadedExecutor(num_threads=self.num_threads, context=self.context)
        self.recorder = Recorder(self.scenario, self.plans, self.record, context=self.context)
        self.executor.add_node(self.recorder)
        self._thread = threading.Thread(target=self._spin, name="acomms_run executor",
                                        daemon=True)
        self._thread.start()
        for group in self.stack.groups:
            self._start_group(group)
        self.start_s = self.recorder.now_s()
        self._started_wall = time.monotonic()
        self.recorder.start_traffic()

    def _spin(self) -> None:
        """Spin until shutdown. rclpy re-raises a callback's exception out of spin(), which would
        stop every node of the process; report it (once per kind), count it and keep going."""
        from rclpy.executors import ExternalShutdownException, ShutdownException

        reported = set()
        while self.context is not None and self.context.ok():
            try:
                self.executor.spin_once(timeout_sec=0.1)
            except (ExternalShutdownException, ShutdownException):
                break
            except Exception as exc:  # noqa: BLE001 - a node callback failed
                if not self.context.ok():
                    break
                self.callback_errors += 1
                kind = f"{type(exc).__name__}: {exc}"
                if kind not in reported:
                    reported.add(kind)
                    print(f"acomms_run: a callback failed (the run goes on): {kind}",
                          file=sys.stderr)

    def _start_group(self, group: NodeGroup) -> None:
        created = []
        try:
            for description in (*group.nodes, group.manager):
                node = create_node(description, self.context)
                created.append(node)
                self.nodes[description.fully_qualified_name] = node
                self.executor.add_node(node)
        except ComposeError as exc:
            raise RunError(f"group {group.name}: cannot create node {exc}") from None
        manager = created[-1]
        self.managers.append((group, manager))
        deadline = time.monotonic() + GROUP_START_TIMEOUT_S
        while manager.manager_state not in ("active", "failed"):
            if time.monotonic() > deadline:
                raise RunError(f"group {group.name}: not active after {GROUP_START_TIMEOUT_S:g} s "
                               f"(manager state {manager.manager_state})")
            time.sleep(0.05)
        if manager.manager_state == "failed":
            time.sleep(0.3)  # let the failing node's log reach /rosout
            raise RunError(f"group {group.name}: {self._failure_reason(manager)}")

    def _failure_reason(self, manager) -> str:
        reason = manager.last_message
        with self.recorder.lock:
            for managed in manager._managed:
                lines = self.recorder.errors.get(_logger_name(managed.name), [])
                if managed.problem and lines:
                    reason += f"; {managed.name} logged: {lines[-1]}"
        return reason

    def sim_elapsed_s(self) -> float:
        return self.recorder.now_s() - self.start_s

    def run(self, duration_s: float | None = None) -> None:
        """Let the scenario run for duration_s simulated seconds (default: the scenario's)."""
        duration_s = self.scenario.duration_seconds if duration_s is None else duration_s
        last_sim, last_move = -1.0, time.monotonic()
        while True:
            elapsed = self.sim_elapsed_s()
            if elapsed >= duration_s:
                break
            self.progress.update(elapsed, time.monotonic() - self._started_wall)
            if elapsed > last_sim:
                last_sim, last_move = elapsed, time.monotonic()
            elif time.monotonic() - last_move > STALL_TIMEOUT_S:
                raise RunError(f"simulated time stopped at {elapsed:.1f} s "
                               f"(no /clock for {STALL_TIMEOUT_S:g} wall s)")
            time.sleep(0.05)
        self.progress.update(duration_s, time.monotonic() - self._started_wall, final=True)

    def stop(self) -> list[str]:
        """Stop traffic, shut every group down (reverse order), destroy everything.

        Returns the problems met (empty when the shutdown was clean)."""
        problems = []
        if self.recorder is not None:
            self.recorder.stop_traffic()
            self.record.end_s = max(0.0, self.sim_elapsed_s())
            self.record.wall_seconds = (time.monotonic() - self._started_wall
                                        if self._started_wall else 0.0)
            for group, _manager in reversed(self.managers):
                ok, message = self.call_manager(group, "shutdown")
                if not ok:
                    problems.append(f"group {group.name}: {message}")
        if self.executor is not None:
            self.executor.shutdown(timeout_sec=5.0)
        for node in [*self.nodes.values(), self.recorder]:
            if node is not None:
                try:
                    node.destroy_node()
                except Exception:  # already destroyed with a failed startup: nothing to do
                    pass
        self.nodes.clear()
        if self.context is not None and self.context.ok():
            rclpy.shutdown(context=self.context)
        if self._thread is not None:
            self._thread.join(timeout=5.0)
        return problems

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
        """Every managed node's state, asked through its get_state service."""
        states = {}
        for group in self.stack.groups:
            for description in group.nodes:
                name = description.fully_qualified_name
                response = self.call(GetState, f"{name}/get_state", GetState.Request())
                states[name] = "no answer" if response is None else response.current_state.label
        return states

    def all_active(self) -> bool:
        return all(state == "active" for state in self.node_states().values())

    def summary(self) -> dict:
        with self.recorder.lock:
            return report.summarize(self.record)


def _positive(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
    return value


def _with_overrides(scenario: Scenario, duration: float | None, warp: float | None) -> Scenario:
    if duration is not None:
        scenario = dataclasses.replace(scenario, duration_seconds=duration)
    if warp is not None:
        if not scenario.clock.use_sim_time:
            raise RunError(f"{scenario.path}: clock.use_sim_time: --warp needs simulated time "
                           "(this scenario runs in wall-clock time)")
        scenario = dataclasses.replace(
            scenario, clock=dataclasses.replace(scenario.clock, warp_factor=warp))
    return scenario


def main(argv: list[str] | None = None) -> int:
    """acomms_run: run a scenario (every node in this process), print and write its summary."""
    parser = argparse.ArgumentParser(prog="acomms_run", description=main.__doc__)
    parser.add_argument("scenario",
                        help="scenario YAML file (see acomms_bringup.description.scenario)")
    parser.add_argument("--duration", type=_positive, metavar="S",
                        help="simulated seconds to run (default: the scenario's)")
    parser.add_argument("--warp", type=_positive, metavar="W",
                        help="simulated seconds per wall second (default: the scenario's)")
    parser.add_argument("--out", default=DEFAULT_OUT_DIR, metavar="DIR",
                        help=f"output directory (default: ./{DEFAULT_OUT_DIR})")
    parser.add_argument("--quiet", "-q", action="store_true",
                        help="no progress bar and no startup lines; the summary is still printed")
    parser.add_argument("--log-level", default="warn",
                        choices=["debug", "info", "warn", "error", "fatal"],
                        help="log level of the nodes (default: warn)")
    arguments = parser.parse_args(argv)
    out = sys.stdout

    def say(text: str) -> None:
        if not arguments.quiet:
            print(text, file=out, flush=True)

    runner = None
    interrupted = False
    try:
        scenario = _with_overrides(load_scenario(arguments.scenario), arguments.duration,
                                   arguments.warp)
        for warning in scenario.warnings:
            print(f"acomms_run: {arguments.scenario}: warning: {warning}", file=sys.stderr)
        runner = Runner(scenario, stream=out, progress=not arguments.quiet)
        say(f"acomms_run: {scenario.name}: {len(scenario.vehicles)} vehicles, "
            f"{sum(len(g.nodes) for g in runner.stack.groups)} managed nodes, "
            f"{scenario.duration_seconds:g} simulated s at warp {scenario.clock.warp_factor:g}")
        started = time.monotonic()
        runner.start(arguments.log_level)
        say(f"acomms_run: all nodes active in {time.monotonic() - started:.1f} s; running")
        runner.run()
    except ScenarioError as exc:
        print(f"acomms_run: {exc}", file=sys.stderr)
        return 1
    except RunError as exc:
        print(f"acomms_run: {arguments.scenario}: {exc}", file=sys.stderr)
        if runner is not None:
            runner.stop()
        return 1
    except KeyboardInterrupt:
        interrupted = True
        print("\nacomms_run: interrupted; shutting down", file=sys.stderr)
        if runner is None or runner.recorder is None:
            return 130
    except Exception as exc:  # a bug: say what, without a traceback unless asked for
        if arguments.log_level == "debug":
            raise
        print(f"acomms_run: {arguments.scenario}: unexpected error {exc!r} (--log-level debug "
              "shows the traceback)", file=sys.stderr)
        if runner is not None:
            runner.stop()
        return 1
    problems = runner.stop()
    for problem in problems:
        print(f"acomms_run: shutdown: {problem}", file=sys.stderr)
    summary = report.summarize(runner.record)
    print(report.format_summary(summary), file=out)
    try:
        paths = report.write_outputs(runner.record, summary, pathlib.Path(arguments.out))
    except OSError as exc:
        print(f"acomms_run: cannot write outputs to {arguments.out}: {exc}", file=sys.stderr)
        return 1
    print(f"\nWrote {', '.join(str(p) for p in paths)}", file=out)
    return 130 if interrupted else (1 if problems else 0)


if __name__ == "__main__":
    sys.exit(main())
