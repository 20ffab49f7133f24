"""Scenario and vehicle params names (issue 27): ros_acomms parameter names and `_m_s` units
read as ours with a note, unknown keys named with a "did you mean", slot_tags as a YAML list or
a file next to the scenario."""

from __future__ import annotations

import logging

import pytest
import yaml

from acomms_bringup.description.scenario import ScenarioError, load_scenario
from acomms_bringup.description.vehicle_params import (
    ParamsFileError,
    describe_params_vehicle,
    sections_of,
)

CODECS = "- codec_name: t\n  packet_codec: ros\n  message_codecs: []\n"
SLOT_TAGS = [{"slots": "0", "require_tags": ["chat"]},
             {"slots": "1", "minimum_priority": 50, "exclude_tags": ["low"]}]


def vehicle(name, src, active_slots, **mac):
    return {"name": name, "src": src, "modem": {"kind": "sim"},
            "position": {"latitude": 41.5, "longitude": -70.6, "depth": 10},
            "mac": {"kind": "tdma", "num_slots": 2, "active_slots": active_slots,
                    "slot_duration_seconds": 15.0, "guard_time_seconds": 2,
                    "packet_length_seconds": 5, **mac},
            "codec_config": "codecs.yaml"}


def scenario(**first_mac):
    return {"duration_seconds": 60, "vehicles": [vehicle("a", 1, 0, **first_mac),
                                                 vehicle("b", 2, 1)]}


def load(tmp_path, data, subdir="."):
    folder = tmp_path / subdir
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "codecs.yaml").write_text(CODECS)
    path = folder / "scn.yaml"
    path.write_text(yaml.safe_dump(data))
    return load_scenario(path)


def error(tmp_path, data) -> str:
    with pytest.raises(ScenarioError) as info:
        load(tmp_path, data)
    return str(info.value)


def test_ros_acomms_mac_parameter_is_read_with_a_note(tmp_path):
    loaded = load(tmp_path, scenario(wait_for_services_timeout_sec=7.0))
    assert loaded.vehicles[0].mac.parameters["service_timeout_seconds"] == 7.0
    assert any("'wait_for_services_timeout_sec' is the ros_acomms name" in w
               for w in loaded.warnings), loaded.warnings
    both = error(tmp_path, scenario(wait_for_services_timeout_sec=7.0,
                                    service_timeout_seconds=7.0))
    assert "use 'service_timeout_seconds'" in both


def test_ros_acomms_node_override_is_read_with_a_note(tmp_path):
    data = scenario()
    data["vehicles"][0]["parameters"] = {"mac": {"wait_for_services_timeout_sec": 3.0}}
    loaded = load(tmp_path, data)
    assert loaded.vehicles[0].parameters["mac"] == {"service_timeout_seconds": 3.0}
    assert any("read as 'service_timeout_seconds'" in w for w in loaded.warnings)


def test_m_s_units_are_read_as_mps_with_a_note(tmp_path):
    data = scenario()
    data["channel"] = {"sound_speed_m_s": 1490.0, "noise": {"model": "wenz", "wind_speed_m_s": 7.0}}
    loaded = load(tmp_path, data)
    assert loaded.channel.sound_speed_mps == 1490.0
    assert loaded.channel.noise.wind_speed_mps == 7.0
    assert any("'sound_speed_m_s'" in w and "'sound_speed_mps'" in w for w in loaded.warnings)
    data["channel"] = {"sound_speed_m_s": 1490.0, "sound_speed_mps": 1490.0}
    assert "use 'sound_speed_mps'" in error(tmp_path, data)


def test_a_misspelt_key_is_named_with_a_suggestion(tmp_path):
    data = scenario()
    data["vehicles"][0]["trajectroy"] = data["vehicles"][0].pop("position")
    message = error(tmp_path, data)
    assert "vehicles[0].trajectroy: unknown key (did you mean 'trajectory'?)" in message
    data = scenario()
    data["channel"] = {"sound_sped_mps": 1490.0}
    message = error(tmp_path, data)
    assert "channel.sound_sped_mps: unknown key (did you mean 'sound_speed_mps'?)" in message
    data = scenario()
    data["vehicles"][0]["parameters"] = {"mac": {"num_slot": 3}}
    assert "(did you mean 'num_slots'?)" in error(tmp_path, data)


def test_slot_tags_as_a_yaml_list(tmp_path):
    loaded = load(tmp_path, scenario(slot_tags=SLOT_TAGS))
    assert yaml.safe_load(loaded.vehicles[0].mac.parameters["slot_tags"]) == SLOT_TAGS


def test_slot_tags_file_is_relative_to_the_scenario(tmp_path, monkeypatch):
    folder = tmp_path / "scenarios"
    folder.mkdir()
    (folder / "tags.yaml").write_text(yaml.safe_dump({"slot_tags": SLOT_TAGS}))
    monkeypatch.chdir(tmp_path)  # not the scenario's directory
    loaded = load(tmp_path, scenario(slot_tags="tags.yaml"), subdir="scenarios")
    assert loaded.vehicles[0].mac.parameters["slot_tags"] == str(folder / "tags.yaml")
    with pytest.raises(ScenarioError) as info:
        load(tmp_path, scenario(slot_tags="missing.yaml"), subdir="scenarios")
    message = str(info.value)
    assert message.count("missing.yaml") == 1, message
    assert "vehicles[0].mac.slot_tags: file" in message


ROS_ACOMMS_TDMA = """
/**/modem_sim_node:
  ros__parameters: {SRC: 3}
/**/message_queue_node:
  ros__parameters: {src: 3, codec_config_file: codecs.yaml}
/**/packet_dispatch_node:
  ros__parameters: {codec_config_file: codecs.yaml}
/**/tdma_node:
  ros__parameters:
    num_slots: 4
    active_slots: "0,2"
    slot_duration_seconds: 12
    guard_time_seconds: 2
    packet_length_seconds: 5
    wait_for_services_timeout_sec: 20.0
"""


def test_a_ros_acomms_tdma_params_file_is_read_with_notes(caplog):
    with caplog.at_level(logging.WARNING, logger="acomms.vehicle_params"):
        group = describe_params_vehicle(sections_of(yaml.safe_load(ROS_ACOMMS_TDMA), "t.yaml"),
                                        "/auv", source="t.yaml")
    tdma = next(n for n in group.nodes if n.name == "tdma_node")
    assert tdma.parameters["service_timeout_seconds"] == 20.0
    assert "wait_for_services_timeout_sec" not in tdma.parameters
    assert any("wait_for_services_timeout_sec" in r.getMessage() for r in caplog.records)
    misspelt = ROS_ACOMMS_TDMA.replace("num_slots", "num_slot")
    with pytest.raises(ParamsFileError, match="did you mean 'num_slots'"):
        describe_params_vehicle(sections_of(yaml.safe_load(misspelt), "t.yaml"), "/auv",
                                source="t.yaml")


TRAFFIC_CODECS = """\
- codec_name: t
  packet_codec: ros
  message_codecs:
    - id: 1
      subscribe_topic: to_acomms/x
      publish_topic: from_acomms/x
      ros_type: std_msgs/UInt8
      fields: {data: {codec: uint8}}
"""


@pytest.mark.parametrize("fields, words", [
    ({"dat": 3}, "traffic[0].fields.dat: UInt8 has no field 'dat' (did you mean 'data'?)"),
    ({"data": "three"}, "traffic[0].fields.data: 'three' does not fit uint8"),
])
def test_check_scenario_checks_traffic_fields(tmp_path, capsys, fields, words):
    from acomms_bringup.description.stack import main

    data = scenario()
    data["vehicles"][0]["traffic"] = [{"topic": "to_acomms/x", "period_seconds": 10.0,
                                       "fields": fields}]
    (tmp_path / "codecs.yaml").write_text(TRAFFIC_CODECS)
    path = tmp_path / "scn.yaml"
    path.write_text(yaml.safe_dump(data))
    assert main([str(path), "--quiet"]) == 1
    err = capsys.readouterr().err
    assert words in err and err.count("\n") == 1, err
    data["vehicles"][0]["traffic"][0]["fields"] = {"data": 3}
    path.write_text(yaml.safe_dump(data))
    assert main([str(path), "--quiet"]) == 0
