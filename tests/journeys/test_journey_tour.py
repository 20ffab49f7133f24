"""Journey: the README's "5-minute tour" command, as a user types it (its `--out /tmp/x` replaced
by a temporary folder): 5 simulated minutes of the demo at `--warp max`, every output the Quick
start lists written, timeline.png among them; the picture the README shows is a small PNG."""

from __future__ import annotations

import pathlib

from journey_support import documented, run_summary, shell

ROOT = pathlib.Path(__file__).resolve().parents[2]
TOUR = documented(
    "acomms_run acomms_bringup/config/demo.yaml --warp max --duration 300 --out /tmp/x")
OUTPUTS = ("run.mcap", "summary.json", "timeline.png", "timeline.csv", "timeline.json",
           "messages.csv", "accounting.csv", "map.png", "positions.csv")
PICTURE = ROOT / "docs" / "images" / "demo_timeline.png"


def test_the_tour_command_runs_five_simulated_minutes_and_writes_the_outputs(tmp_path):
    out = tmp_path / "x"
    result = shell(TOUR.replace("--out /tmp/x", f"--out {out}"), timeout_s=120)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    missing = [name for name in OUTPUTS if not (out / name).is_file()]
    assert not missing, f"not written: {missing}"
    summary = run_summary(out)
    assert summary["simulated_seconds"] == 300.0
    assert summary["warp"] == "max" and not summary["interrupted"]
    assert summary["messages_delivered"] > 0


def test_the_readme_picture_is_a_small_png():
    data = PICTURE.read_bytes()
    assert data.startswith(b"\x89PNG\r\n\x1a\n")
    assert len(data) < 200_000
