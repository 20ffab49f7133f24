"""A scenario starts file_transfer_node per vehicle (`file_transfer:`), its parameters checked
against the node's own ParameterSpec table; the shipped example does (issue 26)."""

from __future__ import annotations

import pathlib

from test_bringup_scenario import base_scenario, error_for, write

from acomms_bringup.description.scenario import load_scenario
from acomms_bringup.description.stack import describe_stack, describe_vehicle

CONFIG = pathlib.Path(__file__).resolve().parents[1] / "config"


def with_file_transfer(section):
    data = base_scenario()
    data["vehicles"][1]["file_transfer"] = section
    return data


def test_file_transfer_node_is_started_last_with_its_parameters(tmp_path):
    scenario = load_scenario(write(tmp_path, with_file_transfer(
        {"receive_directory": "inbox", "max_file_bytes": 2000, "overwrite": True})))
    group = describe_vehicle(scenario, "b")
    node = group.nodes[-1]
    assert (node.name, node.namespace, node.executable) == ("file_transfer_node", "/b",
                                                            "file_transfer_node")
    assert node.parameters == {"use_sim_time": True, "receive_directory": "inbox",
                               "max_file_bytes": 2000, "overwrite": True}
    assert node.load_class().__name__ == "FileTransferNode"
    assert group.manager.parameters["node_names"][-1] == "/b/file_transfer_node"
    assert "file_transfer_node" not in [n.name for n in describe_vehicle(scenario, "a").nodes]


def test_unknown_keys_and_bad_values_are_refused(tmp_path):
    error = error_for(tmp_path, with_file_transfer({"receive_dir": "inbox"}))
    assert error.key_path == "vehicles[1].file_transfer.receive_dir"
    assert ("unknown parameter of file_transfer_node (did you mean 'receive_directory'?); "
            "valid: ") in str(error)
    assert "receive_directory" in str(error)
    error = error_for(tmp_path, with_file_transfer({"max_file_bytes": 0}))
    assert error.key_path == "vehicles[1].file_transfer.max_file_bytes"
    assert "below the minimum 1" in str(error)
    error = error_for(tmp_path, with_file_transfer(["inbox"]))
    assert error.key_path == "vehicles[1].file_transfer" and "expected a mapping" in str(error)


def test_shipped_example_sends_from_the_ship_and_receives_on_the_auv():
    stack = describe_stack(load_scenario(CONFIG / "file_transfer.yaml"))
    ship = stack.group("ship").node("file_transfer_node")
    auv = stack.group("auv").node("file_transfer_node")
    assert ship.parameters == {"use_sim_time": True}
    assert auv.parameters == {"use_sim_time": True, "receive_directory": "received_files"}
    scenario = load_scenario(CONFIG / "file_transfer.yaml")       # as README says
    assert (scenario.duration_seconds, scenario.clock.warp_factor) == (1800, 10.0)
    assert [(v.name, v.src) for v in scenario.vehicles] == [("ship", 1), ("auv", 2)]
