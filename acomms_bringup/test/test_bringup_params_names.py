"""Every parameter a shipped or documented ROS 2 params file sets is one the node declares (its
ParameterSpec table): ROS silently ignores a misspelt name, vehicle.launch.py refuses it."""

import pathlib
import re

import pytest
import yaml

from acomms_bringup.description import vehicle_params
from acomms_bringup.description.vehicle_params import (
    ParamsFileError,
    check_parameter_names,
    describe_params_vehicle,
    params_vehicle_from_arguments,
    read_params_file,
    sections_of,
)
from acomms_core.mac.registry import MAC_KINDS

ROOT = pathlib.Path(__file__).resolve().parents[2]
VEHICLE_PARAMS = ROOT / "acomms_bringup" / "config" / "vehicle_params.yaml"
TDMA_PARAMS = ROOT / "acomms_core" / "config" / "tdma.yaml"
TDMA_EXECUTABLES = ["tdma_node", "tdma_advanced_node", "tdma_scripted_node"]


def docstring_example() -> str:
    """The params file shown in vehicle_params' docstring (indented block from `/**:`)."""
    text = vehicle_params.__doc__
    block = text[text.index("    /**:"):].split("\n\n")[0]
    return "\n".join(re.sub(r"\s+#.*", "", line[4:]) for line in block.splitlines())


def test_shipped_vehicle_params_declare_only_known_names():
    group = params_vehicle_from_arguments(str(VEHICLE_PARAMS), "/alpha")
    assert [n.name for n in group.nodes] == ["modem_sim_node", "message_queue_node",
                                             "packet_dispatch_node", "tdma_node"]


def test_documented_params_files_declare_only_known_names():
    group = describe_params_vehicle(sections_of(yaml.safe_load(docstring_example())), "/auv")
    assert group.node("tdma_node").parameters["num_slots"] == 2
    # docs/MIGRATING_FROM_ROS_ACOMMS.md: ros_acomms' searched-up parameters for a namespace
    migrating = (ROOT / "docs" / "MIGRATING_FROM_ROS_ACOMMS.md").read_text()
    assert "`/auv1/**: {ros__parameters: {packet_codec_file: ..., codec_directory: ...}}`" in (
        migrating)
    document = yaml.safe_load(VEHICLE_PARAMS.read_text())
    document["/auv1/**"] = {"ros__parameters": {"packet_codec_file": "c.yaml",
                                                "codec_directory": "/tmp"}}
    describe_params_vehicle(sections_of(document), "/auv1")
    # acomms_core/config/tdma.yaml: `/**` for any of the TDMA nodes
    check_parameter_names(read_params_file(TDMA_PARAMS), TDMA_EXECUTABLES, "/", str(TDMA_PARAMS))


@pytest.mark.parametrize("old, new, words", [
    ("guard_time_seconds", "guard_time_secs", "/**/tdma_node: guard_time_secs: unknown "
                                              "parameter of tdma_node (did you mean "
                                              "'guard_time_seconds'?); valid: active_slots"),
    ("    SRC: 1", "    SRC: 1.5", "/**/modem_sim_node: SRC: expected integer"),
    ("    src: 1", "    srcc: 1", "srcc: unknown parameter of message_queue_node"),
    ("use_sim_time: false", "use_sim_time: false\n    source_levle_db: 185.0",
     "/**: source_levle_db: unknown parameter of any node of the vehicle"),
])
def test_a_wrong_name_or_value_is_refused(tmp_path, old, new, words):
    text = VEHICLE_PARAMS.read_text()
    assert old in text
    path = tmp_path / "vehicle.yaml"
    path.write_text(text.replace(old, new, 1))
    with pytest.raises(ParamsFileError, match=str(path)) as error:
        params_vehicle_from_arguments(str(path), "/alpha")
    assert words in str(error.value)


def test_tdma_yaml_name_checked_too(tmp_path):
    path = tmp_path / "tdma.yaml"
    path.write_text(TDMA_PARAMS.read_text().replace("nav_slots", "nav_slot"))
    with pytest.raises(ParamsFileError, match="nav_slot: unknown parameter"):
        check_parameter_names(read_params_file(path), TDMA_EXECUTABLES, "/", str(path))


def test_generic_mac_node_takes_its_kinds_table():
    def vehicle(mac_parameters):
        document = yaml.safe_load(VEHICLE_PARAMS.read_text())
        del document["/**/tdma_node"]
        document["/**/mac_node"] = {"ros__parameters": mac_parameters}
        return describe_params_vehicle(sections_of(document, "v.yaml"), "/a", source="v.yaml")

    polled_only = sorted(spec.name for spec in MAC_KINDS["polled"].parameters
                         if spec.name not in {s.name for s in MAC_KINDS["tdma"].parameters})
    assert polled_only, "polled has no parameter of its own: pick another kind"
    vehicle({"mac_kind": "polled", polled_only[0]: MAC_KINDS["polled"].parameters[
        [s.name for s in MAC_KINDS["polled"].parameters].index(polled_only[0])].default})
    with pytest.raises(ParamsFileError, match=f"{polled_only[0]}: unknown parameter of mac_node"):
        vehicle({polled_only[0]: 1})  # mac_kind unset: tdma
    with pytest.raises(ParamsFileError, match="mac_kind 'nope': expected one of"):
        vehicle({"mac_kind": "nope"})
