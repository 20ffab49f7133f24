"""The packet-codec seam: protocol, registry, custom codecs by path / module name, end to end.

A second codec (`tiny`, core_tiny_packet_codec.py: 4-bit ids, its own header) is loaded from the
codec YAML and from the nodes' custom_packet_codec_paths parameter, then carried through the
ROS-free queue + decode and through message_queue_node -> packet_dispatch_node.
"""

from __future__ import annotations

import pathlib
import textwrap

import pytest
from core_ros_helpers import collector, dispatch_node, publisher, queue_node, received_packet
from core_ros_helpers import request as request_packet
from core_tiny_packet_codec import TinyPacketCodec
from rclpy.lifecycle import TransitionCallbackReturn
from rclpy.parameter import Parameter
from std_msgs.msg import UInt8

from acomms_core.codecs import (
    PACKET_CODECS,
    CodecConfigError,
    PacketCodec,
    PacketCodecError,
    RosPacketCodec,
    load_codec_config,
    parse_codec_config,
    register_packet_codec,
)
from acomms_core.codecs.config import check_codec_config_parameters
from acomms_core.nodes.message_queue_node import MessageQueueNode
from acomms_core.queue.message_queue import MessageQueues, PacketRequest
from acomms_core.ros.testing import RosHarness
from acomms_interfaces.msg import ReceivedPacket
from acomms_interfaces.srv import GetNextPacketData

TINY_FILE = str(pathlib.Path(__file__).with_name("core_tiny_packet_codec.py"))
TINY_HEADER = [0x7E, 0x01]


def _entry(packet_codec="tiny", ids=(3, 4), **extra):
    return {"codec_name": "link", "packet_codec": packet_codec, "miniframe_header": TINY_HEADER,
            **extra, "message_codecs": [
                {"id": i, "ros_type": "std_msgs/UInt8", "subscribe_topic": f"to_acomms/u{i}",
                 "publish_topic": f"from_acomms/u{i}", "fields": {"data": {"codec": "uint8"}}}
                for i in ids]}


def _write(tmp_path, entries, name="codecs.yaml"):
    import yaml

    path = tmp_path / name
    path.write_text(yaml.safe_dump(entries))
    return str(path)


def _queued(config, values, **queue_args):
    queues = MessageQueues(config, **queue_args)
    for value in values:
        assert queues.add("to_acomms/u3", UInt8(data=value), 0.0) == "queued"
    return queues


# -- protocol and registry --------------------------------------------------------------------

def test_ros_and_tiny_satisfy_the_protocol_and_ros_costs_are_unchanged():
    ros = RosPacketCodec(b"\xac", b"\x01")
    assert isinstance(ros, PacketCodec) and isinstance(TinyPacketCodec(), PacketCodec)
    assert PACKET_CODECS["ros"].factory is RosPacketCodec
    assert ros.message_ids == range(256)
    assert ros.message_cost_bits(14) == 22 and ros.message_cost_bits(0) == 8
    assert ros.payload_capacity_bits(3, 4) == 8 * (2 + 3)
    assert ros.total_capacity_bits(10) == 8 * 8 and ros.total_capacity_bits(1) == 0


def test_registry_refuses_a_second_factory_under_a_taken_name():
    with pytest.raises(PacketCodecError, match="'ros' is already registered"):
        register_packet_codec("ros", TinyPacketCodec)
    with pytest.raises(PacketCodecError, match="non-empty string"):
        register_packet_codec("", TinyPacketCodec)
    register_packet_codec("ros", RosPacketCodec)  # the same factory again: accepted


def test_custom_codec_from_the_yaml_key_packs_by_its_own_cost(tmp_path):
    config = parse_codec_config([_entry(custom_packet_codec_paths=TINY_FILE)], "cfg.yaml")
    codec = config.packet_codecs[0].packet_codec
    assert type(codec).__name__ == "TinyPacketCodec" and codec.id_bits == 4
    assert config.warnings == []  # id_bits and custom_packet_codec_paths are known keys
    # 2 header bytes + 6 payload bytes = 48 bits: four 12-bit tiny messages (ros: three 16-bit)
    queues = _queued(config, [10, 11, 12, 13, 14])
    packet = queues.next_packet(PacketRequest(8, 0), 0.0)
    assert packet.num_messages == 4 and packet.miniframe_bytes[:2] == bytes(TINY_HEADER)
    assert config.packet_codecs[0].matches(1, 121, packet.miniframe_bytes, b"")
    decoded = codec.decode(packet.miniframe_bytes, packet.dataframe_bytes,
                           config.packet_codecs[0].codecs_by_id())
    assert [(i, m.data) for i, m in decoded.messages] == [(3, 10), (3, 11), (3, 12), (3, 13)]
    ros_config = parse_codec_config([_entry("ros", miniframe_header=TINY_HEADER)], "cfg.yaml")
    assert _queued(ros_config, [10, 11, 12, 13]).next_packet(
        PacketRequest(8, 0), 0.0).num_messages == 3


def test_custom_codec_options_ids_and_largest_packet_come_from_the_codec(tmp_path):
    entry = _entry(custom_packet_codec_paths=TINY_FILE, id_bits=3)
    config = parse_codec_config([entry], "cfg.yaml")
    assert config.packet_codecs[0].packet_codec.message_ids == range(1, 8)
    # a 3-byte packet: 8 payload bits behind the 2-byte header; a tiny UInt8 costs 3 + 8
    queues = MessageQueues(config, max_packet_bytes=3)
    assert queues.add("to_acomms/u3", UInt8(data=1), 0.0) == "rejected_too_large"
    assert "11 in a packet" in queues.counts.last_error
    with pytest.raises(CodecConfigError, match=r"'id' must be an integer 1\.\.7"):
        parse_codec_config([_entry(custom_packet_codec_paths=TINY_FILE, ids=(8,), id_bits=3)])
    with pytest.raises(CodecConfigError, match="packet codec 'link'.*'tiny' refused its "
                                               "settings.*id_bits"):
        parse_codec_config([_entry(custom_packet_codec_paths=TINY_FILE, id_bits=20)])


def test_sources_resolve_relative_to_the_yaml_and_directories_load_every_packet_codec(tmp_path):
    codecs_dir = tmp_path / "codecs"
    codecs_dir.mkdir()
    for name in ("alpha", "beta"):
        (codecs_dir / f"{name}_packet_codec.py").write_text(textwrap.dedent(f"""\
            from acomms_core.codecs import RosPacketCodec, register_packet_codec

            class {name.title()}Codec(RosPacketCodec):
                name = "{name}_test"

            register_packet_codec("{name}_test", {name.title()}Codec)
            """))
    (codecs_dir / "helper.py").write_text("raise RuntimeError('not a packet codec module')\n")
    path = _write(tmp_path, [_entry("alpha_test", custom_packet_codec_paths="codecs"),
                             _entry("beta_test", ids=(5,), custom_packet_codec_paths=["codecs"])])
    config = load_codec_config(path)
    assert [p.packet_codec.name for p in config.packet_codecs] == ["alpha_test", "beta_test"]


@pytest.mark.parametrize("source,words", [
    ("no_such_file.py", "no such file"),
    ("empty_dir", r"no \*_packet_codec.py file"),
    ("registers_nothing.py", "registers no packet codec"),
    ("broken.py", "importing .*broken.py failed: ZeroDivisionError"),
    ("no_such_module_xyz", "cannot import module"),
])
def test_bad_sources_name_the_file_and_the_codec(tmp_path, source, words):
    (tmp_path / "empty_dir").mkdir()
    (tmp_path / "registers_nothing.py").write_text("X = 1\n")
    (tmp_path / "broken.py").write_text("1 / 0\n")
    path = _write(tmp_path, [_entry(custom_packet_codec_paths=source)])
    with pytest.raises(CodecConfigError, match=f"{path}: packet codec 'link': '{source}'.*{words}"):
        load_codec_config(path)
    plain = _write(tmp_path, [_entry("ros")], "plain.yaml")
    absolute = source if source.startswith("no_such_module") else str(tmp_path / source)
    with pytest.raises(CodecConfigError, match=f"{plain}: custom_packet_codec_paths "
                                               f"\\(node parameter\\): '{absolute}'.*{words}"):
        load_codec_config(plain, absolute)


def test_unknown_packet_codec_names_the_registered_ones(tmp_path):
    with pytest.raises(CodecConfigError, match="cfg.yaml: packet codec 'link': unknown "
                                               "packet_codec 'nope' .*registered: .*ros"):
        parse_codec_config([_entry("nope")], "cfg.yaml")
    assert check_codec_config_parameters({"custom_packet_codec_paths": ["a", "b"]}) is None
    assert "list of strings" in check_codec_config_parameters({"custom_packet_codec_paths": [1]})


# -- through the nodes --------------------------------------------------------------------------

@pytest.mark.parametrize("route", ["yaml_key", "node_parameter"])
def test_custom_codec_end_to_end_through_queue_and_dispatch_nodes(tmp_path, route):
    if route == "yaml_key":
        path, parameters = _write(tmp_path, [_entry(custom_packet_codec_paths=TINY_FILE)]), {}
    else:  # ros_acomms' way: the node parameter, here a module name on the Python path
        path = _write(tmp_path, [_entry()])
        parameters = {"custom_packet_codec_paths": ["core_tiny_packet_codec"]}
    with RosHarness() as ros:
        sender = queue_node(ros, "/auv1", path, **parameters)
        dispatch = dispatch_node(ros, "/auv2", path, **parameters)
        inbox = collector(ros, UInt8, "/auv2/from_acomms/u3")
        rx = publisher(ros, ReceivedPacket, "/auv2/packet_rx")
        topic = publisher(ros, UInt8, "/auv1/to_acomms/u3")
        for value in (21, 22, 23):
            topic.publish(UInt8(data=value))
        assert ros.spin_until(lambda: sender.queues.counts.messages_queued == 3, 10.0)
        client = ros.helper.create_client(GetNextPacketData, "/auv1/get_next_packet_data")
        response = request_packet(client, ros, mini=6, data=0)  # 32 bits: two 12-bit messages
        assert response.num_messages == 2
        assert bytes(response.miniframe_bytes[:2]) == bytes(TINY_HEADER)
        rx.publish(received_packet(1, response.dest, response.miniframe_bytes,
                                   response.dataframe_bytes))
        assert ros.spin_until(lambda: len(inbox) == 2, 10.0), dispatch.counts
        assert [m.data for m in inbox] == [21, 22]
        assert dispatch.counts["messages_published"] == 2 and dispatch.counts["unknown_ids"] == 0


def test_bad_custom_codec_refuses_configure_and_bad_parameter_is_refused(tmp_path):
    path = _write(tmp_path, [_entry()])  # names 'tiny' without loading it from anywhere
    with RosHarness() as ros:
        node = ros.add(MessageQueueNode(context=ros.context, parameter_overrides=[
            Parameter("codec_config_file", value=path),
            Parameter("custom_packet_codec_paths", value=str(tmp_path / "missing.py"))]))
        assert node.trigger_configure() == TransitionCallbackReturn.FAILURE
        result = node.set_parameters([Parameter("custom_packet_codec_paths", value=[1, 2])])[0]
        assert not result.successful and "list of strings" in result.reason
        assert node.set_parameters([Parameter("custom_packet_codec_paths",
                                              value=[TINY_FILE])])[0].successful
        assert node.trigger_configure() == TransitionCallbackReturn.SUCCESS
        assert node.trigger_cleanup() == TransitionCallbackReturn.SUCCESS
        assert node.queues is None
