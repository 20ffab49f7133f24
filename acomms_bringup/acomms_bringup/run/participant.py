"""acomms_participant SCENARIO --groups NAME[,NAME] --name PARTICIPANT: run some groups of a
scenario (e.g. one vehicle's nodes) in this process, stepped by another process's clock.

The other process is `acomms_run SCENARIO --participants PARTICIPANT --exclude NAME` (or any
conductor: sim_clock_node in mode `conductor` with `participants`). This process brings its
groups up (their lifecycle managers), then answers every Tick with a Tock
(`acomms_sim.clock.participant.StepParticipant`): its nodes finish the step's work before the
conductor moves time on, so the run gives the same results as with every node in one process.
What its vehicles' queues and dispatch nodes do goes to the conductor's recorder over ROS
(`acomms_bringup.run.remote_events`), so the run's accounting is that of one process, on this
machine or another. The nodes' clocks are set to each Tick's time directly, in a fixed order
(`acomms_sim.clock.local_clocks.LocalClocks`, as acomms_run's own). `--lean`: lean nodes (as
acomms_run's); `--conductor-pid PID` (what `acomms_run --processes` passes): exit when that
process is gone.
It exits when no Tick came for `--idle-exit` wall seconds after the first one (the run ended),
or with status 1 and one line when a group does not come up or a step fails. SIGINT or SIGTERM
(`acomms_core.ros.interrupts.StopSignals`) ends it between two steps or during start-up with one
line and status 128 + the signal number (130, 143), after shutting its executor and context down.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import time

import rclpy
from rclpy.context import Context
from rclpy.executors import SingleThreadedExecutor
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

from acomms_bringup.description.scenario import ScenarioError, load_scenario
from acomms_bringup.description.stack import describe_stack
from acomms_bringup.run.compose import ComposeError
from acomms_bringup.run.startup import GroupFailed, Startup, StartupError, spin_executor_until
from acomms_core.ros.interrupts import Interrupted, process_stop_signals
from acomms_sim.clock.events_stepper import make_executor
from acomms_sim.clock.local_clocks import LocalClocks
from acomms_sim.clock.participant import StepParticipant
from acomms_sim.clock.stepping import DEFAULT_STEP_TIMEOUT_S

START_TIMEOUT_S = 120.0
LOG_LEVELS = ("debug", "info", "warn", "error", "fatal")


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="acomms_participant", description=__doc__.split("\n")[0])
    parser.add_argument("scenario")
    parser.add_argument("--groups", required=True, metavar="NAME,...",
                        help="groups of the scenario's stack to run here (vehicle names)")
    parser.add_argument("--name", required=True, help="participant name (the Tock node_name)")
    parser.add_argument("--step-timeout", type=float, default=DEFAULT_STEP_TIMEOUT_S,
                        metavar="S", help="wall seconds one step may take before this process "
                        f"stops with one line (default {DEFAULT_STEP_TIMEOUT_S:g})")
    parser.add_argument("--lean", action="store_true", default=None,
                        help="lean nodes, as acomms_run --lean (default: the scenario's "
                             "runtime.lean)")
    parser.add_argument("--log-level", default="warn", choices=LOG_LEVELS,
                        help="log level of the nodes (default: warn)")
    parser.add_argument("--conductor-pid", type=int, default=None, metavar="PID",
                        help="exit when this process (acomms_run --processes) is gone")
    parser.add_argument("--idle-exit", type=float, default=10.0, metavar="S",
                        help="exit after this many wall s without a Tick (default 10)")
    return parser


def _bring_up(stack, wanted: set[str], context, executor, lean: bool, checkpoint) -> dict:
    """The wanted groups up through `startup.Startup` (their managers drive the nodes in this
    process); fully qualified name -> node. RuntimeError naming a group that did not come up."""
    groups = tuple(g for g in stack.groups if g.name in wanted)
    if len(groups) != len(wanted):
        raise RuntimeError(f"no group named {sorted(wanted - {g.name for g in groups})}")
    spin = spin_executor_until(executor)
    startup = Startup(context, executor, lambda ready, timeout_s: spin(
        lambda: checkpoint() or ready(), timeout_s), START_TIMEOUT_S, lean=lean,
        local_clocks=True)  # the Ticks set them (LocalClocks)
    try:
        startup.run(dataclasses.replace(stack, groups=groups))
    except GroupFailed as exc:
        raise RuntimeError(f"group {exc.group.name}: {exc.manager.last_message}") from None
    except StartupError as exc:
        raise RuntimeError(str(exc)) from None
    return startup.nodes


def _publish_remote_events(scenario, nodes: dict, node) -> int:
    """The queue and dispatch nodes of this process's vehicles tell acomms_run what they did
    (`remote_events`, published by `node`); how many vehicles."""
    from std_msgs.msg import String

    from acomms_bringup.run.remote_events import (
        REMOTE_EVENTS_DEPTH,
        REMOTE_EVENTS_TOPIC,
        RemoteObserver,
    )
    from acomms_bringup.run.traffic import match_key

    publisher = node.create_publisher(String, REMOTE_EVENTS_TOPIC, QoSProfile(
        depth=REMOTE_EVENTS_DEPTH, durability=DurabilityPolicy.TRANSIENT_LOCAL,
        reliability=ReliabilityPolicy.RELIABLE))
    observed = 0
    for vehicle in scenario.vehicles:
        queue = nodes.get(f"{vehicle.namespace.rstrip('/')}/message_queue_node")
        if queue is None:
            continue
        observer = RemoteObserver(vehicle.name, lambda line: publisher.publish(String(data=line)),
                                  match_key)
        if getattr(queue, "queues", None) is not None:
            queue.queues.observer = observer
        dispatch = nodes.get(f"{vehicle.namespace.rstrip('/')}/packet_dispatch_node")
        if dispatch is not None:
            dispatch.observer = observer.dispatched
        observed += 1
    return observed


def _stepping_executor(started, context):
    """The executor the steps run on (`make_executor`: rclpy's EventsExecutor where it has it,
    as acomms_run's steps): every node of `started` (the start-up's executor, retired) moves."""
    executor = make_executor(context)
    if isinstance(executor, SingleThreadedExecutor):
        executor.shutdown()
        return started
    for node in started.get_nodes():
        started.remove_node(node)
        executor.add_node(node)
    started.shutdown()
    return executor


def _orphan_check(pid: int | None, period_s: float = 0.5):
    """A callable that is True once process `pid` is gone (looked at every period_s)."""
    last = [0.0, False]

    def orphaned() -> bool:
        if pid is None or last[1] or time.monotonic() - last[0] < period_s:
            return last[1]
        last[0] = time.monotonic()
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            last[1] = True
            print(f"acomms_participant: the conductor (pid {pid}) is gone: exiting",
                  file=sys.stderr)
        except PermissionError:
            pass
        return last[1]

    return orphaned


def run(arguments, signals=None) -> int:
    """The participant's life; `signals` (StopSignals) end it between two steps."""
    checkpoint = signals.check if signals is not None else (lambda: None)
    scenario = load_scenario(arguments.scenario)
    stack = describe_stack(scenario)
    context = Context()
    rclpy.init(context=context, args=["acomms_participant", "--ros-args", "--log-level",
                                      arguments.log_level])
    executor = SingleThreadedExecutor(context=context)
    orphaned = _orphan_check(arguments.conductor_pid)

    def starting() -> None:
        checkpoint()
        if orphaned():
            raise RuntimeError(f"{arguments.name}: the conductor ended during start-up")

    try:
        nodes = _bring_up(stack, set(arguments.groups.split(",")), context, executor,
                          scenario.lean if arguments.lean is None else arguments.lean,
                          starting)
        executor = _stepping_executor(executor, context)
        participant = StepParticipant(executor, arguments.name, arguments.step_timeout)
        participant.clocks = LocalClocks(list(nodes.values()))  # in creation order
        participant.clocks.adopt()
        participant.stepper.driven = participant.clocks.clock_ids()
        _publish_remote_events(scenario, nodes, participant.node)
        last = [time.monotonic(), 0]

        def idle() -> bool:
            if participant.steps != last[1]:
                last[:] = [time.monotonic(), participant.steps]
            return participant.steps > 0 and time.monotonic() - last[0] > arguments.idle_exit

        participant.spin(until=lambda: bool(signals and signals.requested) or idle()
                         or orphaned())
        checkpoint()
        if participant.error:
            print(f"acomms_participant: {arguments.name}: {participant.error}", file=sys.stderr)
            return 1
        return 0
    finally:
        executor.shutdown(timeout_sec=1.0)
        rclpy.shutdown(context=context)


def main(argv: list[str] | None = None) -> int:
    arguments = parser().parse_args(argv)
    with process_stop_signals("acomms_participant") as signals:
        try:
            signals.check()  # a signal while this program was imported
            return run(arguments, signals)
        except (ScenarioError, ComposeError, RuntimeError) as exc:
            print(f"acomms_participant: {exc}", file=sys.stderr)
            return 1
        except Interrupted as exc:
            print(f"acomms_participant: {arguments.name}: {exc.name}: stopped",
                  file=sys.stderr)
            return exc.exit_status


if __name__ == "__main__":
    sys.exit(main())
