"""acomms_run's deterministic clock: same scenario + seed -> the same outputs, whatever the warp;
a raising callback or a silent Tock participant stops the run with one line, bounded in time,
and the summary of what ran is still written."""

import csv
import io
import json
import pathlib

import pytest

from acomms_bringup.description.scenario import load_scenario
from acomms_bringup.run import cli, report
from acomms_bringup.run.runner import Runner, RunStopped

CONFIG = pathlib.Path(__file__).resolve().parents[1] / "config"
DURATION = "25"  # the demo's first nav_status reaches the gateway and the topside


def outputs(out: pathlib.Path) -> tuple[dict, list]:
    summary = json.loads((out / "summary.json").read_text())
    for key in (*report.EXECUTION_KEYS, "warp"):
        summary.pop(key)
    with (out / "messages.csv").open() as handle:
        return summary, list(csv.DictReader(handle))


def test_same_seed_gives_identical_outputs_across_runs_warps_and_executors(tmp_path, capsys):
    results = []
    # the first run records run.mcap (the default), the others do not: same results either way
    runs = (("max", "events", []), ("max", "events", ["--no-mcap"]),
            ("10", "events", ["--no-mcap"]), ("max", "single", ["--no-mcap"]))
    for index, (warp, executor, extra) in enumerate(runs):
        out = tmp_path / f"run{index}"
        assert cli.main([str(CONFIG / "demo.yaml"), "--duration", DURATION, "--warp", warp,
                         "--executor", executor, "--quiet", "--out", str(out), *extra]) == 0
        results.append(outputs(out))
    assert (tmp_path / "run0" / "run.mcap").exists()
    assert not (tmp_path / "run1" / "run.mcap").exists()
    printed = capsys.readouterr().out
    assert "Clock: deterministic, warp max" in printed and "simulated/wall" in printed
    summary, messages = results[0]
    assert summary["clock_mode"] == "deterministic"
    # run.mcap hears the modems' reception_start: they wake at each lock decision for it;
    # without it they decide the locks at their next wake, in fewer steps, with the same results
    steps = [json.loads((tmp_path / f"run{i}" / "summary.json").read_text())["steps"]
             for i in range(2)]
    assert 0 < steps[1] < steps[0], steps
    assert summary["messages_delivered"] >= 1 and not summary["warnings"]
    assert results[1] == results[0]
    assert results[2] == results[0]
    # The Python executor runs callbacks due at the same instant in another order (a position
    # update before or after a transmission at that instant): the same deliveries and
    # latencies, link SNRs within a few hundredths of a dB.
    single_summary, single_messages = results[3]
    assert single_messages == messages
    assert without_snr(single_summary) == without_snr(summary)
    for link, single_link in zip(summary["links"], single_summary["links"], strict=True):
        if link["mean_snr_db"] is None:
            assert single_link["mean_snr_db"] is None
        else:
            assert single_link["mean_snr_db"] == pytest.approx(link["mean_snr_db"], abs=0.5)
    raw = json.loads((tmp_path / "run2" / "summary.json").read_text())
    assert raw["warp"] == 10.0 and raw["sim_wall_ratio"] <= 10.5  # throttled to warp 10
    assert raw["startup_wall_s"] > 0 and raw["run_wall_s"] >= 2.5 - 0.1


def without_snr(summary: dict) -> dict:
    links = [{k: v for k, v in link.items() if k != "mean_snr_db"} for link in summary["links"]]
    return {**summary, "links": links}


def deterministic_runner(**options) -> Runner:
    scenario = load_scenario(CONFIG / "two_vehicles.yaml")
    return Runner(scenario, stream=io.StringIO(), progress=False, clock_mode="deterministic",
                  warp=None, **options)


def test_a_raising_callback_stops_the_run_naming_the_node_and_time(tmp_path):
    runner = deterministic_runner(step_timeout_s=5.0)
    try:
        runner.start()

        def broken():
            raise ValueError("bad sensor value")

        runner.recorder.create_timer(7.5, broken)
        with pytest.raises(RunStopped) as info:
            runner.run(30.0)
        assert str(info.value) == ("a callback of /acomms_run raised ValueError: bad sensor "
                                   "value at simulated time 7.500 s")
    finally:
        assert runner.stop() == []
    summary = report.summarize(runner.record)
    report.write_outputs(runner.record, summary, tmp_path)
    assert json.loads((tmp_path / "summary.json").read_text())["simulated_seconds"] == 7.5


def test_a_participant_that_never_answers_stops_the_run_within_the_timeout(tmp_path):
    runner = deterministic_runner(participants=("ghost_participant",), step_timeout_s=1.0)
    try:
        runner.start()
        startup_executor = runner.executor
        with pytest.raises(RunStopped) as info:
            runner.run(30.0)
        assert str(info.value) == ("participant ghost_participant did not answer Tick 0 within "
                                   "1 wall s at simulated time 0.000 s")
    finally:
        assert runner.stop() == []
    assert runner.executor is not startup_executor  # a fresh executor spun the shutdown
    assert runner.step_executor is None


def test_cli_writes_the_partial_summary_when_a_participant_is_silent(tmp_path, capsys):
    out = tmp_path / "out"
    status = cli.main([str(CONFIG / "two_vehicles.yaml"), "--duration", "20", "--quiet",
                       "--participants", "ghost", "--step-timeout", "1", "--out", str(out)])
    assert status == 1
    err = capsys.readouterr().err
    # One line says why the run stopped (a loaded machine may add warnings before it).
    (line,) = [text for text in err.splitlines() if "stopped:" in text] or [err]
    assert line.endswith("stopped: participant ghost did not answer Tick 0 within 1 wall s "
                         "at simulated time 0.000 s")
    assert json.loads((out / "summary.json").read_text())["clock_mode"] == "deterministic"


def run_split(tmp_path: pathlib.Path, duration: str, vehicle: str) -> tuple[dict, list]:
    """The demo with `vehicle`'s nodes in a second OS process started by hand
    (acomms_participant, as on another machine)."""
    import subprocess
    import sys

    participant = subprocess.Popen(
        [sys.executable, "-m", "acomms_bringup.run.participant", str(CONFIG / "demo.yaml"),
         "--groups", vehicle, "--name", f"participant_{vehicle}", "--idle-exit", "3"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out = tmp_path / "split"
        status = cli.main([str(CONFIG / "demo.yaml"), "--duration", duration, "--warp", "max",
                           "--quiet", "--out", str(out), "--exclude", vehicle,
                           "--participants", f"participant_{vehicle}", "--step-timeout", "60"])
        if status != 0 and participant.poll() is None:
            participant.kill()
        _, err = participant.communicate(timeout=30)
        assert status == 0, f"acomms_run exited {status}; the participant said: {err}"
        assert participant.returncode == 0, err
    finally:
        if participant.poll() is None:
            participant.kill()
            participant.wait(timeout=10)
    return outputs(out)


def test_vehicles_split_over_processes_give_the_one_process_results(tmp_path, capsys):
    """summary.json and messages.csv (wall-time fields aside) are the same in one process, with
    the topside in a participant started by hand, and over 3 processes (--processes 3): the
    participants' queue accounting and dispatch sources reach acomms_run over ROS. Every step
    settled with its deliveries between processes balanced (run.mcap recorded: its recording
    node is an observer, not a subscriber that holds a step)."""
    duration = "20"  # the AUV's first nav_status reaches the gateway and the topside
    assert cli.main([str(CONFIG / "demo.yaml"), "--duration", duration, "--warp", "max",
                     "--quiet", "--out", str(tmp_path / "one")]) == 0
    one = outputs(tmp_path / "one")
    assert one[0]["messages_delivered"] >= 1
    assert run_split(tmp_path, duration, "topside") == one
    out = tmp_path / "three"
    capsys.readouterr()
    assert cli.main([str(CONFIG / "demo.yaml"), "--duration", duration, "--warp", "max",
                     "--out", str(out), "--processes", "3"]) == 0
    printed = capsys.readouterr()
    assert "; 0 steps settled unbalanced" in printed.out, printed.out[-2000:]
    assert (out / "run.mcap").exists()
    assert outputs(out) == one
    assert (out / "participants.log").exists()


def test_free_clock_warnings_name_the_node_that_fell_behind():
    counters = {"/auv/tdma_node": {"held_packets": 2, "packets_sent": 9, "service_timeouts": 1},
                "/gateway/tdma_node": {"packets_sent": 4}}
    behind = report.fell_behind(counters)
    assert behind == {"/auv/tdma_node": "held_packets 2, service_timeouts 1"}
    record = report.RunRecord("demo", {"auv": 1}, 60.0, 10.0, wall_seconds=6.0, end_s=60.0,
                              clock_mode="free", warp=10.0, startup_wall_s=1.5,
                              warnings=[report.fell_behind_warning(*behind.popitem())])
    summary = report.summarize(record)
    assert summary["sim_wall_ratio"] == 10.0 and summary["clock_mode"] == "free"
    text = report.format_summary(summary)
    assert "Clock: free, warp 10.0; start-up 1.5 wall s, run 6.0 wall s, simulated/wall 10" in text
    assert "WARNING: /auv/tdma_node fell behind the free-running clock (held_packets 2" in text
