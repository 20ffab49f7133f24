"""Bridges in scenarios (ROS-free): `vehicles[i].bridges` starts registry nodes after the MAC,
refuses unknown or repeated kinds with the key path, and the summary prints what they counted."""

import pathlib

import pytest

from acomms_bringup.bridges.registry import BRIDGES
from acomms_bringup.description.scenario import ScenarioError, load_scenario
from acomms_bringup.description.stack import describe_stack
from acomms_bringup.run import report

CONFIG = pathlib.Path(__file__).resolve().parents[1] / "config"


def test_demo_bridges_start_after_the_mac_with_their_parameters():
    stack = describe_stack(load_scenario(CONFIG / "wec_buoy_demo.yaml"))
    buoy = [n.executable for n in stack.group("buoy").nodes]
    assert buoy[-4:] == ["tdma_node", "wec_standin_buoy", "wec_telemetry_bridge",
                         "remote_service_server"]
    operator = stack.group("topside").node("wec_standin_operator")
    assert operator.parameters["pump_after_start_s"] == 100.0
    assert operator.parameters["use_sim_time"]
    # the run's start on the node clock: the scenario's clock.start_time (2025-01-01T00:00:00Z)
    assert operator.parameters["start_time_seconds"] == 1735689600.0
    assert operator.plugin == BRIDGES["wec_standin_operator"].plugin
    assert stack.group("topside").manager.parameters["node_names"][-1] == \
        "/topside/wec_standin_operator"


def _with_bridges(tmp_path, bridges):
    text = (CONFIG / "wec_buoy_demo.yaml").read_text()
    text = text.replace("      - remote_service_server\n", f"      - {bridges}\n", 1)
    path = tmp_path / "s.yaml"
    path.write_text(text)
    (tmp_path / "wec_buoy_codecs.yaml").write_text((CONFIG / "wec_buoy_codecs.yaml").read_text())
    return path


@pytest.mark.parametrize("entry,problem", [
    ("no_such_bridge", "vehicles[0].bridges[2].kind"),
    ("wec_standin_buoy", "bridge wec_standin_buoy listed twice"),
    ("{kind: remote_service_server, parameters: {x: {a: 1}}}", "bridges[2].parameters.x"),
])
def test_bad_bridges_are_refused_naming_the_key(tmp_path, entry, problem):
    with pytest.raises(ScenarioError, match=problem.replace("[", r"\[").replace("]", r"\]")):
        load_scenario(_with_bridges(tmp_path, entry))


def test_summary_prints_bridge_counts():
    record = report.RunRecord(scenario="s", vehicles={"a": 1}, duration_s=1, warp_factor=1)
    record.bridges = {"/b/op": {"received": {"powerbuoy_data": 3}, "pump": {}, "result": 0}}
    summary = report.summarize(record)
    assert summary["bridges"]["/b/op"]["received"]["powerbuoy_data"] == 3
    text = report.format_summary(summary)
    lines = text.splitlines()
    assert lines[-3].split() == ["bridge", "node", "counter", "value"]
    assert [line.split() for line in lines[-2:]] == [["/b/op", "received.powerbuoy_data", "3"],
                                                     ["/b/op", "result", "0"]]
