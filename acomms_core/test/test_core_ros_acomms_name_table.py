"""acomms_core.ros_acomms_names: ros_acomms names read as ours (types, parameters, units) and a
ros_acomms message codec config (ros_acomms_msgs types) loading unchanged."""

from __future__ import annotations

import textwrap

import pytest

from acomms_core import ros_acomms_names as names
from acomms_core.codecs.config import CodecConfigError, load_codec_config
from acomms_core.codecs.ros_types import normalize_type_name, resolve_message_class
from acomms_interfaces.msg import CST
from acomms_interfaces.srv import PingTransponders

# A hand-made equivalent of ros_acomms' ros_acomms_tests/launch/message_codec_config.yaml: a
# ROS 1 service half and a message of ros_acomms_msgs, next to a std_msgs type.
ROS_ACOMMS_CODECS = textwrap.dedent("""\
    - codec_name: default
      match_src: []
      match_dest: []
      except_src: []
      except_dest: []
      packet_codec: ros
      miniframe_header: [0xac]
      dataframe_header: []
      remove_headers: true
      message_codecs:
        - id: 102
          message_codec: default
          subscribe_topic: "test_msg"
          publish_topic: "from_acomms/test_msg"
          ros_type: "std_msgs/UInt8"
          default_dest: 121
          queue_order: fifo
          queue_maxsize: 10
          priority: 50
          fields:
            data:
              codec: uint8
        - id: 103
          message_codec: default
          subscribe_topic: "command"
          publish_topic: "from_acomms/command"
          ros_type: "ros_acomms_msgs/PingTranspondersRequest"
          default_dest: 221
          queue_order: fifo
          queue_maxsize: 1
          priority: 100
          fields:
            transponder_dest_mask:
              codec: fixed_len_array
              element_type: bool
              length: 4
            timeout_sec:
              codec: float
              min_value: -1.0
              max_value: 100.0
              precision: 1
        - id: 104
          subscribe_topic: "cst"
          publish_topic: "from_acomms/cst"
          ros_type: "ros_acomms_msgs/CST"
          fields:
            src: {codec: uint8}
    """)


def test_ros_acomms_type_names_resolve_to_acomms_interfaces(caplog):
    assert names.interface_alias("ros_acomms_msgs/CST") == "acomms_interfaces/CST"
    assert names.interface_alias("ros_acomms_modeling/msg/SimPacket") == \
        "acomms_interfaces/msg/SimPacket"
    assert names.interface_alias("std_msgs/UInt8") is None
    with caplog.at_level("WARNING"):
        assert resolve_message_class("ros_acomms_msgs/CST") is CST
        assert resolve_message_class("ros_acomms_msgs/CST") is CST
        assert resolve_message_class("ros_acomms_msgs/PingTranspondersRequest") is \
            PingTransponders.Request
    noted = [r.getMessage() for r in caplog.records if "ros_acomms_msgs/CST" in r.getMessage()]
    assert len(noted) <= 1  # once per name (the first call may have come from another test)
    assert normalize_type_name("ros_acomms_msgs/CST") == "acomms_interfaces/msg/CST"
    with pytest.raises(ValueError, match="'ros_acomms_msgs/AcousticRange' has no counterpart in "
                                         "acomms_interfaces: acoustic ranges not supported"):
        resolve_message_class("ros_acomms_msgs/AcousticRange")


def test_the_ros_acomms_test_codec_config_loads(tmp_path):
    path = tmp_path / "message_codec_config.yaml"
    path.write_text(ROS_ACOMMS_CODECS)
    config = load_codec_config(str(path))
    by_id = {m.id: m for m in config.message_codecs}
    assert sorted(by_id) == [102, 103, 104]


def test_parameter_renames_come_from_the_table():
    renames = names.parameter_renames("tdma_node")
    assert renames == {"wait_for_services_timeout_sec": "service_timeout_seconds"}
    everything = names.parameter_renames()
    assert everything["query_interval_seconds"] == "query_interval_s"
    assert "publish_rate" not in everything  # 1/rate: a different value, not a rename
    assert "acquire_lock_max_attempts" in names.unsupported_parameters("message_queue_node")


def test_rename_parameters_notes_each_and_refuses_both():
    renames = {"wait_for_services_timeout_sec": "service_timeout_seconds"}
    out, notes = names.rename_parameters({"wait_for_services_timeout_sec": 5, "num_slots": 2},
                                         renames, "mac")
    assert out == {"service_timeout_seconds": 5, "num_slots": 2}
    assert notes == ["mac: 'wait_for_services_timeout_sec' is the ros_acomms name; read as "
                     "'service_timeout_seconds' (use 'service_timeout_seconds')"]
    with pytest.raises(ValueError, match="use 'service_timeout_seconds'"):
        names.rename_parameters({"wait_for_services_timeout_sec": 5,
                                 "service_timeout_seconds": 5}, renames, "mac")


def test_units_and_suggestions():
    assert names.unit_alias("sound_speed_m_s") == "sound_speed_mps"
    assert names.unit_alias("sound_speed_mps") is None
    assert names.did_you_mean("trajectroy", ["position", "trajectory"]) == \
        " (did you mean 'trajectory'?)"
    assert names.did_you_mean("zzz", ["position", "trajectory"]) == ""


def test_markdown_lists_every_section_once():
    text = names.markdown()
    assert text.count("## Interfaces") == 1
    for section in names.SECTIONS:
        if section.title != names.INTERFACES_TITLE:
            assert text.count(f"### {section.title}\n") == 1
        for kind, *_ in section.rows:
            assert kind in names.KINDS


def test_a_node_reads_a_ros_acomms_parameter_name_with_a_warning():
    from rclpy.parameter import Parameter

    from acomms_core.nodes.tdma_node import TdmaNode
    from acomms_core.ros.testing import RosHarness

    with RosHarness() as ros:
        node = ros.add(TdmaNode(namespace="/names", context=ros.context, parameter_overrides=[
            Parameter("wait_for_services_timeout_sec", value=12.0)]))
        assert node.get_parameter("service_timeout_seconds").value == 12.0
        both = ros.add(TdmaNode(namespace="/names2", context=ros.context, parameter_overrides=[
            Parameter("wait_for_services_timeout_sec", value=12.0),
            Parameter("service_timeout_seconds", value=3.0)]))
        assert both.get_parameter("service_timeout_seconds").value == 3.0


FRAGMENTATION_TEST_CODEC = textwrap.indent(textwrap.dedent("""\
    - id: 101
      message_codec: default
      subscribe_topic: "test_fragmentation_msg"
      publish_topic: "from_acomms/test_fragmentation_msg"
      ros_type: "ros_acomms_tests/FragmentationTestMsg"
      default_dest: 121
      fields:
        data: {codec: bytes, max_length: 2000}
        hashstr: {codec: string, max_length: 64}
    """), "    ")


def test_the_full_ros_acomms_test_config_names_the_package_and_what_to_do(tmp_path):
    """ros_acomms' test config also uses ros_acomms_tests/FragmentationTestMsg, which has no
    counterpart here: the one-line error names the package and says what to do."""
    path = tmp_path / "message_codec_config.yaml"
    path.write_text(ROS_ACOMMS_CODECS.replace("  message_codecs:\n",
                                              "  message_codecs:\n" + FRAGMENTATION_TEST_CODEC))
    with pytest.raises(CodecConfigError) as info:
        load_codec_config(str(path))
    message = str(info.value)
    assert "\n" not in message and "message codec id 101" in message, message
    assert "'ros_acomms_tests' is ros_acomms' own test package" in message, message
    assert "hint: build a ROS 2 interface package named ros_acomms_tests" in message, message
    assert names.missing_package_hint("std_msgs/UInt8") is None
    assert "ros_acomms_tests/FragmentationTestMsg" in names.markdown()
