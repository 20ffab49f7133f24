"""Lean simulated nodes (issue 30 item 2): `acomms_run --lean` / scenario `runtime: {lean: true}`.

- the same deterministic run with and without --lean writes the same summary.json and
  messages.csv (wall-time fields aside), with fewer DDS endpoints;
- in lean mode a MAC's parameter is still set (and refused) through its parameter service, while
  the other nodes' parameter, lifecycle and type-description services are absent from the graph;
  the managers still bring the groups up and down (in-process, without the lifecycle services);
- `lean_options` and the scenario key.
"""

import io
import pathlib
import re
import time

import pytest
import yaml
from rcl_interfaces.msg import Parameter as ParameterMsg
from rcl_interfaces.msg import ParameterType, ParameterValue
from rcl_interfaces.srv import SetParameters
from rclpy.lifecycle import LifecycleNode
from test_bringup_deterministic_clock import outputs  # summary + messages.csv, wall times out

from acomms_bringup.description.scenario import ScenarioError, load_scenario, parse_scenario
from acomms_bringup.nodes.lifecycle_manager import LifecycleManager
from acomms_bringup.run import cli
from acomms_bringup.run.compose import lean_options
from acomms_bringup.run.runner import Runner
from acomms_core.nodes.message_queue_node import MessageQueueNode
from acomms_core.nodes.tdma_node import TdmaNode
from acomms_core.ros.domain_locks import private_domain

CONFIG = pathlib.Path(__file__).resolve().parents[1] / "config"
ENDPOINTS = re.compile(r"all nodes active in .*\((\d+) DDS endpoints, (\d+) per vehicle(, lean)?\)")


def test_lean_run_gives_the_same_outputs_with_fewer_endpoints(tmp_path, capsys, monkeypatch):
    # Endpoints are counted from the ROS graph by node name: each run in a domain of its own, so
    # nodes of the same names that an earlier run of this process left in the graph (its
    # participant goes only when its Context is collected) are not counted instead
    results, endpoints = [], []
    for mode, extra in (("lean", ["--lean"]), ("default", [])):
        monkeypatch.setenv("ROS_DOMAIN_ID", str(private_domain()))
        out = tmp_path / mode
        assert cli.main([str(CONFIG / "demo.yaml"), "--duration", "25", "--warp", "max",
                         "--no-mcap", "--out", str(out), *extra]) == 0
        results.append(outputs(out))
        found = ENDPOINTS.search(capsys.readouterr().out)
        assert found is not None
        assert bool(found[3]) == (mode == "lean")
        endpoints.append(int(found[1]))
    summary, messages = results[1]
    assert summary["messages_delivered"] >= 1 and messages
    assert results[0] == results[1]
    # each node drops 12 services (24 endpoints) and the transition_event publisher; a MAC 6
    # services fewer
    assert endpoints[0] < endpoints[1] * 0.6, endpoints


def set_parameter(runner, node: str, name: str, value: float):
    request = SetParameters.Request(parameters=[ParameterMsg(name=name, value=ParameterValue(
        type=ParameterType.PARAMETER_DOUBLE, double_value=value))])
    response = runner.call(SetParameters, f"{node}/set_parameters", request)
    assert response is not None, f"{node}/set_parameters did not answer"
    return response.results[0]


def two_vehicles(**changes) -> dict:
    """two_vehicles.yaml as data, its codec file named absolutely, with `changes`."""
    data = yaml.safe_load((CONFIG / "two_vehicles.yaml").read_text())
    for vehicle in data["vehicles"]:
        vehicle["codec_config"] = str(CONFIG / "demo_codecs.yaml")
    return {**data, **changes}


def lean_scenario(tmp_path: pathlib.Path):
    data = two_vehicles(runtime={"lean": True})
    path = tmp_path / "lean.yaml"
    path.write_text(yaml.safe_dump(data))
    return load_scenario(path)


def test_lean_mac_parameters_stay_settable_other_services_are_gone(tmp_path, monkeypatch):
    # The graph is read by name: a domain of its own, so same-named nodes of earlier runs in
    # this worker's domain (default mode: with their services) are not seen instead
    monkeypatch.setenv("ROS_DOMAIN_ID", str(private_domain()))
    scenario = lean_scenario(tmp_path)
    assert scenario.lean
    runner = Runner(scenario, stream=io.StringIO(), progress=False)
    try:
        runner.start()
        assert runner.lean and set(runner.node_states().values()) == {"active"}
        services = {name for name, _ in runner.recorder.get_service_names_and_types()}
        mac, queue = "/alpha/tdma_node", "/alpha/message_queue_node"
        assert f"{mac}/set_parameters" in services and f"{mac}/get_parameters" in services
        for gone in (f"{queue}/set_parameters", f"{queue}/get_parameters",
                     f"{queue}/change_state", f"{queue}/get_state",
                     f"{queue}/get_type_description", f"{mac}/change_state",
                     f"{mac}/get_type_description"):
            assert gone not in services, gone
        assert "/alpha/lifecycle_manager/shutdown" in services  # the managers keep theirs
        assert "/alpha/lifecycle_manager/restart" not in services  # but restart
        topics = {t for t, _ in runner.recorder.get_publisher_names_and_types_by_node(
            "message_queue_node", "/alpha")}
        assert "/rosout" not in topics and "/alpha/queue_status" in topics
        by_node = runner.recorder.get_publisher_names_and_types_by_node
        assert "/parameter_events" in {t for t, _ in by_node("tdma_node", "/alpha")}
        assert "/parameter_events" not in {t for t, _ in by_node("message_queue_node", "/alpha")}
        assert runner.nodes[queue]._parameter_event_publisher is None

        node = runner.nodes[mac]
        assert node.get_parameter("guard_time_seconds").value == 2.0
        assert set_parameter(runner, mac, "guard_time_seconds", 3.0).successful
        deadline = time.monotonic() + 5.0
        while node.get_parameter("guard_time_seconds").value != 3.0:
            assert time.monotonic() < deadline
            time.sleep(0.02)
        refused = set_parameter(runner, mac, "guard_time_seconds", 1e6)  # out of range
        assert not refused.successful and refused.reason
        assert node.get_parameter("guard_time_seconds").value == 3.0
    finally:
        problems = runner.stop()
    assert problems == []  # the managers brought every group down in-process


def test_lean_options_per_node_class():
    assert lean_options(TdmaNode) == {"start_parameter_services": True, "enable_rosout": False,
                                      "enable_communication_interface": False}
    assert lean_options(MessageQueueNode) == {"start_parameter_services": False,
                                              "enable_rosout": False,
                                              "enable_communication_interface": False,
                                              "parameter_events": False}
    assert issubclass(MessageQueueNode, LifecycleNode)
    assert lean_options(LifecycleManager) == {"start_parameter_services": False,
                                              "enable_rosout": False, "restart_service": False,
                                              "parameter_events": False}


def test_runtime_key_is_checked():
    base = two_vehicles()
    assert not parse_scenario(base).lean
    assert parse_scenario({**base, "runtime": {"lean": True}}).lean
    with pytest.raises(ScenarioError, match="runtime.leen"):
        parse_scenario({**base, "runtime": {"leen": True}})
    with pytest.raises(ScenarioError, match="runtime.lean"):
        parse_scenario({**base, "runtime": {"lean": "yes"}})
