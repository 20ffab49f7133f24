"""Journey: docs/guide/scaling.md's `acomms_run acomms_bringup/config/demo.yaml --processes 2`
as a user types it (shortened with `--duration 30 --warp max --out DIR`): status 0, the console
says the run is split over 2 processes, the participant's output is in the run folder, and the
run delivers what the same command in one process delivers, with the same summary.json and
messages.csv (wall-time fields aside), and every step settled with its deliveries between the
processes balanced."""

from __future__ import annotations

import csv

from journey_support import documented, run_summary, shell

COMMAND = documented("acomms_run acomms_bringup/config/demo.yaml --processes 2")
ONE_PROCESS = COMMAND.replace(" --processes 2", "")
SHORT = "--duration 30 --warp max --no-mcap"
WALL_TIME = ("wall_seconds", "startup_wall_s", "run_wall_s", "sim_wall_ratio", "warp")


def outputs(out) -> tuple[dict, list]:
    summary = {k: v for k, v in run_summary(out).items() if k not in WALL_TIME}
    with (out / "messages.csv").open() as handle:
        return summary, list(csv.DictReader(handle))


def test_two_processes_deliver_what_one_process_delivers(tmp_path):
    split = shell(f"{COMMAND} {SHORT} --out {tmp_path / 'two'}", timeout_s=120)
    assert split.returncode == 0, (split.stdout + split.stderr)[-4000:]
    assert "3 vehicles" in split.stdout and "2 processes (2 + 1 vehicles)" in split.stdout
    assert (tmp_path / "two" / "participants.log").exists()
    assert "; 0 steps settled unbalanced" in split.stdout  # every step's deliveries balanced
    one = shell(f"{ONE_PROCESS} {SHORT} --out {tmp_path / 'one'}", timeout_s=120)
    assert one.returncode == 0, (one.stdout + one.stderr)[-4000:]
    two_summary, two_messages = outputs(tmp_path / "two")
    one_summary, one_messages = outputs(tmp_path / "one")
    assert two_summary["messages_delivered"] == one_summary["messages_delivered"] >= 1
    assert [(r["topic"], r["source"], r["destination"], r["delivered"])
            for r in two_summary["topics"]] == [
        (r["topic"], r["source"], r["destination"], r["delivered"])
        for r in one_summary["topics"]]
    assert (two_summary, two_messages) == (one_summary, one_messages)
