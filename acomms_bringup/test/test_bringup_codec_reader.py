"""Issue 12, case 6: the scenario loader reads codec configs with the nodes' reader (includes,
duplicate keys), so a scenario accepts and refuses exactly the configs the nodes do."""

import pytest
import yaml
from test_bringup_scenario import base_scenario

from acomms_bringup.description.scenario import ScenarioError, load_scenario
from acomms_core.codecs import CodecConfigError, load_codec_config

HEAD = "- codec_name: t\n  packet_codec: ros\n  message_codecs: "


def _scenario(tmp_path, codecs_text: str):
    (tmp_path / "codecs.yaml").write_text(codecs_text)
    path = tmp_path / "scn.yaml"
    path.write_text(yaml.safe_dump(base_scenario()))
    return path


def test_a_codec_config_with_include_loads_in_a_scenario_as_in_the_nodes(tmp_path):
    (tmp_path / "messages.yaml").write_text(
        "- {id: 1, ros_type: std_msgs/UInt8, subscribe_topic: x, fields: {data: {codec: uint8}}}\n")
    path = _scenario(tmp_path, HEAD + "!include messages.yaml\n")
    assert load_codec_config(str(tmp_path / "codecs.yaml")).by_id()[1]
    scenario = load_scenario(path)
    assert scenario.vehicles[0].codec_config == (tmp_path / "codecs.yaml").resolve()


def test_a_scenario_refuses_what_the_node_reader_refuses(tmp_path):
    path = _scenario(tmp_path, HEAD + "[]\n  packet_codec: ros\n")
    with pytest.raises(CodecConfigError, match="duplicate key 'packet_codec'"):
        load_codec_config(str(tmp_path / "codecs.yaml"))
    with pytest.raises(ScenarioError, match="duplicate key 'packet_codec'"):
        load_scenario(path)
    path = _scenario(tmp_path, HEAD + "!include ../elsewhere.yaml\n")
    with pytest.raises(ScenarioError, match="not found|outside the config directory"):
        load_scenario(path)
