"""Run the README's demo N times; per run its exit status and every error or warning line.

Issue 26: about half of the default demo runs printed `acomms_run: a callback failed (the run
goes on): InvalidHandle: ...` at shutdown. This runs `scripts/demo.sh --duration S --warp max
--out <tmp>/runN` N times (one after another: the runs must not share a ROS graph) and prints,
per run, the exit status, the wall seconds and the lines that look like a problem (an error, a
warning, a traceback, a failed callback), then the totals. Exit status 1 when any run failed or
printed such a line. Run:

    source env.sh && python bench/demo_repeat.py 10 --duration 60
"""

from __future__ import annotations

import argparse
import pathlib
import re
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
PROBLEM = re.compile(r"error|warn|traceback|exception|failed|invalidhandle", re.IGNORECASE)


def problem_lines(text: str) -> list[str]:
    """The lines of a run's output that report a problem."""
    return [line.strip() for line in text.splitlines() if PROBLEM.search(line)]


def run_once(out_dir: pathlib.Path, duration: float, timeout_s: float) -> tuple[int, float, list]:
    """(exit status, wall s, problem lines) of one demo run."""
    command = [str(ROOT / "scripts" / "demo.sh"), "--duration", f"{duration:g}", "--warp", "max",
               "--out", str(out_dir)]
    started = time.monotonic()
    try:
        result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True,
                                timeout=timeout_s, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as exc:
        output = (exc.stdout or b"").decode() if isinstance(exc.stdout, bytes) else exc.stdout
        return -1, time.monotonic() - started, [f"timed out after {timeout_s:g} s",
                                                *problem_lines(output or "")]
    wall = time.monotonic() - started
    return result.returncode, wall, problem_lines(result.stdout + "\n" + result.stderr)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("runs", type=int, nargs="?", default=10)
    parser.add_argument("--duration", type=float, default=60.0, help="simulated s per run")
    parser.add_argument("--timeout", type=float, default=300.0, help="wall s per run")
    arguments = parser.parse_args(argv)
    failed = noisy = 0
    with tempfile.TemporaryDirectory(prefix="demo_repeat_") as tmp:
        for index in range(1, arguments.runs + 1):
            status, wall, lines = run_once(pathlib.Path(tmp) / f"run{index}",
                                           arguments.duration, arguments.timeout)
            failed += status != 0
            noisy += bool(lines)
            print(f"run {index:>3}: exit {status}, {wall:5.1f} wall s, "
                  f"{len(lines)} error/warning lines", flush=True)
            for line in lines:
                print(f"         {line}", flush=True)
    print(f"total: {arguments.runs} runs of {arguments.duration:g} simulated s: {failed} exited "
          f"non-zero, {noisy} printed error/warning lines")
    return 1 if failed or noisy else 0


if __name__ == "__main__":
    sys.exit(main())
