"""acomms_sweep SWEEP.yaml: a Monte Carlo sweep of a scenario over overrides and seeds.

    acomms_sweep acomms_bringup/config/demo_sweep.yaml [--workers N | --dask tcp://host:8786]
                 [--out DIR] [--duration S] [--seeds 1..50] [--domains LOW-HIGH] [--mcap]
                 [--run-timeout S] [--quiet]

Every (override set, seed) of the sweep file (`acomms_bringup.run.sweep_plan`) is one
deterministic run in its own process with its own ROS domain (`sweep_exec`), at `--warp max`,
without run.mcap unless `--mcap`; it writes the same folder as `acomms_run --out` into
`DIR/runs/<point>-<hash>-seed<N>/` (plus scenario.yaml and run.log). The runs go through a local
pool of `--workers` (default 1) or the Dask cluster at `--dask` (its workers need acomms installed
and DIR on a file system they share). A progress bar counts the runs. At the end `DIR/sweep.csv`
holds one row per run (`sweep_results`) and `DIR/sweep.png` the plot the sweep file asks for.
The numbers do not depend on the executor or the worker count. Re-running the same command skips
every run whose folder already holds a complete summary.json (resumable: an interrupted sweep
continues where it stopped). DIR defaults to ./sweeps/<sweep file name>.

Exit status: 0 when every run finished, 1 for a bad sweep file (one line naming the file and the
key) or when a run failed (its run.log named), 130 on Ctrl-C.
"""

from __future__ import annotations

import argparse
import pathlib
import sys

import yaml

from acomms_bringup.run import sweep_exec, sweep_results
from acomms_bringup.run.sweep_plan import RunPoint, Sweep, SweepError, load_sweep

SWEEPS_DIR = "sweeps"


def _domains(text: str) -> tuple[int, int]:
    try:
        low, high = (int(part) for part in text.split("-"))
    except ValueError:
        low = high = -1
    if not 0 <= low <= high <= 232:
        raise argparse.ArgumentTypeError(f"not a domain range LOW-HIGH within 0-232: {text!r}")
    return low, high


def _positive_int(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"must be an integer >= 1, got {text!r}")
    return int(text)


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="acomms_sweep", description=main.__doc__)
    parser.add_argument("sweep", help="sweep YAML file (see acomms_bringup.run.sweep_plan)")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--workers", type=_positive_int, default=1, metavar="N",
                       help="runs at once in a local pool (default 1)")
    where.add_argument("--dask", metavar="ADDRESS",
                       help="run on the Dask scheduler at ADDRESS, e.g. tcp://host:8786")
    parser.add_argument("--out", metavar="DIR",
                        help=f"sweep directory (default ./{SWEEPS_DIR}/<sweep file name>)")
    parser.add_argument("--domains", type=_domains, default=sweep_exec.DEFAULT_DOMAINS,
                        metavar="LOW-HIGH", help="ROS domains the runs may use (default "
                        f"{sweep_exec.DEFAULT_DOMAINS[0]}-{sweep_exec.DEFAULT_DOMAINS[1]})")
    parser.add_argument("--duration", type=float, default=None, metavar="S",
                        help="simulated seconds per run (default: the sweep file's)")
    parser.add_argument("--seeds", default=None, metavar="LIST",
                        help="seeds instead of the sweep file's: 'first..last' or 'a,b,c'")
    parser.add_argument("--mcap", action="store_true", help="record each run's run.mcap")
    parser.add_argument("--run-timeout", type=float, default=None, metavar="S",
                        help="wall clock: seconds one run may take before it counts as failed")
    parser.add_argument("--quiet", "-q", action="store_true", help="no progress bar")
    return parser


def seed_of(sweep: Sweep, run: RunPoint):
    """The seed the run used: its own, a point's `seed` override, or the scenario's."""
    if run.seed is not None:
        return run.seed
    return dict(run.overrides).get("seed", sweep.scenario_data.get("seed"))


def make_job(sweep: Sweep, run: RunPoint, out: pathlib.Path, arguments) -> dict:
    return {"name": run.name, "run_dir": str((out / "runs" / run.name).resolve()),
            "scenario_yaml": yaml.safe_dump(sweep.scenario_for(run), sort_keys=False),
            "base_dir": str(sweep.scenario_path.parent), "domains": list(arguments.domains),
            "timeout_s": arguments.run_timeout, "mcap": arguments.mcap}


def sweep_rows(sweep: Sweep, results: dict[str, dict]) -> list[dict]:
    """One row per run, in plan order: run, overrides, seed, status, metrics."""
    rows = []
    for run in sweep.runs():
        result = results[run.name]
        rows.append({"run": run.name, **dict(run.overrides), "seed": seed_of(sweep, run),
                     "status": result["status"], **result["row"]})
    return rows


def execute(sweep: Sweep, out: pathlib.Path, arguments, client=None) -> tuple[list[dict], int]:
    """Run what is not finished yet; (rows, number of runs skipped as already complete).
    `client`: a distributed Client/Cluster to use instead of `arguments.dask`."""
    results, jobs = {}, []
    for run in sweep.runs():
        run_dir = out / "runs" / run.name
        if sweep_results.is_complete(run_dir, sweep.duration_seconds):
            results[run.name] = {"name": run.name, "status": "ok",
                                 "row": sweep_results.run_row(run_dir)}
        else:
            jobs.append(make_job(sweep, run, out, arguments))

    def report(result: dict) -> None:
        if result["status"] != "ok":
            print(f"\nacomms_sweep: run {result['name']} failed: {result['error']}",
                  file=sys.stderr)

    if jobs and (client is not None or arguments.dask):
        done = sweep_exec.run_dask(jobs, client or arguments.dask, arguments.quiet, report)
    elif jobs:
        done = sweep_exec.run_local(jobs, arguments.workers, arguments.quiet, report)
    else:
        done = []
    results.update((r["name"], r) for r in done)
    return sweep_rows(sweep, results), len(sweep.runs()) - len(jobs)


def write_results(sweep: Sweep, rows: list[dict], out: pathlib.Path) -> list[pathlib.Path]:
    """sweep.csv and (when the sweep file asks for one) sweep.png; the paths written."""
    paths = [out / "sweep.csv"]
    sweep_results.write_csv(paths[0], rows, sweep.parameters)
    if sweep.plot:
        png = out / "sweep.png"
        title = f"{sweep.scenario_path.stem}: {len(rows)} runs"
        if sweep_results.plot(png, rows, sweep.plot.x, sweep.plot.metric, title,
                              sweep.plot.series):
            paths.append(png)
        else:
            print(f"acomms_sweep: plot: no run has the metric {sweep.plot.metric!r} "
                  "(a sweep.csv column)", file=sys.stderr)
    return paths


def main(argv: list[str] | None = None, client=None) -> int:
    """acomms_sweep: run a scenario over a grid of overrides and seeds; write sweep.csv/.png."""
    arguments = parser().parse_args(argv)
    try:
        sweep = load_sweep(arguments.sweep, duration_s=arguments.duration, seeds=arguments.seeds)
    except SweepError as exc:
        print(f"acomms_sweep: {exc}", file=sys.stderr)
        return 1
    out = pathlib.Path(arguments.out or
                       pathlib.Path(SWEEPS_DIR) / pathlib.Path(arguments.sweep).stem)
    out.mkdir(parents=True, exist_ok=True)
    runs = sweep.runs()
    if not arguments.quiet:
        where = (f"Dask {arguments.dask}" if arguments.dask
                 else "a Dask client" if client is not None else f"{arguments.workers} workers")
        print(f"acomms_sweep: {len(sweep.override_sets)} points x {len(sweep.seeds)} seeds = "
              f"{len(runs)} runs of {sweep.scenario_path.name} on {where}", flush=True)
    try:
        rows, skipped = execute(sweep, out, arguments, client)
    except KeyboardInterrupt:
        print("\nacomms_sweep: interrupted; re-run the same command to continue", file=sys.stderr)
        return 130
    except (OSError, ImportError) as exc:  # no Dask scheduler there, distributed not installed
        where = f"--dask {arguments.dask}" if arguments.dask else "sweep"
        print(f"acomms_sweep: {where}: {exc}", file=sys.stderr)
        return 1
    paths = write_results(sweep, rows, out)
    failed = [r["run"] for r in rows if r["status"] != "ok"]
    print(f"acomms_sweep: {len(rows) - len(failed)} of {len(rows)} runs complete ({skipped} "
          f"already done, {len(failed)} failed); wrote {', '.join(str(p) for p in paths)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
