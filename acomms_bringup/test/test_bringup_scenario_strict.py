"""Scenario strictness: per-node parameter overrides must name parameters the node declares.

The valid names come from the nodes' own ParameterSpec tables (scenario.NODE_PARAMETER_TABLES,
MAC_KINDS); the last test checks those tables against what the real node classes declare, so the
loader can neither refuse a real parameter nor accept one the node would ignore.
"""

import pytest
from test_bringup_scenario import base_scenario, error_for, write

from acomms_bringup.description.scenario import (
    MODEM_EXECUTABLES,
    NODE_PARAMETER_TABLES,
    ROS_NODE_PARAMETERS,
    load_scenario,
    node_parameter_specs,
)
from acomms_bringup.description.stack import NODE_TYPES
from acomms_core.ros.testing import RosHarness


def with_overrides(overrides):
    data = base_scenario()
    data["vehicles"][0]["parameters"] = overrides
    return data


def test_misspelt_override_is_refused_with_the_valid_names(tmp_path):
    error = error_for(tmp_path, with_overrides({"modem": {"source_levle_db": 180.0}}))
    assert error.key_path == "vehicles[0].parameters.modem.source_levle_db"
    message = str(error)
    assert "\n" not in message
    assert ("unknown parameter of modem_sim_node (did you mean 'source_level_db'?); "
            "valid: ") in message
    valid = message.split("valid: ")[1].split(", ")
    assert "source_level_db" in valid and "SRC" in valid and "use_sim_time" in valid
    assert sorted(valid, key=str.lower) == valid


@pytest.mark.parametrize("node_key, good, bad", [
    ("message_queue_node", "default_priority", "default_prio"),
    ("packet_dispatch_node", "codec_config_file", "codec_file"),
    ("mac", "guard_time_seconds", "guard_time"),
])
def test_every_node_key_checks_names(tmp_path, node_key, good, bad):
    value = 3 if node_key != "packet_dispatch_node" else "codecs.yaml"
    scenario = load_scenario(write(tmp_path, with_overrides({node_key: {good: value,
                                                                         "use_sim_time": True}})))
    assert scenario.vehicles[0].parameters[node_key][good] == value
    error = error_for(tmp_path, with_overrides({node_key: {bad: value}}))
    assert error.key_path.endswith(f".{node_key}.{bad}")
    assert good in str(error)


def test_override_values_are_checked_against_the_spec(tmp_path):
    error = error_for(tmp_path, with_overrides({"message_queue_node": {"default_priority": -4}}))
    assert error.key_path == "vehicles[0].parameters.message_queue_node.default_priority"
    assert "below the minimum 0" in str(error)
    error = error_for(tmp_path, with_overrides({"modem": {"tx_level": "loud"}}))
    assert "expected integer" in str(error)


def test_micromodem_overrides_use_the_driver_table():
    sim = node_parameter_specs("modem", "sim", "tdma")
    driver = node_parameter_specs("modem", "micromodem", "tdma")
    assert "modem_serial_port" in driver and "modem_serial_port" not in sim
    assert "seed" in sim


# rclpy declares these on every node; a lifecycle node's own extras are listed per executable.
RCLPY_PARAMETERS = {"use_sim_time", "start_type_description_service"}


@pytest.mark.parametrize("executable", sorted(NODE_PARAMETER_TABLES))
def test_tables_match_what_the_node_declares(executable):
    """The table the loader reads is exactly what the node class declares at construction."""
    module_name, _, class_name = NODE_TYPES[executable][1].partition(":")
    node_class = getattr(__import__(module_name, fromlist=[class_name]), class_name)
    modem_kind = {v: k for k, v in MODEM_EXECUTABLES.items()}.get(executable)
    node_key = "modem" if modem_kind else executable
    specs = node_parameter_specs(node_key, modem_kind or "sim", "tdma")
    with RosHarness() as ros:
        node = ros.add(node_class(context=ros.context, namespace="/strict"))
        declared = set(node._parameters)
    assert set(ROS_NODE_PARAMETERS) <= RCLPY_PARAMETERS
    assert declared - RCLPY_PARAMETERS == set(specs)
