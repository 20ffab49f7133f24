"""The embedded runner (acomms_run): the whole stack in one process, the demo, bad scenarios.

- two_vehicles.yaml comes up; every managed node reports `active` through its get_state service;
  a message crosses the simulated channel; deactivate/activate keeps queued messages.
- the demo scenario runs (shortened, high warp) through `acomms_run`'s main and its summary shows
  delivered messages; the output files exist and parse.
- bad scenario files and a node that cannot start stop acomms_run with one clear message.
"""

import csv
import dataclasses
import importlib.util
import io
import json
import pathlib
import re
import subprocess
import time

import pytest
import yaml
from lifecycle_msgs.msg import Transition
from lifecycle_msgs.srv import ChangeState
from std_msgs.msg import String

from acomms_bringup.description.scenario import load_scenario
from acomms_bringup.run import cli
from acomms_bringup.run.runner import RunError, Runner
from acomms_interfaces.msg import QueueCounters

# The stack needs the TDMA MAC (issue 4); the bad-scenario checks do not.
needs_tdma = pytest.mark.skipif(importlib.util.find_spec("acomms_core.nodes.tdma_node") is None,
                                reason="acomms_core.nodes.tdma_node not on this branch")

CONFIG = pathlib.Path(__file__).resolve().parents[1] / "config"


def wait(predicate, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return predicate()


def change_state(runner, node, transition):
    response = runner.call(ChangeState, f"{node}/change_state",
                           ChangeState.Request(transition=Transition(id=transition)))
    assert response is not None and response.success, (node, transition)


@needs_tdma
def test_two_vehicles_come_up_carry_messages_and_keep_queues_over_deactivate():
    scenario = load_scenario(CONFIG / "two_vehicles.yaml")
    scenario = dataclasses.replace(scenario, clock=dataclasses.replace(scenario.clock,
                                                                       warp_factor=20.0))
    runner = Runner(scenario, stream=io.StringIO(), progress=False)
    try:
        runner.start()
        states = runner.node_states()
        expected = {f"/{v}/{n}" for v in ("alpha", "bravo")
                    for n in ("modem_sim_node", "message_queue_node", "packet_dispatch_node",
                              "tdma_node")}
        expected |= {"/platform_location_node", "/sim_transmission_loss_node",
                     "/sim_packet_performance_node", "/sim_clock_node"}
        assert set(states) == expected
        assert all(state == "active" for state in states.values()), states

        arrived = []
        recorder = runner.recorder
        recorder.create_subscription(String, "/alpha/from_acomms/command",
                                     lambda m: arrived.append(m.data), 10)
        publisher = recorder.create_publisher(String, "/bravo/to_acomms/command", 10)
        assert wait(lambda: publisher.get_subscription_count() > 0, 5.0)
        publisher.publish(String(data="first"))
        # bravo's slot comes once per 30 simulated s (1.5 wall s at warp 20)
        assert wait(lambda: arrived == ["first"], 20.0), arrived

        # MAC stopped: messages wait in bravo's queue; the queue node goes down and up again.
        change_state(runner, "/bravo/tdma_node", Transition.TRANSITION_DEACTIVATE)
        for text in ("second", "third"):
            publisher.publish(String(data=text))
        counters = []
        recorder.create_subscription(QueueCounters, "/bravo/queue_counters", counters.append, 10)
        assert wait(lambda: counters and counters[-1].messages_queued == 3, 10.0)
        assert counters[-1].messages_sent == 1
        change_state(runner, "/bravo/message_queue_node", Transition.TRANSITION_DEACTIVATE)
        change_state(runner, "/bravo/message_queue_node", Transition.TRANSITION_ACTIVATE)
        time.sleep(1.0)  # 20 simulated s: bravo's slot passes with the MAC inactive
        assert arrived == ["first"]
        change_state(runner, "/bravo/tdma_node", Transition.TRANSITION_ACTIVATE)
        assert wait(lambda: arrived == ["first", "second", "third"], 20.0), arrived
        assert all(state == "active" for state in runner.node_states().values())
    finally:
        problems = runner.stop()
    assert problems == []
    summary = runner.summary()
    links = {(r["source"], r["receiver"]): r for r in summary["links"]}
    assert links[("bravo", "alpha")]["received"] >= 2
    assert links[("bravo", "alpha")]["mean_snr_db"] > 0


@needs_tdma
def test_demo_runs_and_reports_delivered_messages(tmp_path, capsys):
    out = tmp_path / "out"
    status = cli.main([str(CONFIG / "demo.yaml"), "--duration", "90", "--warp", "20",
                                 "--out", str(out)])
    printed = capsys.readouterr()
    assert status == 0, printed.err
    assert "90/90 simulated s" in printed.out  # progress lines (no TTY: plain lines)
    assert "Messages" in printed.out and "Links" in printed.out
    summary = json.loads((out / "summary.json").read_text())
    assert summary["simulated_seconds"] >= 90
    topics = {(r["topic"], r["destination"]): r for r in summary["topics"]}
    nav = topics[("to_acomms/nav_status", "topside")]
    assert nav["sent"] >= 1 and nav["delivered"] >= 1 and nav["mean_latency_s"] > 0
    assert topics[("to_acomms/nav_status", "gateway")]["delivered"] >= 1
    assert topics[("to_acomms/command", "auv")]["delivered"] >= 1
    assert summary["messages_delivered"] >= 3
    links = {(r["source"], r["receiver"]): r for r in summary["links"]}
    assert links[("auv", "topside")]["sent"] >= 1 and links[("auv", "topside")]["received"] >= 1
    rows = list(csv.DictReader((out / "timeline.csv").open()))
    assert {r["kind"] for r in rows} == {"tx", "rx"}
    assert {r["vehicle"] for r in rows} == {"auv", "gateway", "topside"}
    assert len(json.loads((out / "timeline.json").read_text())["events"]) == len(rows)
    assert (out / "timeline.png").read_bytes()[:4] == b"\x89PNG"
    assert list(csv.DictReader((out / "messages.csv").open()))
    assert (out / "run.mcap").read_bytes()[:8] == b"\x89MCAP0\r\n"  # recorded by default
    assert (out / "map.png").read_bytes()[:4] == b"\x89PNG"
    for row in csv.DictReader((out / "accounting.csv").open()):
        fates = {k: int(v) for k, v in row.items() if k not in ("topic", "source",
                                                                "destination", "sent")}
        assert sum(fates.values()) == int(row["sent"]) and fates["unknown"] == 0, row
    assert f"Wrote {out}/" in printed.out
    last = printed.out.strip().splitlines()[-1]  # how long the end took, by phase
    assert re.fullmatch(r"acomms_run: the end of the run took [\d.]+ s \(release_clocks "
                        r"[\d.]+, mcap [\d.]+, stop_traffic [\d.]+, hand_back [\d.]+, "
                        r"lifecycle [\d.]+, .*context [\d.]+, destroy [\d.]+, "
                        r"summary [\d.]+, outputs [\d.]+\)", last), last


def bad_scenario(tmp_path, edit):
    data = yaml.safe_load((CONFIG / "two_vehicles.yaml").read_text())
    for vehicle in data["vehicles"]:
        vehicle["codec_config"] = str(CONFIG / "demo_codecs.yaml")
    edit(data)
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.mark.parametrize("edit, key, words", [
    (lambda d: d["vehicles"][1]["modem"].update(kind="sonar"), "vehicles[1].modem.kind",
     "unknown value 'sonar'"),
    (lambda d: d["vehicles"][1].update(src=1), "vehicles[1].src", "duplicate SRC 1"),
    (lambda d: d["vehicles"][0].update(codec_config="missing.yaml"),
     "vehicles[0].codec_config", "not found"),
    (lambda d: d["vehicles"][0].update(traffic=[{"topic": "to_acomms/command",
                                                 "period_seconds": 5,
                                                 "fields": {"dat": "x"}}]),
     "vehicles[0].traffic[0].fields.dat", "no field 'dat'"),
])
def test_bad_scenarios_stop_with_one_message(tmp_path, capsys, edit, key, words):
    path = bad_scenario(tmp_path, edit)
    assert cli.main([str(path), "--out", str(tmp_path / "out")]) == 1
    printed = capsys.readouterr()
    lines = printed.err.strip().splitlines()
    assert len(lines) == 1, printed.err
    assert lines[0].startswith("acomms_run: ") and f"{path}: {key}" in lines[0]
    assert lines[0].count(str(path)) == 1, lines[0]  # the file is named once
    assert words in lines[0]
    assert not (tmp_path / "out").exists()


@needs_tdma
@pytest.mark.parametrize("lean", [False, True])  # lean nodes: no /rosout, their logger tells
def test_a_node_that_cannot_configure_is_named(tmp_path, capsys, lean):
    path = bad_scenario(tmp_path, lambda d: d["vehicles"][1].update(parameters={
        "message_queue_node": {"codec_config_file": str(tmp_path / "gone.yaml")}}))
    with pytest.raises(RunError) as info:
        runner = Runner(load_scenario(path), stream=io.StringIO(), progress=False, lean=lean)
        try:
            runner.start()
        finally:
            runner.stop()
    message = str(info.value)
    assert message.startswith("group bravo: startup failed: /bravo/message_queue_node: configure")
    assert "gone.yaml" in message  # the node's own reason, from its log
    assert "rolled back" in message


def test_warp_needs_simulated_time(tmp_path, capsys):
    path = bad_scenario(tmp_path, lambda d: d.update(clock={"use_sim_time": False}))
    assert cli.main([str(path), "--warp", "5", "--out", str(tmp_path / "out")]) == 1
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line == (f"acomms_run: {path}: clock.use_sim_time: --warp needs simulated time "
                    "(this scenario runs in wall-clock time)")


def test_console_script_reports_without_traceback(tmp_path):
    path = bad_scenario(tmp_path, lambda d: d["vehicles"][1].update(src=1))
    result = subprocess.run(["acomms_run", str(path)], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert f"{path}: vehicles[1].src: duplicate SRC 1" in result.stderr
