"""Same scenario + seed -> same results, whatever the machine's load and the warp (issue 11).

Runs a scenario (default: the demo) several times with `acomms_run`: twice at `--warp max`, once
at `--warp max` with a CPU hog (busy processes, one per core) running beside it, and once at
`--warp 10`. Compares summary.json (wall-time and warp fields aside) and messages.csv of every
run with the first and prints, per run, wall s, simulated/wall ratio and whether it is identical.

    source env.sh && python bench/determinism.py [SCENARIO] [--duration 200]
"""

from __future__ import annotations

import argparse
import csv
import json
import multiprocessing
import os
import pathlib
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from sim_scale import comparable, domain_id  # noqa: E402


def _burn(stop_at: float) -> None:
    while time.monotonic() < stop_at:
        sum(i * i for i in range(10_000))


def run(scenario: str, out: pathlib.Path, warp: str, duration: float, hog: bool) -> dict:
    env = dict(os.environ, ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST",
               ROS_DOMAIN_ID=str(domain_id(70 + len(list(out.parent.iterdir())))))
    hogs = []
    if hog:
        stop_at = time.monotonic() + 3600
        hogs = [multiprocessing.Process(target=_burn, args=(stop_at,), daemon=True)
                for _ in range(os.cpu_count() or 2)]
        for process in hogs:
            process.start()
    started = time.monotonic()
    try:
        subprocess.run(["acomms_run", scenario, "--warp", warp, "--duration", str(duration),
                        "--out", str(out), "--quiet"], env=env, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    finally:
        for process in hogs:
            process.terminate()
    summary = json.loads((out / "summary.json").read_text())
    with open(out / "messages.csv", newline="") as stream:
        messages = list(csv.reader(stream))
    return {"wall_s": time.monotonic() - started, "summary": summary, "messages": messages}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("scenario", nargs="?",
                        default=str(ROOT / "acomms_bringup" / "config" / "demo.yaml"))
    parser.add_argument("--duration", type=float, default=200.0, help="simulated s")
    args = parser.parse_args()
    plan = [("warp max", "max", False), ("warp max again", "max", False),
            ("warp max + CPU hog", "max", True), ("warp 10", "10", False)]
    print(f"{'run':>20}  {'wall s':>7}  {'sim/wall':>8}  {'delivered':>9}  identical to the first")
    first = None
    with tempfile.TemporaryDirectory() as tmp:
        for index, (label, warp, hog) in enumerate(plan):
            result = run(args.scenario, pathlib.Path(tmp) / f"run{index}", warp, args.duration,
                         hog)
            summary = result["summary"]
            if first is None:
                first = result
            same = (comparable(summary) == comparable(first["summary"])
                    and result["messages"] == first["messages"])
            print(f"{label:>20}  {result['wall_s']:7.1f}  {summary.get('sim_wall_ratio')!s:>8}  "
                  f"{summary['messages_delivered']:>9}  {'yes' if same else 'NO'}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
