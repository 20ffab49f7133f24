"""Start-up at scale: wall seconds until every node of an N-vehicle scenario is active, peak RSS.

For each N (default 4 8 16 32), a fresh Python process writes the `sim_scale_scenario` scenario
(N vehicles, TDMA, 8 s slots), creates `acomms_bringup.run.runner.Runner` with acomms_run's
deterministic clock and times `start()` (every node created and every lifecycle node active,
checked on the node objects afterwards), then stops it. Printed per N: nodes, DDS endpoints,
start-up wall s and CPU s (all threads of the process; on a shared machine the steadier figure),
the start-up phases when the runner reports them (`Runner.startup_phases`: `init_s` context and
recorder, `create_s` node construction, `activate_s` the managers' configure/activate sequences
(`transitions_s` of it in the caller's thread, `wait_s` waiting for the stage's managers),
`attach_s` observers and hooks), stop wall s, peak RSS (MB, ru_maxrss of that process); and,
before `start()`, the process's wall s for its imports and the scenario (`pre_s`).

What acomms_run's `startup_wall_s` (and so `bench/sim_scale.py`'s `startup_s`) counts is
`start()` plus the wait, before the first step, until every client sees its in-process server
(`SteppedRun._wait_for_local_services`); neither counts the process start, imports, scenario
parse and `Runner()` (about 1-3 s, `pre_s` here).

    source env.sh && python bench/startup_scale.py                 # N = 4 8 16 32
    python bench/startup_scale.py 4 8 16 32 64 --baseline a5fe377  # also the code of a commit
    python bench/startup_scale.py 32 64 --lean --baseline 96d7dad   # lean nodes (acomms_run --lean)

`--baseline COMMIT` runs the same measurement with the acomms_bringup and acomms_core Python
packages of COMMIT (extracted with `git archive` and put first on PYTHONPATH; the other packages
are the installed ones), so before/after numbers come from one command on one machine. The
processes use this shell's ROS_DOMAIN_ID (else one from the process id), localhost discovery
only, so other ROS processes on the machine stay out.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import resource
import subprocess
import sys
import tempfile
import time

PROCESS_STARTED = time.monotonic()  # nearly: the interpreter started a moment before
ROOT = pathlib.Path(__file__).resolve().parents[1]
BASELINE_PACKAGES = ("acomms_bringup", "acomms_core")  # pure Python; the rest is installed
sys.path.insert(0, str(ROOT / "bench"))


def cpu_seconds() -> float:
    """CPU seconds of this process, all threads (less sensitive to other load than wall s)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def measure(n: int, lean: bool = False) -> dict:
    """In this process: bring up an n-vehicle scenario, time it, bring it down."""
    import io

    from sim_scale_scenario import write_scale_scenario

    from acomms_bringup.description.scenario import load_scenario
    from acomms_bringup.run import runner as runner_module
    from acomms_bringup.run.runner import Runner
    from acomms_core.ros.ros_support import lifecycle_state_label

    run_endpoints = getattr(runner_module, "run_endpoints", None)  # not in older commits

    with tempfile.TemporaryDirectory() as tmp:
        scenario = load_scenario(write_scale_scenario(n, pathlib.Path(tmp) / f"scale{n}.yaml"))
    options = {"lean": True} if lean else {}  # older commits have no lean keyword
    runner = Runner(scenario, stream=io.StringIO(), progress=False, clock_mode="deterministic",
                    warp=None, **options)  # as acomms_run --warp max
    pre_s = time.monotonic() - PROCESS_STARTED
    started, cpu_started = time.monotonic(), cpu_seconds()
    try:
        runner.start()
        startup_s, startup_cpu_s = time.monotonic() - started, cpu_seconds() - cpu_started
        managed = {d.fully_qualified_name for g in runner.stack.groups for d in g.nodes}
        inactive = [name for name in managed
                    if lifecycle_state_label(runner.nodes[name]) != "active"]
        phases = getattr(runner, "startup_phases", {})
        # from the ROS graph (startup.count_endpoints)
        endpoints = run_endpoints(runner) if run_endpoints else {}
    finally:
        stopping = time.monotonic()
        problems = runner.stop()
    return {"vehicles": n, "nodes": len(runner.stack.all_nodes()), "endpoints": endpoints,
            "startup_s": startup_s,
            "startup_cpu_s": startup_cpu_s,
            "phases": phases, "pre_s": pre_s, "not_active": inactive,
            "stop_s": time.monotonic() - stopping,
            "stop_problems": problems,
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0}


def run_child(n: int, pythonpath: str | None, timeout_s: float, lean: bool = False) -> dict:
    env = dict(os.environ)
    env["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
    env["ROS_DOMAIN_ID"] = os.environ.get("ROS_DOMAIN_ID") or str(os.getpid() % 100 + 1)
    if pythonpath:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [pythonpath, env.get("PYTHONPATH")]))
    try:
        result = subprocess.run([sys.executable, __file__, "--child", str(n),
                                 *(["--lean"] if lean else [])], env=env,
                                capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return {"vehicles": n, "error": f"no result within {timeout_s:g} s"}
    lines = [line for line in result.stdout.splitlines() if line.startswith("{")]
    if result.returncode != 0 or not lines:
        return {"vehicles": n, "error": (result.stderr.strip().splitlines() or ["?"])[-1]}
    return json.loads(lines[-1])


def extract_packages(commit: str, into: pathlib.Path) -> str:
    """The Python packages start-up runs through (BASELINE_PACKAGES) at `commit`, as
    PYTHONPATH entries."""
    paths = [f"{package}/{package}" for package in BASELINE_PACKAGES]
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", commit, *paths],
                             capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    return os.pathsep.join(str(into / package) for package in BASELINE_PACKAGES)


def row(label: str, result: dict) -> str:
    if "error" in result:
        return f"{label:>9} {result['vehicles']:>4}  failed: {result['error']}"
    phases = " ".join(f"{k}={v:.1f}" for k, v in
                      {"pre_s": result.get("pre_s", 0.0), **result["phases"]}.items())
    flag = "" if not result["not_active"] else f"  NOT ACTIVE: {len(result['not_active'])}"
    return (f"{label:>9} {result['vehicles']:>4} {result['nodes']:>6}"
            f" {result.get('endpoints', {}).get('total', '-'):>9} {result['startup_s']:>10.1f}"
            f" {result['startup_cpu_s']:>8.1f} {result['stop_s']:>7.1f}"
            f" {result['peak_rss_mb']:>7.0f}  {phases}{flag}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("vehicles", type=int, nargs="*", default=[4, 8, 16, 32])
    parser.add_argument("--baseline", metavar="COMMIT",
                        help="also measure the acomms_bringup package of this commit")
    parser.add_argument("--timeout", type=float, default=600.0,
                        help="wall seconds one measurement may take (default 600)")
    parser.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    parser.add_argument("--lean", action="store_true",
                        help="lean nodes (acomms_run --lean: compose.lean_options)")
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    arguments = parser.parse_args(argv)
    if arguments.child is not None:
        print(json.dumps(measure(arguments.child, arguments.lean)))
        return 0
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        variants = [("current", None)]
        if arguments.baseline:
            variants.insert(0, (arguments.baseline[:9],
                                extract_packages(arguments.baseline, pathlib.Path(tmp))))
        print(f"{'code':>9} {'N':>4} {'nodes':>6} {'endpoints':>9} {'startup_s':>10} {'cpu_s':>8}"
              f" {'stop_s':>7} "
              f"{'rss_MB':>7}  phases (s)", flush=True)
        for n in arguments.vehicles:
            for label, pythonpath in variants:
                result = run_child(n, pythonpath, arguments.timeout, arguments.lean)
                result["code"] = label
                results.append(result)
                print(row(label, result), flush=True)
    if arguments.json:
        pathlib.Path(arguments.json).write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
