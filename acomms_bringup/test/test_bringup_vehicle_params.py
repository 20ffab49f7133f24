"""vehicle.launch.py's logic without launch: a ROS 2 parameters file → the vehicle's nodes."""

import pytest
import yaml

from acomms_bringup.description.vehicle_params import (
    ParamsFileError,
    describe_params_vehicle,
    fqn_matches,
    node_parameters,
    params_vehicle_from_arguments,
    sections_of,
)

VEHICLE = """
/**:
  ros__parameters: {use_sim_time: false, packet_length_seconds: 4.0}
/**/modem_sim_node:
  ros__parameters: {SRC: 3, location_source: service}
fleet:
  auv:
    message_queue_node:
      ros__parameters: {src: 3, codec_config_file: codecs.yaml}
/fleet/*/packet_dispatch_node:
  ros__parameters: {codec_config_file: codecs.yaml}
/other/packet_dispatch_node:
  ros__parameters: {codec_config_file: wrong.yaml}
tdma_advanced_node:
  ros__parameters: {num_slots: 3, packet_length_seconds: 6.0}
"""


def group_of(text, namespace="/fleet/auv", **kwargs):
    return describe_params_vehicle(sections_of(yaml.safe_load(text), "v.yaml"), namespace,
                                   source="v.yaml", **kwargs)


@pytest.mark.parametrize("pattern, fqn, matches", [
    ("/**", "/a/b/node", True), ("/**/node", "/node", True), ("/**/node", "/a/b/node", True),
    ("/*/node", "/a/node", True), ("/*/node", "/a/b/node", False), ("/a/node", "/a/node", True),
    ("/a/node", "/b/node", False), ("/a/*", "/a/x", True), ("/**/node", "/a/other", False)])
def test_rcl_wildcards(pattern, fqn, matches):
    assert fqn_matches(pattern, fqn) is matches


def test_sections_in_every_key_form_apply_in_file_order():
    sections = sections_of(yaml.safe_load(VEHICLE))
    assert [s.key for s in sections][2] == "fleet/auv/message_queue_node"  # nested form
    assert node_parameters(sections, "tdma_advanced_node", "/fleet/auv") == {
        "use_sim_time": False, "packet_length_seconds": 6.0, "num_slots": 3}
    assert node_parameters(sections, "packet_dispatch_node", "/fleet/auv") == {
        "use_sim_time": False, "packet_length_seconds": 4.0, "codec_config_file": "codecs.yaml"}
    assert node_parameters(sections, "packet_dispatch_node", "/other")["codec_config_file"] == (
        "wrong.yaml")


def test_the_group_in_dependency_order_with_relative_names():
    group = group_of(VEHICLE, use_sim_time=True, autostart=False)
    assert [n.name for n in group.nodes] == ["modem_sim_node", "message_queue_node",
                                             "packet_dispatch_node", "tdma_advanced_node"]
    assert {n.namespace for n in (*group.nodes, group.manager)} == {""}
    assert all(n.parameters["use_sim_time"] is True for n in (*group.nodes, group.manager))
    modem = group.node("modem_sim_node")
    assert modem.parameters["SRC"] == 3
    assert modem.remappings == (("read_location", "/read_location"),
                                ("sound_speed_profile", "/sound_speed_profile"))
    assert group.manager.parameters["node_names"] == [n.name for n in group.nodes]
    assert group.manager.parameters["autostart"] is False
    assert group.manager.parameters["retry_deadline_seconds"] > 60


def test_bridges_and_trajectory_join_in_order():
    text = VEHICLE + "/**/trajectory_node:\n  ros__parameters: {publish_rate_hz: 1.0}\n"
    text += "/**/wec_telemetry_bridge:\n  ros__parameters: {}\n"
    names = [n.name for n in group_of(text).nodes]
    assert names[0] == "trajectory_node" and names[-1] == "wec_telemetry_bridge"


@pytest.mark.parametrize("extra, words", [
    ("/**/modem_sim_nod:\n  ros__parameters: {}\n", "nodes acomms does not start: "
                                                    "['modem_sim_nod']"),
    ("/**/acomms_driver_node:\n  ros__parameters: {}\n", "more than one modem"),
    ("/**/tdma_node:\n  ros__parameters: {}\n", "more than one MAC"),
    ("/**/tdma_node: 5\n", "tdma_node: expected ros__parameters"),
])
def test_refusals_name_the_file_and_the_reason(extra, words):
    with pytest.raises(ParamsFileError, match="v.yaml: ") as error:
        group_of(VEHICLE + extra)
    assert words in str(error.value)


def test_a_vehicle_needs_a_modem_and_a_mac():
    with pytest.raises(ParamsFileError, match="needs a section for its modem"):
        group_of("/**/tdma_node:\n  ros__parameters: {}\n")
    with pytest.raises(ParamsFileError, match="expected a mapping"):
        sections_of([1, 2], "v.yaml")


def test_launch_arguments_as_strings(tmp_path):
    path = tmp_path / "vehicle.yaml"
    path.write_text(VEHICLE)
    group = params_vehicle_from_arguments(str(path), "/fleet/auv", "", "False")
    assert "use_sim_time" not in group.manager.parameters  # empty: as the file says
    assert group.node("modem_sim_node").parameters["use_sim_time"] is False
    assert group.manager.parameters["autostart"] is False
    with pytest.raises(ParamsFileError, match="autostart:='perhaps'"):
        params_vehicle_from_arguments(str(path), "/", "", "perhaps")
