"""Journey: the Monte Carlo sweep of docs/guide/scaling.md, `acomms_sweep
acomms_bringup/config/demo_sweep.yaml --workers 2` (shortened with `--duration 60 --out DIR`):
status 0, every run's folder, sweep.csv with one row per run and the documented columns,
sweep.png; the same command again skips every finished run and writes the same sweep.csv."""

from __future__ import annotations

import csv

from journey_support import documented, shell

COMMAND = documented("acomms_sweep acomms_bringup/config/demo_sweep.yaml --workers 2")
RUNS = 6  # 2 fading models x 3 seeds


def test_the_documented_sweep_runs_every_point_and_resumes(tmp_path):
    out = tmp_path / "sweep"
    result = shell(f"{COMMAND} --duration 60 --out {out}", timeout_s=150)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"{RUNS} of {RUNS} runs complete (0 already done, 0 failed)" in result.stdout
    with (out / "sweep.csv").open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == RUNS and {r["status"] for r in rows} == {"ok"}
    assert sorted((r["channel.fading.model"], r["seed"]) for r in rows) == [
        (model, str(seed)) for model in ("none", "rayleigh") for seed in (1, 2, 3)]
    columns = rows[0].keys()
    for column in ("delivered_ratio", "channel_utilisation", "to_acomms/science:sent",
                   "to_acomms/science:delivered_ratio",
                   "to_acomms/science:mean_latency_s", "per:auv->topside"):
        assert column in columns, sorted(columns)
    for row in rows:
        run = out / "runs" / row["run"]
        assert all((run / name).is_file() for name in ("summary.json", "messages.csv",
                                                        "timeline.csv", "scenario.yaml"))
    assert (out / "sweep.png").read_bytes()[:4] == b"\x89PNG"
    table = (out / "sweep.csv").read_text()

    again = shell(f"{COMMAND} --duration 60 --out {out}", timeout_s=60)
    assert again.returncode == 0, again.stdout + again.stderr
    assert f"({RUNS} already done, 0 failed)" in again.stdout
    assert (out / "sweep.csv").read_text() == table
