"""`acomms_run --processes K` as processes: a stop signal to acomms_run ends its participants
too, a participant that dies stops the run with one line naming it (the summary of what ran is
still written), and participants of a killed acomms_run end by themselves: no orphans, every
wait bounded."""

from __future__ import annotations

import json
import os
import pathlib
import signal
import subprocess
import sys
import time

CONFIG = pathlib.Path(__file__).resolve().parents[1] / "config"
WAIT_S = 120.0  # wall seconds for the demo to come up on a loaded machine


def children(pid: int) -> list[int]:
    """The child processes of pid (Linux /proc)."""
    found = []
    for task in pathlib.Path(f"/proc/{pid}/task").glob("*"):
        try:
            found += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            pass
    return found


def alive(pid: int) -> bool:
    try:
        state = pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def wait_until(predicate, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, f"{what}: not within {timeout_s:g} s"
        time.sleep(0.1)


def start_run(tmp_path: pathlib.Path, processes: int = 3) -> tuple[subprocess.Popen, list[int]]:
    """The demo over `processes` processes at warp 1, once it runs; its participants' pids."""
    console = tmp_path / "console.txt"
    run = subprocess.Popen(
        [sys.executable, "-m", "acomms_bringup.run.cli", str(CONFIG / "demo.yaml"),
         "--processes", str(processes), "--warp", "1", "--duration", "600", "--no-mcap",
         "--out", str(tmp_path / "out")],
        stdout=console.open("w"), stderr=subprocess.STDOUT)
    try:
        wait_until(lambda: "; running" in console.read_text() or run.poll() is not None,
                   WAIT_S, "acomms_run running")
        assert run.poll() is None, console.read_text()[-3000:]
        participants = children(run.pid)
        assert len(participants) == processes - 1, (participants, console.read_text())
    except BaseException:
        run.kill()
        run.wait(timeout=30)
        raise
    return run, participants


def test_sigterm_stops_acomms_run_and_its_participants(tmp_path):
    run, participants = start_run(tmp_path)
    run.send_signal(signal.SIGTERM)
    assert run.wait(timeout=60) == 143
    wait_until(lambda: not any(alive(pid) for pid in participants), 20, "participants ended")
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["interrupted"] == "SIGTERM"


def test_a_participant_that_dies_stops_the_run_with_one_line(tmp_path):
    run, participants = start_run(tmp_path)
    time.sleep(2.0)  # warp 1: a few simulated seconds run first
    os.kill(participants[0], signal.SIGKILL)
    assert run.wait(timeout=60) == 1
    wait_until(lambda: not any(alive(pid) for pid in participants), 20, "participants ended")
    lines = [line for line in (tmp_path / "console.txt").read_text().splitlines()
             if "stopped:" in line]
    assert len(lines) == 1, lines
    assert f"(pid {participants[0]}) exited with status -9; its output is in " in lines[0]
    assert "participant acomms_run_" in lines[0] and "participants.log" in lines[0]
    assert json.loads((tmp_path / "out" / "summary.json").read_text())["simulated_seconds"] > 0


def test_participants_of_a_killed_acomms_run_end_by_themselves(tmp_path):
    run, participants = start_run(tmp_path, processes=2)
    run.kill()
    run.wait(timeout=30)
    wait_until(lambda: not any(alive(pid) for pid in participants), 30, "participants ended")
