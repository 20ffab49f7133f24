"""packet_dispatch_node through ROS: matching, publishing, and bad packets counted, never fatal."""

from __future__ import annotations

import textwrap

import pytest
from bitstring import Bits
from core_ros_helpers import collector, dispatch_node, publisher, received_packet
from lifecycle_msgs.msg import State
from rclpy.lifecycle import TransitionCallbackReturn
from rclpy.parameter import Parameter
from std_msgs.msg import String, UInt8

from acomms_core.codecs import RosPacketCodec, load_codec_config
from acomms_core.nodes.packet_dispatch_node import PacketDispatchNode
from acomms_core.ros.testing import RosHarness
from acomms_interfaces.msg import DispatchStatus, ReceivedPacket

NS = "/auv2"
CONFIG_TEXT = """\
- codec_name: from_fleet
  match_src: [1, 2]
  miniframe_header: [0xac]
  message_codecs:
    - {id: 1, ros_type: std_msgs/UInt8, publish_topic: from_acomms/byte,
       fields: {data: {codec: uint8}}}
    - {id: 2, ros_type: std_msgs/String, publish_topic: from_acomms/text, checksum: crc8,
       fields: {data: {codec: string, max_length: 20}}}
    - {id: 3, ros_type: std_msgs/UInt8, fields: {data: {codec: uint8}}}
- codec_name: named
  miniframe_header: [0xbd]
  except_src: [9]
  src_names: {4: auv4}
  message_codecs:
    - {id: 10, ros_type: std_msgs/UInt8, publish_topic: "from_acomms/{name}/byte",
       fields: {data: {codec: uint8}}}
"""


@pytest.fixture
def setup(tmp_path):
    path = tmp_path / "dispatch.yaml"
    path.write_text(textwrap.dedent(CONFIG_TEXT))
    config = load_codec_config(str(path))
    with RosHarness() as ros:
        node = dispatch_node(ros, NS, str(path))
        out = {
            "byte": collector(ros, UInt8, f"{NS}/from_acomms/byte"),
            "text": collector(ros, String, f"{NS}/from_acomms/text"),
            "auv4": collector(ros, UInt8, f"{NS}/from_acomms/auv4/byte"),
            "status": collector(ros, DispatchStatus, f"{NS}/dispatch_status"),
        }
        rx = publisher(ros, ReceivedPacket, f"{NS}/packet_rx")
        # let the collectors match the node's publishers before anything is sent
        assert ros.spin_until(lambda: all(
            ros.helper.count_publishers(t) > 0 for t in (
                f"{NS}/from_acomms/byte", f"{NS}/from_acomms/text", f"{NS}/dispatch_status")),
            timeout=10.0)
        ros.spin_for(0.3)
        yield ros, node, config, rx, out


def _pack(config, codec_name, messages, mini=72, data=0):
    packet = next(p for p in config.packet_codecs if p.codec_name == codec_name)
    codecs = packet.codecs_by_id()
    encoded = [(i, codecs[i].encode(m)[0]) for i, m in messages]
    return packet.packet_codec.pack(encoded, mini, data)


def _send(ros, rx, out, packet, expected_status_count):
    rx.publish(packet)
    assert ros.spin_until(lambda: len(out["status"]) >= expected_status_count, timeout=10.0)
    return out["status"][-1]


def test_matching_publishing_and_counting(setup):
    ros, node, config, rx, out = setup
    mini, data = _pack(config, "from_fleet", [(1, UInt8(data=5)), (2, String(data="hi")),
                                              (3, UInt8(data=1))])
    status = _send(ros, rx, out, received_packet(1, 0, mini, data), 1)
    assert ros.spin_until(lambda: out["byte"] and out["text"], 5.0)
    assert (out["byte"][0].data, out["text"][0].data) == (5, "hi")
    assert (status.messages_published, status.no_publish_topic) == (2, 1)

    # match_src: source 3 is not in [1, 2]
    status = _send(ros, rx, out, received_packet(3, 0, mini, data), 2)
    assert status.packets_unmatched == 1

    # {name} topics per source; except_src; a source without a name has no topic
    mini, data = _pack(config, "named", [(10, UInt8(data=77))])
    _send(ros, rx, out, received_packet(4, 0, mini, data), 3)
    assert ros.spin_until(lambda: out["auv4"], 5.0) and out["auv4"][0].data == 77
    assert _send(ros, rx, out, received_packet(9, 0, mini, data), 4).packets_unmatched == 2
    assert _send(ros, rx, out, received_packet(5, 0, mini, data), 5).no_publish_topic == 2


def test_bad_packets_are_counted_and_what_decodes_is_published(setup):
    ros, node, config, rx, out = setup
    mini, data = _pack(config, "from_fleet", [(1, UInt8(data=8)), (2, String(data="corrupt me"))])
    corrupted = bytearray(mini)
    corrupted[5] ^= 0x04  # inside the string
    status = _send(ros, rx, out, received_packet(1, 0, corrupted, data), 1)
    assert status.checksum_failures == 1 and status.messages_published == 1
    assert "crc8" in status.last_error

    status = _send(ros, rx, out, received_packet(1, 0, mini[:6], b""), 2)  # truncated
    assert status.decode_errors == 1 and status.messages_published == 2

    unknown = bytes([0xAC, 1, 9, 7, 0xFF, 0xFF])
    status = _send(ros, rx, out, received_packet(2, 0, unknown, b""), 3)
    assert status.unknown_ids == 1 and status.messages_published == 3

    # partially valid: only the first 3 miniframe bytes passed the modem's CRC
    status = _send(ros, rx, out, received_packet(1, 0, mini, data, minibytes_valid=[0, 3]), 4)
    assert status.invalid_bytes == 1 and status.messages_published == 4

    for junk in (b"", b"\xac", bytes(range(200)), b"\xac" + bytes([2, 255]) * 30):
        rx.publish(received_packet(1, 0, junk, junk))
    assert ros.spin_until(lambda: len(out["status"]) >= 8, timeout=10.0)
    assert out["status"][-1].packets_received == 8
    assert [m.data for m in out["byte"]] == [8, 8, 9, 8]
    state_id, _ = node._state_machine.current_state
    assert state_id == State.PRIMARY_STATE_ACTIVE


def test_bad_config_refuses_configure():
    with RosHarness() as ros:
        node = ros.add(PacketDispatchNode(
            context=ros.context,
            parameter_overrides=[Parameter("codec_config_file", value="/nonexistent.yaml")]))
        assert node.trigger_configure() == TransitionCallbackReturn.FAILURE


def test_encode_only_config_entry_is_packed_like_ros_acomms():
    packet = RosPacketCodec()
    mini, _ = packet.pack([(3, Bits(uint=1, length=8))], 72, 0)
    assert mini == bytes([0xAC, 3, 1])
