"""Simulation at scale: N vehicles in TDMA for one simulated hour on the deterministic clock.

For each N (default 4 8 16 32 64) the `sim_scale_scenario` scenario (N vehicles, one TDMA slot
each, one nav message per vehicle per cycle) runs in a fresh `acomms_run --warp max` process.
Printed per N: start-up wall s, run wall s, simulated/wall ratio, clock steps, the step cost
(`us/step`: run wall µs per step, callbacks included, and `us/step/veh` that per vehicle), messages
delivered, peak RSS of that process (`rss_MB`), its RSS sampled every 0.25 s: the peak from the
start until the run's end (`rss_run_MB`: start-up and run) and after it (`rss_end_MB`: the end of
the run, shutdown, summary and outputs; `end_s`: that end's wall s; under the row, acomms_run's
line of that end's phases and `exit`: the s from that line to the process's exit), and whether
summary.json and messages.csv equal the reference run's (wall-time fields aside). The reference
is the same scenario at a slow warp (`--reference-warp`, default 20) for N up to
`--reference-max-n` (a slow run of 64 vehicles for an hour takes a long time); larger N print
"-". Writes a PNG of the ratio and the
start-up time vs N.
The runs use this shell's ROS_DOMAIN_ID when it is set (on a shared machine, set your own).
Each row also gives the DDS endpoints of the run's process per vehicle (what acomms_run counts
from the ROS graph once every node is active). `--lean` runs every N in both modes, default
and `acomms_run --lean`, and prints both rows, with whether the lean run's summary.json and
messages.csv equal the default run's (`--lean-only`: the lean run alone). `profile`: the modem
profile of the sim modems and MACs: the Micromodem-2 up to 120 vehicles, the EvoLogics S2C
beyond (its broadcast address is 255; shorter packets: `sim_scale_scenario`).

    source env.sh && python bench/sim_scale.py                       # N = 4 8 16 32 64, 1 h
    python bench/sim_scale.py 4 10 --duration 3600 --reference-max-n 0
    python bench/sim_scale.py 10 --no-mcap --repeat 3           # median of 3 runs
    python bench/sim_scale.py 10 --mcap-exclude '.*(_status|_counters)|/diagnostics'
    python bench/sim_scale.py 10 --no-mcap --status-period 10   # status every 10 simulated s
    python bench/sim_scale.py 10 16 32 64 --no-mcap --lean --reference-max-n 0  # both modes
    python bench/sim_scale.py 32 64 --no-mcap --lean --processes 1 2 4 --reference-max-n 0
    python bench/sim_scale.py 128 --no-mcap --lean-only --reference-max-n 0  # S2C profile
    python bench/sim_scale.py 128 --no-mcap --lean-only --processes 1 4 --reference-max-n 0

`--processes K ...` runs every N (and mode) split over K processes for each K
(`acomms_run --processes K`; the mode column says `/Kp`) and prints `= 1 proc`: whether the
outputs equal the same mode's one-process run, `rounds/step`: the Tick/Tock rounds per
step, and `unbalanced`: the steps that settled without their deliveries between processes
balancing (the most of the repeats; 0 in an exact run).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import pathlib
import re
import subprocess
import sys
import tempfile
import threading
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from sim_scale_scenario import default_profile, write_scale_scenario  # noqa: E402

from acomms_bringup.run.report import EXECUTION_KEYS  # noqa: E402

EXTRA_ARGS: list[str] = []  # --no-mcap: the simulation without the run.mcap recording
# acomms_run's line once every node is active
ENDPOINTS_LINE = re.compile(r"all nodes active in .*\((\d+) DDS endpoints, (\d+) per vehicle")
# acomms_run's last line: the end's wall s by phase (after it: the process exits)
END_LINE = re.compile(r"the end of the run took (.*)$", re.MULTILINE)
ROUNDS_LINE = re.compile(r"(\d+) Tick/Tock rounds with .*; (\d+) steps settled unbalanced")


def domain_id(default: int) -> int:
    """The ROS_DOMAIN_ID of this shell when set (runs are one after another, so one domain is
    enough, and a machine shared with other ROS users keeps them apart); else `default`."""
    return int(os.environ.get("ROS_DOMAIN_ID") or default)


class RssSampler:
    """VmRSS of a process every SAMPLE_S wall seconds (a thread), with when each was taken."""

    SAMPLE_S = 0.25

    def __init__(self, pid: int):
        self.pid, self.samples = pid, []  # [(monotonic s, MB)]
        self.thread = threading.Thread(target=self._sample, daemon=True)
        self.thread.start()

    def _sample(self) -> None:
        status = pathlib.Path(f"/proc/{self.pid}/status")
        while True:
            try:
                text = status.read_text()
            except OSError:
                return
            found = re.search(r"VmRSS:\s+(\d+) kB", text)
            if found is None:  # a zombie: it has exited
                return
            self.samples.append((time.monotonic(), int(found[1]) / 1024))
            time.sleep(self.SAMPLE_S)

    def peak(self, start: float, stop: float) -> int | None:
        values = [mb for at, mb in self.samples if start <= at < stop]
        return round(max(values)) if values else None


def run_once(scenario: pathlib.Path, out: pathlib.Path, warp: str, domain: int,
             lean: bool = False, processes: int = 1) -> dict:
    """One acomms_run process (with K > 1: and its K-1 participants); its summary, messages,
    peak RSS (MB; of the largest process; acomms_run's also sampled: until the run's end and
    after it: shutdown and outputs), the end's wall s and DDS endpoints per vehicle (of
    acomms_run's own process). Not --quiet (that line would not be printed): the progress bar
    to a pipe is ten lines per run."""
    env = dict(os.environ, ROS_DOMAIN_ID=str(domain), ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST")
    command = ["acomms_run", str(scenario), "--warp", warp, "--out", str(out), *EXTRA_ARGS,
               *(["--lean"] if lean else []),
               *(["--processes", str(processes)] if processes > 1 else [])]
    started = time.monotonic()
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True)
    sampler = RssSampler(process.pid)
    lines, running_at, end_line_at = [], None, None
    for line in process.stdout:  # before waiting: a summary longer than the pipe holds
        lines.append(line)       # would otherwise block the run
        if running_at is None and ENDPOINTS_LINE.search(line):
            running_at = time.monotonic()
        if END_LINE.search(line):
            end_line_at = time.monotonic()
    process.stdout.close()
    _, status, usage = os.wait4(process.pid, 0)
    ended = time.monotonic()
    process.returncode = os.waitstatus_to_exitcode(status)
    output = "".join(lines)
    if process.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} exited {process.returncode}:\n{output[-2000:]}")
    summary = json.loads((out / "summary.json").read_text())
    with open(out / "messages.csv", newline="") as stream:
        messages = list(csv.reader(stream))
    found = ENDPOINTS_LINE.search(output)
    rounds = ROUNDS_LINE.search(output)
    # the run ends run_wall_s after the "all nodes active" line; the rest is the end phase
    run_end = None if running_at is None else running_at + (summary.get("run_wall_s") or 0.0)
    return {"rounds": int(rounds[1]) if rounds else None,
            "unbalanced": int(rounds[2]) if rounds else None,
            "summary": summary, "messages": messages, "rss_mb": usage.ru_maxrss / 1024,
            "rss_run_mb": None if run_end is None else sampler.peak(started, run_end),
            "rss_end_mb": None if run_end is None else sampler.peak(run_end, ended),
            "end_wall_s": None if run_end is None else round(ended - run_end, 1),
            "process_wall_s": wall_s(started, ended),
            "end_phases": (ended_at[1] if (ended_at := END_LINE.search(output)) else "-")
            + ("" if end_line_at is None else f", exit {ended - end_line_at:.1f}"),
            "endpoints_per_vehicle": int(found[2]) if found else None}


def wall_s(started: float, ended: float) -> float:
    return round(ended - started, 1)


def comparable(summary: dict) -> dict:
    """The summary without what depends on the wall clock or on the chosen throttle."""
    return {k: v for k, v in summary.items()
            if k not in (*EXECUTION_KEYS, "warp", "warp_factor", "warnings")}


def same_results(one: dict, other: dict) -> bool:
    return (comparable(one["summary"]) == comparable(other["summary"])
            and one["messages"] == other["messages"])


def step_cost_us(summary: dict) -> float | None:
    """Wall µs per clock step of the run (run wall time over steps, callbacks included)."""
    steps, wall = summary.get("steps"), summary.get("run_wall_s")
    return round(1e6 * wall / steps) if steps and wall else None


def mode_name(lean: bool, processes: int) -> str:
    """The mode of a row: default or lean, and `/Kp` with K processes."""
    return ("lean" if lean else "default") + (f"/{processes}p" if processes > 1 else "")


def measure(n: int, args, tmp: pathlib.Path, lean: bool = False, processes: int = 1) -> dict:
    scenario = write_scale_scenario(n, tmp / f"scale{n}.yaml", duration_s=args.duration,
                                    status_period_s=args.status_period)
    mode = mode_name(lean, processes)
    runs = [run_once(scenario, tmp / f"max{n}_{mode.replace('/', '_')}_{k}", "max",
                     domain_id(40 + n % 50), lean, processes)
            for k in range(args.repeat)]
    runs.sort(key=lambda run: run["summary"].get("sim_wall_ratio") or 0.0)
    fast = runs[len(runs) // 2]  # the median run by ratio (the machine's load varies)
    summary = fast["summary"]
    ratios = [run["summary"].get("sim_wall_ratio") for run in runs]
    row = {"n": n, "mode": mode, "endpoints": fast["endpoints_per_vehicle"],
           "run": fast, "startup_wall_s": summary.get("startup_wall_s"),
           "run_wall_s": summary.get("run_wall_s"), "ratio": summary.get("sim_wall_ratio"),
           "ratio_range": f"{min(ratios)}-{max(ratios)}" if len(runs) > 1 else "-",
           "repeats_identical": "yes" if all(same_results(r, fast) for r in runs) else "NO",
           "steps": summary.get("steps"), "step_us": step_cost_us(summary),
           "rounds_per_step": (round(fast["rounds"] / summary["steps"], 2)
                               if fast["rounds"] and summary.get("steps") else "-"),
           "unbalanced": "-" if fast["unbalanced"] is None else max(
               r["unbalanced"] for r in runs),
           "delivered": summary.get("messages_delivered"),
           "sent": summary.get("messages_sent"), "rss_mb": round(fast["rss_mb"]),
           "rss_run_mb": fast["rss_run_mb"], "rss_end_mb": fast["rss_end_mb"],
           "end_wall_s": fast["end_wall_s"], "profile": default_profile(n),
           "equal_to_reference": "-"}
    if n <= args.reference_max_n and not lean and processes == 1:
        slow = run_once(scenario, tmp / f"ref{n}", str(args.reference_warp),
                        domain_id(41 + n % 50))
        row["equal_to_reference"] = "yes" if same_results(slow, fast) else "NO"
    return row


def plot(rows: list[dict], path: pathlib.Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, left = plt.subplots(figsize=(7, 4))
    right = left.twinx()
    styles = ("-", ":", "--", "-.")
    for index, mode in enumerate(dict.fromkeys(r["mode"] for r in rows)):
        style = styles[index % len(styles)]
        chosen = [r for r in rows if r["mode"] == mode]
        if chosen:
            ns = [r["n"] for r in chosen]
            left.plot(ns, [r["ratio"] for r in chosen], "o" + style, color="tab:blue",
                      label=f"sim/wall, {mode}")
            right.plot(ns, [r["startup_wall_s"] for r in chosen], "s" + style, color="tab:red",
                       label=f"start-up, {mode}")
    ns = sorted({r["n"] for r in rows})
    left.set_xlabel("vehicles")
    left.set_ylabel("simulated / wall time", color="tab:blue")
    left.set_xscale("log", base=2)
    left.set_xticks(ns, [str(n) for n in ns])
    right.set_ylabel("start-up, wall s", color="tab:red")
    left.set_title("acomms_run --warp max, TDMA, one nav message per vehicle per cycle")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)


def print_row(row: dict, rows: list[dict]) -> None:
    """One row; `= default`: equal to the default mode's run with as many processes, `= 1
    proc`: equal to the same mode's run in one process ('-': no such run)."""
    def same_as(other_mode: str) -> str:
        other = next((r for r in rows if r["n"] == row["n"] and r["mode"] == other_mode), None)
        if other is None or other is row:
            return "-"
        return "yes" if same_results(row["run"], other["run"]) else "NO"

    lean = row["mode"].startswith("lean")
    processes = int(row["mode"].split("/")[1][:-1]) if "/" in row["mode"] else 1
    values = (row["n"], row["mode"], row["endpoints"], row["startup_wall_s"], row["run_wall_s"],
              row["ratio"], row["ratio_range"], row["steps"], row["rounds_per_step"],
              row["unbalanced"], row["step_us"],
              None if row["step_us"] is None else round(row["step_us"] / row["n"], 1),
              f"{row['delivered']}/{row['sent']}",
              row["rss_mb"], row["rss_run_mb"], row["rss_end_mb"], row["end_wall_s"],
              row["equal_to_reference"], row["repeats_identical"],
              same_as(mode_name(False, processes)) if lean else "-",
              same_as(mode_name(lean, 1)), row["profile"])
    print("  ".join(f"{v!s:>11}" for v in values), flush=True)
    print(f"{'':>11}  end of the run: {row['run']['end_phases']}", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("n", nargs="*", type=int, default=[4, 8, 16, 32, 64])
    parser.add_argument("--duration", type=float, default=3600.0, help="simulated s")
    parser.add_argument("--reference-warp", type=float, default=20.0)
    parser.add_argument("--reference-max-n", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=1, metavar="K",
                        help="K --warp max runs per N: the median run is printed, with the "
                             "range of ratios and whether all K gave the same results")
    parser.add_argument("--png", default="acomms_demo_out/sim_scale.png")
    parser.add_argument("--no-mcap", action="store_true",
                        help="runs without the run.mcap recording (simulation cost alone)")
    parser.add_argument("--mcap-exclude", default=None, metavar="REGEX",
                        help="record run.mcap without these topics (acomms_run --mcap-exclude)")
    parser.add_argument("--status-period", type=float, default=None, metavar="S",
                        help="queue/MAC status and modem diagnostics every S simulated s "
                             "(default: the nodes' 1 s)")
    parser.add_argument("--lean", action="store_true",
                        help="every N in both modes: default, then acomms_run --lean")
    parser.add_argument("--lean-only", action="store_true",
                        help="every N in the lean mode only (acomms_run --lean)")
    parser.add_argument("--processes", type=int, nargs="+", default=[1], metavar="K",
                        help="every N (and mode) with acomms_run --processes K for each K "
                             "(e.g. 1 2 4); '= 1 proc' says whether the outputs equal K=1's")
    args = parser.parse_args()
    if args.no_mcap:
        EXTRA_ARGS.append("--no-mcap")
    if args.mcap_exclude:
        EXTRA_ARGS.extend(["--mcap-exclude", args.mcap_exclude])
    header = ("N", "mode", "endpts/veh", "startup_s", "run_s", "sim/wall", "range", "steps",
              "rounds/step", "unbalanced", "us/step", "us/step/veh", "delivered", "rss_MB",
              "rss_run_MB", "rss_end_MB", "end_s", "= reference", "K identical", "= default",
              "= 1 proc", "profile")
    print("  ".join(f"{h:>11}" for h in header), flush=True)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in args.n:
            modes = (True,) if args.lean_only else (False, True) if args.lean else (False,)
            for lean in modes:
                for processes in args.processes:
                    rows.append(measure(n, args, pathlib.Path(tmp), lean, processes))
                    print_row(rows[-1], rows)
    plot(rows, pathlib.Path(args.png))
    print(f"wrote {args.png}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
