"""acomms_run SCENARIO.yaml: run a whole scenario in one process, print and write its summary.

    acomms_run acomms_bringup/config/demo.yaml [--duration S] [--warp W|max] [--out DIR] [--quiet]
               [--clock deterministic|free] [--executor events|single] [--step-timeout S]
               [--participants NAME,...] [--live [--live-port N] [--live-host H]] [--no-mcap]
               [--mcap-exclude REGEX] [--lean] [--processes K]

Time (`--clock`): `deterministic` (the default) advances simulated time only when every node
finished the work due now, then jumps to the next pending event: the same scenario and seed give
the same results however busy the machine is. `--warp W` limits it to at most W × real time (the
scenario's warp_factor by default), `--warp max` runs as fast as possible. `--clock free` is the
old free-running clock (nodes may fall behind; the summary then warns). `--participants` names
processes that join the steps through Tick/Tock (`acomms_participant`); `--step-timeout` bounds
the wall time of one step (a hung participant or node stops the run with one line). The steps run
on rclpy's C++ EventsExecutor (`--executor events`, the default where rclpy has it; a step costs
what its callbacks cost) or the SingleThreadedExecutor (`--executor single`, rebuilds a wait set
over every entity per wait: slower, same results). `--lean` (or the scenario's `runtime: {lean:
true}`) makes the nodes without the services only other processes need (type description,
lifecycle, parameters except the MACs'; `acomms_bringup.run.compose.lean_options`): fewer DDS
endpoints, a faster start-up, the same results. `--processes K` (or the scenario's `runtime:
{processes: K}`) splits the vehicles over this process and K-1 `acomms_participant` processes it
starts (`acomms_bringup.run.partitioned`; their output in the run folder's participants.log):
the same outputs as one process; a participant that exits stops the run with one line naming it.

Loads the scenario, brings every node up in this process (`acomms_bringup.run.runner.Runner`),
runs it for its duration in simulated time with a progress bar, shuts it down, prints the summary
table and writes the outputs into `runs/<scenario>-<timestamp>/` (or `--out DIR`): run.mcap (every
topic, recorded while it ran; `--no-mcap`: none; `--mcap-exclude REGEX`: not the topics whose full
name matches) and (`acomms_bringup.run.report`) summary.json,
timeline.csv/.json/.png, messages.csv, accounting.csv, positions.csv, map.png. `--live` serves the
run over the Foxglove WebSocket protocol on ws://localhost:8765 (`--live-port`; `--live-host
0.0.0.0` to serve the network) while it runs, as foxglove_bridge does: every ROS topic (cdr,
ros2msg schemas) and the map/link channels (`acomms_bringup.run.live_view`).

Stopping: SIGINT (Ctrl-C) and SIGTERM (what `timeout`, systemd, `docker stop` and CI send) are
handled alike (`acomms_core.ros.interrupts.StopSignals`): the run stops at its next step, every
group is shut down, and the outputs of what ran are written (summary.json says `"interrupted":
"SIGTERM"`, run.mcap is finished with its footer). During start-up the nodes that are up are
brought down and nothing is written. A second signal exits at once.

Exit status: 0 after a complete run, 1 for a bad scenario file or a node that would not start
(one message naming the file and key, or the node and the reason) or a run that stopped (a
callback raised, a step timed out: the summary of what ran is still written), 128 + the signal
number when stopped by a signal: 130 for SIGINT, 143 for SIGTERM (what a shell reports for a
process that signal killed).
"""

from __future__ import annotations

import argparse
import dataclasses
import pathlib
import re
import sys
import time

from acomms_bringup.description.scenario import Scenario, ScenarioError, load_scenario
from acomms_bringup.run import report
from acomms_bringup.run.live_view import DEFAULT_HOST, DEFAULT_PORT
from acomms_bringup.run.run_outputs import RUNS_DIR, RunOutputs, default_out_dir
from acomms_bringup.run.runner import CLOCK_MODES, RunError, Runner, RunStopped, run_endpoints
from acomms_bringup.run.shutdown import collector_paused
from acomms_core.ros.interrupts import Interrupted, process_stop_signals
from acomms_sim.clock.events_stepper import STEP_EXECUTORS
from acomms_sim.clock.stepping import DEFAULT_STEP_TIMEOUT_S, parse_warp

LOG_LEVELS = ("debug", "info", "warn", "error", "fatal")
PARTICIPANTS_LOG = "participants.log"  # --processes: what the participant processes printed


def _positive(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
    return value


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number >= 1, got {text}")
    return value


def _warp(text: str) -> float | None:
    try:
        return parse_warp(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="acomms_run", description=main.__doc__)
    parser.add_argument("scenario",
                        help="scenario YAML file (see acomms_bringup.description.scenario)")
    parser.add_argument("--duration", type=_positive, metavar="S",
                        help="simulated seconds to run (default: the scenario's)")
    parser.add_argument("--warp", type=_warp, metavar="W", default=-1.0,
                        help="at most W simulated seconds per wall second, or 'max' "
                             "(default: the scenario's warp_factor)")
    parser.add_argument("--clock", choices=CLOCK_MODES, default="deterministic",
                        help="deterministic (default) or free (free-running, may fall behind)")
    parser.add_argument("--step-timeout", type=_positive, default=DEFAULT_STEP_TIMEOUT_S,
                        metavar="S", help="deterministic: wall seconds one step may take before "
                        f"the run stops (default {DEFAULT_STEP_TIMEOUT_S:g})")
    parser.add_argument("--executor", choices=STEP_EXECUTORS, default=None,
                        help="deterministic: 'events' (rclpy's EventsExecutor, fast; the default "
                        "where rclpy has it) or 'single' (SingleThreadedExecutor)")
    parser.add_argument("--participants", default="", metavar="NAME,...",
                        help="deterministic: Tick/Tock participants in other processes")
    parser.add_argument("--exclude", default="", metavar="GROUP,...",
                        help="groups (vehicle names) that participants run instead of this "
                             "process (acomms_participant)")
    parser.add_argument("--processes", type=_count, default=None, metavar="K",
                        help="deterministic: split the vehicles over K processes (this one and "
                             "K-1 acomms_participant), same outputs (default: the scenario's "
                             "runtime.processes, 1)")
    parser.add_argument("--out", default=None, metavar="DIR",
                        help=f"output directory (default: ./{RUNS_DIR}/<scenario>-<timestamp>)")
    parser.add_argument("--lean", action="store_true", default=None,
                        help="lean nodes: no type-description, lifecycle or parameter services "
                             "(MACs keep their parameter services); same results (default: the "
                             "scenario's runtime.lean)")
    parser.add_argument("--no-mcap", action="store_true",
                        help="do not record run.mcap (every topic of the run)")
    parser.add_argument("--mcap-exclude", default=None, metavar="REGEX", type=_regex,
                        help="topics (full names) run.mcap does not record, e.g. "
                             "'.*(_status|_counters)|/diagnostics': status nobody records is "
                             "not published, a --warp max run is then several times faster")
    parser.add_argument("--live", action="store_true",
                        help="serve the run over the Foxglove WebSocket protocol while it runs")
    parser.add_argument("--live-port", type=_port, default=DEFAULT_PORT, metavar="N",
                        help=f"--live: TCP port (default {DEFAULT_PORT}; 0: any free one)")
    parser.add_argument("--live-host", type=_host, default=DEFAULT_HOST, metavar="H",
                        help=f"--live: address to listen on (default {DEFAULT_HOST}, this "
                             "machine only; 0.0.0.0: every network interface)")
    parser.add_argument("--quiet", "-q", action="store_true",
                        help="no progress bar and no startup lines; the summary is still printed")
    parser.add_argument("--log-level", default="warn", choices=LOG_LEVELS,
                        help="log level of the nodes (default: warn)")
    return parser


def with_overrides(scenario: Scenario, duration: float | None, warp: float | None) -> Scenario:
    """The scenario with --duration / --warp applied (RunError: --warp without sim time);
    warp -1: not given, None: 'max' (the scenario keeps its warp_factor)."""
    if duration is not None:
        scenario = dataclasses.replace(scenario, duration_seconds=duration)
    if warp != -1.0:
        if not scenario.clock.use_sim_time:
            raise RunError("clock.use_sim_time: --warp needs simulated time "
                           "(this scenario runs in wall-clock time)")
        if warp is not None:
            scenario = dataclasses.replace(
                scenario, clock=dataclasses.replace(scenario.clock, warp_factor=warp))
    return scenario


def _bring_up_and_run(runner: Runner, arguments, out) -> None:
    def say(text: str) -> None:
        if not arguments.quiet:
            print(text, file=out, flush=True)

    scenario = runner.scenario
    warp = runner.record.warp
    say(f"acomms_run: {scenario.name}: {len(scenario.vehicles)} vehicles, "
        f"{sum(len(g.nodes) for g in runner.stack.groups)} managed nodes, "
        f"{scenario.duration_seconds:g} simulated s, {runner.clock_mode} clock, warp "
        f"{'max' if warp is None else f'{warp:g}'}"
        + (f", {len(runner.partition.shares)} processes ("
           + " + ".join(str(len(s.vehicles)) for s in runner.partition.shares) + " vehicles)"
           if runner.partition is not None else ""))
    started = time.monotonic()
    runner.start(arguments.log_level)
    runner.record.startup_wall_s = time.monotonic() - started
    if not arguments.quiet:
        endpoints = run_endpoints(runner)
        say(f"acomms_run: all nodes active in {runner.record.startup_wall_s:.1f} s "
            f"({endpoints['total']} DDS endpoints, {endpoints['per_vehicle']} per vehicle"
            f"{', lean' if runner.lean else ''}); running")
    runner.run()
    if runner.participants:  # steps count time advances in every mode; the rounds are extra
        say(f"acomms_run: {runner.stats.rounds} Tick/Tock rounds with "
            f"{', '.join(runner.participants)}; {runner.stats.unbalanced} steps settled "
            "unbalanced")
    if runner.stats.unbalanced:
        print(f"acomms_run: {runner.stats.unbalanced} steps settled without their deliveries "
              "between processes balancing (lost, or heard by a subscriber outside the run): "
              "the outputs may differ from one process's (docs/guide/scaling.md)",
              file=sys.stderr, flush=True)


def _finish(runner: Runner, outputs: RunOutputs, out,
            interrupted: Interrupted | None = None) -> int:
    """Shut down, print the summary, write the outputs (the garbage collector paused); the exit
    status."""
    with collector_paused():
        return _finish_run(runner, outputs, out, interrupted)


def _finish_run(runner: Runner, outputs: RunOutputs, out,
                interrupted: Interrupted | None = None) -> int:
    phase = runner.end_phases.phase
    if runner.clock_mode != "deterministic":  # the nodes go on while they shut down: the
        runner.end_record()                    # record and run.mcap end here, together
        outputs.end_recording()
    runner.record.bridges = runner.bridge_summaries()
    with phase("mcap"):
        outputs.close()
    problems = runner.stop()
    for problem in problems:
        print(f"acomms_run: shutdown: {problem}", file=sys.stderr)
    with phase("summary"):
        outputs.finish(runner.record, runner.scenario, runner.start_s)
        summary = report.summarize(runner.record)
    out_dir = outputs.out_dir
    print(report.format_summary(summary), file=out)
    try:
        with phase("outputs"):
            paths = report.write_outputs(runner.record, summary, pathlib.Path(out_dir))
    except OSError as exc:
        print(f"acomms_run: cannot write outputs to {out_dir}: {exc}", file=sys.stderr)
        return 1
    if outputs.sink is not None:
        paths.append(outputs.mcap_path)
    print(f"\nWrote {out_dir}/: {', '.join(p.name for p in paths)}", file=out)
    print(f"acomms_run: the end of the run took {runner.end_phases.line()}", file=out)
    if interrupted is not None:
        return interrupted.exit_status
    return 1 if problems else 0


def _port(text: str) -> int:
    """An argparse type: a TCP port number, 0-65535 (0: any free port)."""
    try:
        value = int(text)
    except ValueError:
        value = -1
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"not a TCP port (0-65535): {text!r}")
    return value


def _host(text: str) -> str:
    """An argparse type: an IP address or a host name this machine resolves, to listen on."""
    import ipaddress
    import socket

    try:
        ipaddress.ip_address(text)
        return text
    except ValueError:
        pass
    try:
        socket.getaddrinfo(text, None, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        raise argparse.ArgumentTypeError(
            f"not an IP address or a known host name: {text!r} (e.g. 127.0.0.1 or 0.0.0.0)"
        ) from None
    return text


def _regex(text: str) -> str:
    """An argparse type: text that compiles as a regular expression."""
    try:
        re.compile(text)
    except re.error as exc:
        raise argparse.ArgumentTypeError(f"not a regular expression ({exc}): {text!r}") from None
    return text


def main(argv: list[str] | None = None, load=load_scenario) -> int:
    """acomms_run: run a scenario (every node in this process), print and write its summary.
    `load(path)`: the Scenario of the file (acomms_sweep's runs resolve relative paths against
    the swept scenario's directory)."""
    arguments = parser().parse_args(argv)
    with process_stop_signals("acomms_run") as signals:
        return _run(arguments, signals.check, load)


def _make_runner(arguments, checkpoint, load=load_scenario) -> tuple[Runner, RunOutputs]:
    scenario = with_overrides(load(arguments.scenario), arguments.duration, arguments.warp)
    for warning in scenario.warnings:
        print(f"acomms_run: {arguments.scenario}: warning: {warning}", file=sys.stderr)
    out_dir = (pathlib.Path(arguments.out) if arguments.out
               else default_out_dir(scenario.name))
    runner = Runner(scenario, stream=sys.stdout, progress=not arguments.quiet,
                    clock_mode=arguments.clock,
                    warp=scenario.clock.warp_factor if arguments.warp == -1.0
                    else arguments.warp,
                    participants=tuple(p for p in arguments.participants.split(",") if p),
                    step_timeout_s=arguments.step_timeout,
                    exclude=tuple(g for g in arguments.exclude.split(",") if g),
                    step_executor=arguments.executor, checkpoint=checkpoint,
                    lean=arguments.lean, processes=arguments.processes,
                    participant_log=out_dir / PARTICIPANTS_LOG)
    outputs = RunOutputs(out_dir, not arguments.no_mcap,
                         arguments.live_port if arguments.live else None,
                         live_host=arguments.live_host, mcap_exclude=arguments.mcap_exclude)
    runner.started_hooks.append(outputs)
    return runner, outputs


def _run(arguments, checkpoint, load=load_scenario) -> int:
    """main() with stop signals handled: `checkpoint()` raises Interrupted once one came."""
    out = sys.stdout
    runner = outputs = None
    try:
        checkpoint()  # a signal while this program was imported
        runner, outputs = _make_runner(arguments, checkpoint, load)
        _bring_up_and_run(runner, arguments, out)
    except ScenarioError as exc:
        print(f"acomms_run: {exc}", file=sys.stderr)
        return 1
    except RunStopped as exc:
        print(f"acomms_run: {arguments.scenario}: stopped: {exc}", file=sys.stderr)
        _finish(runner, outputs, out)
        return 1
    except RunError as exc:
        print(f"acomms_run: {arguments.scenario}: {exc}", file=sys.stderr)
        _abandon(runner, outputs)
        return 1
    except Interrupted as exc:
        return _interrupted(runner, outputs, out, exc)
    except Exception as exc:  # a bug: say what, without a traceback unless asked for
        if arguments.log_level == "debug":
            raise
        print(f"acomms_run: {arguments.scenario}: unexpected error {exc!r} (--log-level debug "
              "shows the traceback)", file=sys.stderr)
        _abandon(runner, outputs)
        return 1
    return _finish(runner, outputs, out)


def _interrupted(runner: Runner | None, outputs: RunOutputs | None, out,
                 stop: Interrupted) -> int:
    """A stop signal: during start-up bring down what is up; while running, shut down and
    write what ran (summary.json marked interrupted). The exit status."""
    if runner is None or not runner.running:
        print(f"acomms_run: {stop.name} during start-up: stopped (nothing written)",
              file=sys.stderr)
        _abandon(runner, outputs)
        return stop.exit_status
    print(f"\nacomms_run: {stop.name}: stopped at simulated {runner.sim_elapsed_s():.1f} s; "
          "shutting down and writing what ran", file=sys.stderr)
    runner.record.interrupted = stop.name
    return _finish(runner, outputs, out, interrupted=stop)


def _abandon(runner: Runner | None, outputs: RunOutputs | None) -> None:
    """A run that could not start or failed: stop what is up, close the recording."""
    if outputs is not None:
        outputs.close()
    if runner is not None:
        runner.stop()


if __name__ == "__main__":
    sys.exit(main())
