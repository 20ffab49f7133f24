"""acomms_participant SCENARIO --groups NAME[,NAME] --name PARTICIPANT: run some groups of a
scenario (e.g. one vehicle's nodes) in this process, stepped by another process's clock.

The other process is `acomms_run SCENARIO --participants PARTICIPANT --exclude NAME` (or any
conductor: sim_clock_node in mode `conductor` with `participants`). This process brings its
groups up (their lifecycle managers), then answers every Tick with a Tock
(`acomms_sim.clock.participant.StepParticipant`): its nodes finish the step's work before the
conductor moves time on, so the run gives the same results as with every node in one process.
It exits when no Tick came for `--idle-exit` wall seconds after the first one (the run ended),
or with status 1 and one line when a group does not come up or a step fails. SIGINT or SIGTERM
(`acomms_core.ros.interrupts.StopSignals`) ends it between two steps or during start-up with one
line and status 128 + the signal number (130, 143), after shutting its executor and context down.
"""

from __future__ import annotations

import argparse
import sys
import time

import rclpy
from rclpy.context import Context
from rclpy.executors import SingleThreadedExecutor

from acomms_bringup.description.scenario import ScenarioError, load_scenario
from acomms_bringup.description.stack import describe_stack
from acomms_bringup.run.compose import ComposeError, create_group
from acomms_core.ros.interrupts import Interrupted, process_stop_signals
from acomms_sim.clock.participant import StepParticipant
from acomms_sim.clock.stepping import DEFAULT_STEP_TIMEOUT_S

START_TIMEOUT_S = 120.0


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="acomms_participant", description=__doc__.split("\n")[0])
    parser.add_argument("scenario")
    parser.add_argument("--groups", required=True, metavar="NAME,...",
                        help="groups of the scenario's stack to run here (vehicle names)")
    parser.add_argument("--name", required=True, help="participant name (the Tock node_name)")
    parser.add_argument("--step-timeout", type=float, default=DEFAULT_STEP_TIMEOUT_S,
                        metavar="S", help="wall seconds one step may take before this process "
                        f"stops with one line (default {DEFAULT_STEP_TIMEOUT_S:g})")
    parser.add_argument("--idle-exit", type=float, default=10.0, metavar="S",
                        help="exit after this many wall s without a Tick (default 10)")
    return parser


def _bring_up(groups, context, executor, sim_start_s=None, checkpoint=lambda: None) -> list:
    nodes = []
    for group in groups:
        created = create_group(group, context, sim_start_s)
        nodes += created
        for node in created:
            executor.add_node(node)
        manager = created[-1]
        deadline = time.monotonic() + START_TIMEOUT_S
        while manager.manager_state not in ("active", "failed"):
            if time.monotonic() > deadline:
                raise RuntimeError(f"group {group.name}: not active after {START_TIMEOUT_S:g} s")
            checkpoint()
            executor.spin_once(timeout_sec=0.05)
        if manager.manager_state == "failed":
            raise RuntimeError(f"group {group.name}: {manager.last_message}")
    return nodes


def run(arguments, signals=None) -> int:
    """The participant's life; `signals` (StopSignals) end it between two steps."""
    checkpoint = signals.check if signals is not None else (lambda: None)
    stack = describe_stack(load_scenario(arguments.scenario))
    wanted = set(arguments.groups.split(","))
    groups = [g for g in stack.groups if g.name in wanted]
    if len(groups) != len(wanted):
        raise RuntimeError(f"no group named {sorted(wanted - {g.name for g in groups})}")
    context = Context()
    rclpy.init(context=context, args=["acomms_participant", "--ros-args", "--log-level", "warn"])
    executor = SingleThreadedExecutor(context=context)
    try:
        _bring_up(groups, context, executor, stack.sim_start_s, checkpoint)
        participant = StepParticipant(executor, arguments.name, arguments.step_timeout)
        last = [time.monotonic(), 0]

        def idle() -> bool:
            if participant.steps != last[1]:
                last[:] = [time.monotonic(), participant.steps]
            return participant.steps > 0 and time.monotonic() - last[0] > arguments.idle_exit

        participant.spin(until=lambda: bool(signals and signals.requested) or idle())
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
