"""A ros_acomms TDMA parameter file used as given (issue 27 item 3): read without ROS into our
parameter values (renames and unsupported names noted, ROS 1's loose types converted), and by
the TDMA nodes through `ros_acomms_params_file`; a ros_acomms name given at start-up is read
through rclpy's public parameter API."""

from __future__ import annotations

import pathlib

import pytest
from rcl_interfaces.msg import Log
from rclpy.parameter import Parameter

from acomms_core.mac.registry import MAC_KINDS
from acomms_core.nodes.tdma_advanced_node import TdmaAdvancedNode
from acomms_core.nodes.tdma_node import TdmaNode
from acomms_core.ros.testing import RosHarness
from acomms_core.ros_acomms_params import params_from_mapping, read_params_file

ROOT = pathlib.Path(__file__).resolve().parents[2]
TDMA_FILE = ROOT / "acomms_bringup" / "config" / "ros_acomms_tdma.yaml"
ADVANCED = MAC_KINDS["tdma_advanced"].parameters


def test_the_shipped_file_reads_as_our_parameters_with_notes():
    values, notes = read_params_file(str(TDMA_FILE), ADVANCED)
    assert values["slot_duration_seconds"] == 15.0 and isinstance(
        values["slot_duration_seconds"], float)
    assert values["guard_time_seconds"] == 2.0 and values["packet_length_seconds"] == 5.0
    assert values["num_slots"] == 4 and values["active_slots"] == "0,2"
    assert values["service_timeout_seconds"] == 10.0
    assert "wait_for_services_timeout_sec" not in values
    assert "publish_private_status" not in values
    assert any("'wait_for_services_timeout_sec' is the ros_acomms name; read as "
               "'service_timeout_seconds'" in note for note in notes), notes
    assert any("'publish_private_status' (ros_acomms) is not supported here" in note
               for note in notes), notes
    assert MAC_KINDS["tdma_advanced"].check(values) is None  # the node's own validator


def test_loose_ros1_values_are_converted():
    values, _ = params_from_mapping(
        {"slot_tags": [{"slots": [0], "require_tags": ["nav"]}],
         "cycle_start_time": __import__("datetime").datetime(2024, 1, 1),
         "maximum_dataframe_bytes": None}, ADVANCED, "f.yaml")
    assert values == {"slot_tags": "[{require_tags: [nav], slots: [0]}]",
                      "cycle_start_time": "2024-01-01T00:00:00"}


@pytest.mark.parametrize("data, reason", [
    ({"num_slot": 4}, "unknown parameter 'num_slot' (did you mean 'num_slots'?)"),
    ({"tdma_advanced_node": {"ros__parameters": {"num_slots": 4}}},
     "ROS 2 parameters file: give it with --params-file"),
    ([1, 2], "a YAML mapping"),
])
def test_bad_files_are_refused_with_the_reason(data, reason):
    with pytest.raises(ValueError, match="f.yaml") as info:
        params_from_mapping(data, ADVANCED, "f.yaml")
    assert reason in str(info.value)


def test_a_missing_file_is_refused_naming_it(tmp_path):
    with pytest.raises(ValueError, match="ros_acomms_params_file .*nope.yaml"):
        read_params_file(str(tmp_path / "nope.yaml"), ADVANCED)


def _warnings(ros) -> list[str]:
    lines = []
    ros.helper.create_subscription(
        Log, "/rosout", lambda m: lines.append(m.msg) if m.level >= Log.WARN else None, 100)
    return lines


def test_the_tdma_advanced_node_reads_the_file_as_given_and_given_values_win():
    with RosHarness() as ros:
        warnings = _warnings(ros)
        node = ros.add(TdmaAdvancedNode(namespace="/rf1", context=ros.context,
                                        parameter_overrides=[
            Parameter("ros_acomms_params_file", value=str(TDMA_FILE)),
            Parameter("guard_time_seconds", value=3.0)]))
        parameter = node.get_parameter
        assert parameter("slot_duration_seconds").value == 15.0
        assert parameter("num_slots").value == 4 and parameter("active_slots").value == "0,2"
        assert parameter("comms_slots").value == "0,2" and parameter("ping_modem").value is False
        assert parameter("service_timeout_seconds").value == 10.0
        assert parameter("guard_time_seconds").value == 3.0  # given directly: wins
        assert ros.spin_until(lambda: len(warnings) >= 2, 5.0), warnings
        assert any("read as 'service_timeout_seconds'" in w for w in warnings), warnings
        assert any("publish_private_status" in w for w in warnings), warnings


def test_a_bad_file_refuses_the_node_with_the_reason(tmp_path):
    bad = tmp_path / "tdma.yaml"
    bad.write_text("num_slots: 4\nslot_duraton_seconds: 15\n")
    with RosHarness() as ros, pytest.raises(ValueError, match="did you mean "
                                            "'slot_duration_seconds'"):
        TdmaNode(namespace="/rf2", context=ros.context, parameter_overrides=[
            Parameter("ros_acomms_params_file", value=str(bad))])


def test_a_ros_acomms_name_at_start_up_is_read_without_private_rclpy_state():
    """The old name is found through declare/undeclare (public API), an integer converted for
    the double parameter, and the name does not stay declared."""
    with RosHarness() as ros:
        node = ros.add(TdmaNode(namespace="/rf3", context=ros.context, parameter_overrides=[
            Parameter("wait_for_services_timeout_sec", value=12)]))
        assert node.get_parameter("service_timeout_seconds").value == 12.0
        assert not node.has_parameter("wait_for_services_timeout_sec")
