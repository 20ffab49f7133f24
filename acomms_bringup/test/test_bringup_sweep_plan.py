"""acomms_sweep's plan (ROS-free): override paths, grid and points, seeds, errors, results."""

import csv
import json
import pathlib

import pytest
import yaml

from acomms_bringup.run import sweep_results
from acomms_bringup.run.sweep_cli import seed_of
from acomms_bringup.run.sweep_plan import (
    SweepError,
    apply_override,
    load_sweep,
    parse_range,
    parse_sweep,
)

CONFIG = pathlib.Path(__file__).resolve().parents[1] / "config"


def _data():
    return yaml.safe_load((CONFIG / "demo.yaml").read_text())


def test_override_paths_reach_every_kind_of_item():
    data = _data()
    apply_override(data, "vehicles[*].mac.slot_duration_seconds", 30.0)
    apply_override(data, "vehicles[name=auv].modem.tx_level", 1)
    apply_override(data, "vehicles[-1].src", 9)
    apply_override(data, "channel.fading.model", "none")
    apply_override(data, "clock.start_time", "2026-01-01T00:00:00Z")  # created: not in demo.yaml
    assert [v["mac"]["slot_duration_seconds"] for v in data["vehicles"]] == [30.0] * 3
    assert data["vehicles"][0]["modem"] == {"kind": "sim", "tx_level": 1}
    assert "tx_level" not in data["vehicles"][1]["modem"]
    assert data["vehicles"][2]["src"] == 9
    assert data["channel"]["fading"] == {"model": "none", "coherence_time_s": 1.5}
    assert data["clock"]["start_time"] == "2026-01-01T00:00:00Z"


@pytest.mark.parametrize("path, message", [
    ("vehicles[name=nobody].mac.kind", "no item with name=nobody (there are: auv, gateway"),
    ("vehicles[7].src", "index 7 out of range (3 items)"),
    ("channel[0].x", "a [...] selector needs a list, the data there is a dict"),
    ("name.x", "'x' is a key, but the data there is a str"),
    ("vehicles..src", "bad override path"),
    ("vehicles[?].src", "bad selector [?]"),
])
def test_bad_override_paths_name_the_path(path, message):
    with pytest.raises(SweepError, match="demo_sweep.yaml: ") as caught:
        apply_override(_data(), path, 1, "demo_sweep.yaml")
    assert path in str(caught.value) and message in str(caught.value)


def test_ranges_and_lists():
    assert parse_range("1..4", "x") == [1, 2, 3, 4]
    assert parse_range([3, "a"], "x") == [3, "a"]
    assert parse_range("rayleigh", "x") == ["rayleigh"]
    with pytest.raises(SweepError, match="empty range"):
        parse_range("5..1", "x")


def _sweep(tmp_path, text: str):
    path = tmp_path / "s.yaml"
    path.write_text(f"scenario: {CONFIG / 'demo.yaml'}\n" + text)
    return load_sweep(path)


def test_grid_points_and_seeds_expand_in_order(tmp_path):
    sweep = _sweep(tmp_path, """
duration_seconds: 60
grid:
  channel.fading.model: [none, rayleigh]
  vehicles[*].mac.slot_duration_seconds: [25.0, 30.0]
points:
  - vehicles[name=topside].modem.tx_level: 1
seeds: 1..2
plot: {x: channel.fading.model, metric: delivered_ratio}
""")
    runs = sweep.runs()
    assert len(runs) == (2 * 2 + 1) * 2
    assert [r.seed for r in runs[:4]] == [1, 2, 1, 2]
    assert runs[0].overrides == (("channel.fading.model", "none"),
                                 ("vehicles[*].mac.slot_duration_seconds", 25.0))
    assert runs[-1].overrides == (("vehicles[name=topside].modem.tx_level", 1),)
    assert len({r.name for r in runs}) == len(runs)
    assert sweep.parameters == ["channel.fading.model", "vehicles[*].mac.slot_duration_seconds",
                                "vehicles[name=topside].modem.tx_level"]
    data = sweep.scenario_for(runs[5])  # point 2 (rayleigh, 25 s), seed 2
    assert (data["seed"], data["duration_seconds"]) == (2, 60)
    assert data["channel"]["fading"]["model"] == "rayleigh"
    assert _data()["seed"] == 7  # the scenario file itself is unchanged


def test_without_seeds_or_grid_one_run_with_the_scenario_seed(tmp_path):
    runs = _sweep(tmp_path, "").runs()
    assert [(r.overrides, r.seed) for r in runs] == [((), None)]


@pytest.mark.parametrize("text, message", [
    ("grid: {channel.fading.model: [none, fast]}", "point 1 (channel.fading.model=fast)"),
    ("grid: {channel.fadin.model: [none]}", "channel.fadin: unknown key (did you mean 'fading'"),
    ("grid:\n  vehicles[name=x].src: [1]", "no item with name=x"),
    ("seeds: [1, two]", "seeds: must be integers"),
    ("colour: red", "unknown key 'colour'"),
    ("duration_seconds: -1", "duration_seconds: must be a number > 0"),
    ("grid: {channel.fading.model: [none]}\nplot: {x: seed2}", "plot: x: 'seed2' is not"),
    ("grid: {channel.fading.model: [none]}\nplot: {x: seed, series: y}", "plot: series: 'y'"),
    ("plot: {x: seed, colour: red}", "plot: needs x"),
    ("grid: {channel.fading.model: []}", "needs at least one value"),
])
def test_bad_sweep_files_fail_with_one_line(tmp_path, text, message):
    with pytest.raises(SweepError, match="s.yaml: ") as caught:
        _sweep(tmp_path, text)
    assert message in str(caught.value) and "\n" not in str(caught.value)


def test_yaml_errors_are_one_line(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text("points:\n  - {vehicles[0].src: 1}\n")
    with pytest.raises(SweepError, match=r"s.yaml: not valid YAML at line 2, column 14: expected"):
        load_sweep(path)


def test_missing_scenario_file(tmp_path):
    with pytest.raises(SweepError, match="scenario: cannot read"):
        parse_sweep({"scenario": "nope.yaml"}, "s.yaml", tmp_path)


def _write_run(run_dir: pathlib.Path, summary: dict, tx: list[tuple[float, float]]):
    run_dir.mkdir(parents=True)
    (run_dir / "summary.json").write_text(json.dumps(summary))
    with (run_dir / "timeline.csv").open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["vehicle", "kind", "start_s", "end_s"])
        for start, end in tx:
            writer.writerow(["a", "tx", start, end])
        writer.writerow(["b", "rx", 0.0, 90.0])


def test_run_row_and_completeness(tmp_path):
    summary = {"simulated_seconds": 100.0, "requested_duration_s": 100.0, "interrupted": None,
               "messages_sent": 3, "deliveries_expected": 4, "messages_delivered": 3,
               "topics": [
                   {"topic": "t", "source": "a", "destination": "b", "sent": 2, "delivered": 2,
                    "mean_latency_s": 10.0},
                   {"topic": "t", "source": "a", "destination": "c", "sent": 2, "delivered": 1,
                    "mean_latency_s": 40.0}],
               "links": [{"source": "a", "receiver": "b", "sent": 4, "received": 3},
                         {"source": "b", "receiver": "a", "sent": 0, "received": 0}]}
    _write_run(tmp_path / "run", summary, [(0.0, 10.0), (5.0, 15.0), (50.0, 55.0)])
    row = sweep_results.run_row(tmp_path / "run")
    assert row["delivered_ratio"] == 0.75
    assert (row["t:sent"], row["t:delivered"], row["t:delivered_ratio"]) == (4, 3, 0.75)
    assert row["t:mean_latency_s"] == 20.0  # weighted by deliveries
    assert row["per:a->b"] == 0.25 and "per:b->a" not in row
    assert row["channel_utilisation"] == 0.2  # 0-15 and 50-55 of 100 s
    assert sweep_results.is_complete(tmp_path / "run")
    assert not sweep_results.is_complete(tmp_path / "run", duration_s=200.0)
    _write_run(tmp_path / "stopped", {**summary, "interrupted": "SIGINT"}, [])
    assert not sweep_results.is_complete(tmp_path / "stopped")
    assert not sweep_results.is_complete(tmp_path / "absent")


def test_csv_and_plot(tmp_path):
    rows = [{"run": f"r{i}", "x": x, "seed": s, "status": "ok", "m": v}
            for i, (x, s, v) in enumerate([("a", 1, 0.5), ("a", 2, 0.7), ("b", 1, 0.9),
                                           ("b", 2, None)])]
    columns = sweep_results.write_csv(tmp_path / "s.csv", rows, ["x"])
    assert columns == ["run", "x", "seed", "status", "m"]
    lines = (tmp_path / "s.csv").read_text().splitlines()
    assert lines[1] == "r0,a,1,ok,0.5" and lines[4] == "r3,b,2,ok,"
    assert sweep_results.spread(rows, "x", "m") == [("a", 0.6, 0.5, 0.7, 2),
                                                    ("b", 0.9, 0.9, 0.9, 1)]
    assert sweep_results.plot(tmp_path / "s.png", rows, "x", "m", "t")
    assert (tmp_path / "s.png").read_bytes()[:4] == b"\x89PNG"
    assert not sweep_results.plot(tmp_path / "n.png", rows, "x", "absent", "t")
    assert sweep_results.plot(tmp_path / "l.png", rows, "seed", "m", "t", series="x")
    assert (tmp_path / "l.png").read_bytes()[:4] == b"\x89PNG"


def test_command_line_duration_and_seeds_replace_the_files(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(f"scenario: {CONFIG / 'demo.yaml'}\nduration_seconds: 600\nseeds: 1..10\n")
    sweep = load_sweep(path, duration_s=30.0, seeds="4,2")
    assert [r.seed for r in sweep.runs()] == [4, 2] and sweep.duration_seconds == 30.0
    assert [r.seed for r in load_sweep(path, seeds="3..4").runs()] == [3, 4]
    with pytest.raises(SweepError, match="--seeds: 'first..last' or 'a,b,c'"):
        load_sweep(path, seeds="x")


def test_a_grid_seed_key_is_the_seeds(tmp_path):
    sweep = _sweep(tmp_path, "grid:\n  seed: 1..3\n  channel.fading.model: [none]\n")
    assert [r.seed for r in sweep.runs()] == [1, 2, 3] and sweep.parameters == [
        "channel.fading.model"]
    with pytest.raises(SweepError, match="seeds are given twice"):
        _sweep(tmp_path, "seeds: [1]\ngrid: {seed: [2]}\n")
    points = _sweep(tmp_path, "points:\n  - {seed: 4}\n  - {channel.fading.model: none}\n")
    assert points.parameters == ["channel.fading.model"]
    assert points.scenario_for(points.runs()[0])["seed"] == 4
    assert [seed_of(points, run) for run in points.runs()] == [4, 7]  # demo.yaml's seed: 7
