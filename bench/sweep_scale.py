"""Monte Carlo sweeps at scale: runs/hour of `acomms_sweep` vs local workers, and through Dask.

Writes a sweep of the demo (channel.fading.model none/rayleigh x `--key` (default
channel.noise.shipping_activity) over `--values` x seeds 1..`--seeds`, `--duration` simulated s
per run) into a temporary
directory and runs it with `acomms_sweep --workers N` for each N of `--workers` (each into its own
folder: nothing is skipped), then (`--dask`) through a local Dask cluster of 2 single-threaded
workers (`distributed.LocalCluster`, `acomms_sweep --dask tcp://...`). Prints per executor: runs,
wall s, runs/hour, and whether its sweep.csv equals the first one's; then the projected wall
time of the issue's target sweep (2 x 5 x 10 seeds = 100 runs of 600 s) at the best rate.

    source env.sh && python bench/sweep_scale.py                 # 2 x 1 x 2 seeds, 600 s, 1 2
    python bench/sweep_scale.py --values 0.1,0.3,0.5,0.7,0.9 --seeds 10 --workers 2 --dask
    python bench/sweep_scale.py --key channel.noise.wind_speed_mps --values 4,8,12,16,20
    python bench/sweep_scale.py --seeds 1 --duration 120 --workers 1 2 --dask   # quick look
"""

from __future__ import annotations

import argparse
import pathlib
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
DEMO = ROOT / "acomms_bringup" / "config" / "demo.yaml"
TARGET_RUNS, TARGET_DURATION_S = 100, 600.0


def write_sweep(directory: pathlib.Path, key: str, values: list[float], seeds: int,
                duration: float) -> pathlib.Path:
    path = directory / "scale_sweep.yaml"
    path.write_text(f"scenario: {DEMO}\nduration_seconds: {duration:g}\ngrid:\n"
                    "  channel.fading.model: [none, rayleigh]\n"
                    f"  {key}: [{', '.join(map(str, values))}]\n"
                    f"seeds: 1..{seeds}\n"
                    f"plot: {{x: {key}, metric: delivered_ratio, series: channel.fading.model}}\n")
    return path


def run_sweep(sweep: pathlib.Path, out: pathlib.Path, extra: list[str]) -> float:
    """One acomms_sweep process; its wall seconds (SystemExit when it fails)."""
    started = time.monotonic()
    result = subprocess.run(["acomms_sweep", str(sweep), "--out", str(out), "--quiet", *extra],
                            capture_output=True, text=True)
    wall = time.monotonic() - started
    if result.returncode != 0:
        raise SystemExit(f"acomms_sweep {' '.join(extra)} failed:\n{result.stdout}{result.stderr}")
    return wall


def with_dask(sweep: pathlib.Path, out: pathlib.Path, workers: int) -> float:
    from distributed import LocalCluster

    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster:
        return run_sweep(sweep, out, ["--dask", cluster.scheduler_address])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--key", default="channel.noise.shipping_activity",
                        help="the second grid key (default channel.noise.shipping_activity)")
    parser.add_argument("--values", default="0.7",
                        help="comma-separated values of --key (default 0.7)")
    parser.add_argument("--seeds", type=int, default=2, help="seeds 1..N (default 2)")
    parser.add_argument("--duration", type=float, default=600.0, help="simulated s per run")
    parser.add_argument("--workers", type=int, nargs="*", default=[1, 2],
                        help="local pool sizes to measure (default 1 2)")
    parser.add_argument("--dask", action="store_true",
                        help="also through a local Dask cluster of 2 workers")
    parser.add_argument("--keep", metavar="DIR", help="write the sweeps into DIR (kept)")
    arguments = parser.parse_args()
    values = [float(a) for a in arguments.values.split(",")]
    runs = 2 * len(values) * arguments.seeds
    with tempfile.TemporaryDirectory(prefix="sweep_scale_") as scratch:
        base = pathlib.Path(arguments.keep or scratch)
        base.mkdir(parents=True, exist_ok=True)
        sweep = write_sweep(base, arguments.key, values, arguments.seeds, arguments.duration)
        print(f"sweep: 2 fading x {len(values)} {arguments.key} x {arguments.seeds} seeds "
              f"= {runs} runs of the demo for {arguments.duration:g} simulated s")
        print(f"{'executor':<18}{'runs':>6}{'wall s':>10}{'runs/hour':>11}  same sweep.csv")
        reference, best = None, 0.0
        cases = [(f"--workers {n}", ["--workers", str(n)]) for n in arguments.workers]
        cases += [("dask LocalCluster", None)] if arguments.dask else []
        for label, extra in cases:
            out = base / label.replace(" ", "_").replace("--", "")
            wall = with_dask(sweep, out, 2) if extra is None else run_sweep(sweep, out, extra)
            csv_text = (out / "sweep.csv").read_text()
            reference = reference or csv_text
            rate = runs * 3600.0 / wall
            best = max(best, rate * arguments.duration / TARGET_DURATION_S)
            print(f"{label:<18}{runs:>6}{wall:>10.1f}{rate:>11.0f}  "
                  f"{'yes' if csv_text == reference else 'NO'}")
        if best:
            scaled = ("" if arguments.duration == TARGET_DURATION_S else
                      " (run wall time taken as proportional to simulated s: an upper bound)")
            print(f"projected: {TARGET_RUNS} runs of {TARGET_DURATION_S:g} s at the best rate: "
                  f"{TARGET_RUNS / best * 60:.0f} wall minutes{scaled}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
