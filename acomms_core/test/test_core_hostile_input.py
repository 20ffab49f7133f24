"""Issue 12, hostile input: nothing out of bounds decodes, nothing wrong encodes, configs stay
inside their directory. One test per numbered case of the issue (2..7) plus strict mode."""

from __future__ import annotations

import lzma
import os
import textwrap

import pytest
from bitstring import BitArray, Bits, ConstBitStream
from builtin_interfaces.msg import Time
from sensor_msgs.msg import NavSatFix
from std_msgs.msg import ByteMultiArray, Header, String, UInt16MultiArray

from acomms_core.codecs import (
    CodecConfigError,
    DecodeError,
    EncodeError,
    MessageCodec,
    RosPacketCodec,
    load_codec_config,
)
from acomms_core.codecs.config import topic_name_problem
from acomms_core.queue.message_queue import MessageQueues

HEAD = """\
- codec_name: hostile
  miniframe_header: [0xac]
  message_codecs:
"""


def _write(tmp_path, text, name="codecs.yaml"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return str(path)


def _decode(codec, bits):
    return codec.decode(ConstBitStream(Bits(bits)), None)


# -- case 2: values wider than their ROS field --------------------------------------------------
def test_case2_time_past_int32_is_a_decode_error_not_a_wrapped_stamp():
    codec = MessageCodec("std_msgs/Header", {"stamp": {"codec": "time", "precision": 0,
                                                       "epoch_end": 2 ** 33}})
    seconds = 2 ** 31 + 2_481_513_459           # what printed as Time(sec=-1813453837)
    bits = Bits(uint=seconds - codec._fields[0].codec.min_value,
                length=codec._fields[0].codec.num_bits)
    with pytest.raises(DecodeError, match="sec .* outside int32") as info:
        _decode(codec, bits)
    assert info.value.position_known  # the bits were all read: the packet may go on
    good = Bits(uint=1_700_000_000 - codec._fields[0].codec.min_value, length=len(bits))
    assert _decode(codec, good).stamp == Time(sec=1_700_000_000)


def test_case2_integer_codec_wider_than_the_field_is_refused():
    codec = MessageCodec("std_msgs/UInt16MultiArray", {"data": {
        "codec": "variable_len_array", "element_type": "integer", "max_length": 2,
        "element_params": {"min_value": 0, "max_value": 70000}}})
    bits, _ = codec.encode(UInt16MultiArray(data=[7, 65535]))
    assert list(_decode(codec, bits).data) == [7, 65535]
    length_bits = 2  # varint 0..2
    too_big = BitArray(bits[:length_bits])
    too_big.append(Bits(uint=7, length=17) + Bits(uint=65536, length=17))
    with pytest.raises(DecodeError, match="uint16 range"):
        _decode(codec, too_big)


# -- case 3: fixed_len_array with the wrong element count ---------------------------------------
def test_case3_short_fixed_len_array_is_refused_at_encode_and_counted(tmp_path):
    path = _write(tmp_path, HEAD + """\
    - id: 1
      ros_type: std_msgs/UInt16MultiArray
      subscribe_topic: in
      fields:
        data: {codec: fixed_len_array, element_type: int16, length: 3}
""")
    config = load_codec_config(path)
    codec = config.by_id()[1].codec
    with pytest.raises(EncodeError, match="2 elements, fixed_len_array length is 3"):
        codec.encode(UInt16MultiArray(data=[1, 2]))
    assert len(codec.encode(UInt16MultiArray(data=[1, 2, 3]))[0]) == 48
    queues = MessageQueues(config, default_dest=0, default_priority=1)
    assert queues.add("in", UInt16MultiArray(data=[1, 2]), 0.0) == "encode_failures"
    assert queues.add("in", UInt16MultiArray(data=[1, 2, 3, 4]), 0.0) == "encode_failures"
    assert queues.counts.encode_failures == 2 and queues.counts.messages_queued == 0


# -- case 4: decompression bomb -------------------------------------------------------------------
def test_case4_lzma_output_is_bounded_by_the_declared_maximum():
    codec = MessageCodec("std_msgs/ByteMultiArray", {"data": {"codec": "lzma", "max_length": 64}})
    field = codec._fields[0].codec
    assert field.max_decompressed_length == 16 * 64
    # The bomb: 127 compressed bytes (the 7-bit length prefix allows up to 127).
    bomb = lzma.compress(bytes(356_805), format=lzma.FORMAT_RAW, filters=field.filter)
    bits = Bits(uint=len(bomb), length=7) + Bits(bytes=bomb)
    with pytest.raises(DecodeError, match="lzma length 127 past max_length 64"):
        _decode(codec, bits)
    # Within max_length, 51 bytes inflate to 10,000: refused at the bound, not decompressed.
    bomb = lzma.compress(bytes(10_000), format=lzma.FORMAT_RAW, filters=field.filter)
    assert len(bomb) <= 64
    bits = Bits(uint=len(bomb), length=7) + Bits(bytes=bomb)
    with pytest.raises(DecodeError, match="inflates past max_decompressed_length 1024") as info:
        _decode(codec, bits)
    assert info.value.position_known  # every compressed byte was read
    with pytest.raises(EncodeError, match="max_decompressed_length"):
        codec.encode(ByteMultiArray(data=[b"a"] * 2000))
    small = ByteMultiArray(data=[bytes([b]) for b in b"hello hello hello"])
    assert _decode(codec, codec.encode(small)[0]).data == small.data
    wider = MessageCodec("std_msgs/ByteMultiArray", {"data": {
        "codec": "lzma", "max_length": 64, "max_decompressed_length": 10_000}})
    assert len(_decode(wider, bits).data) == 10_000


def test_case4_lzma_length_prefix_past_max_length_is_refused():
    codec = MessageCodec("std_msgs/ByteMultiArray", {"data": {"codec": "lzma", "max_length": 40}})
    field = codec._fields[0].codec
    bits = Bits(uint=63, length=field.length_codec.num_bits) + Bits(bytes=bytes(63))
    with pytest.raises(DecodeError, match="past max_length 40") as info:
        _decode(codec, bits)
    assert not info.value.position_known


# -- case 5: out-of-bounds values after a valid header --------------------------------------------
def _fix_codec():
    return MessageCodec("sensor_msgs/NavSatFix", {
        "latitude": {"codec": "ccl_latlon"}, "longitude": {"codec": "ccl_latlon"},
        "altitude": {"codec": "float", "min_value": 0, "max_value": 1000, "precision": 1}})


def test_case5_latitude_beyond_90_degrees_is_refused():
    codec = _fix_codec()
    scale = (2 ** 23 - 1) / 180.0
    bits = (Bits(intle=int(170.7 * scale), length=24) + Bits(intle=int(10 * scale), length=24)
            + Bits(uint=5, length=14))
    with pytest.raises(DecodeError, match="latitude.*outside ±90"):
        _decode(codec, bits)
    lon_ok = (Bits(intle=int(10 * scale), length=24) + Bits(intle=int(170.7 * scale), length=24)
              + Bits(uint=5, length=14))
    assert _decode(codec, lon_ok).longitude == pytest.approx(170.7, abs=1e-4)


def test_case5_depth_past_max_value_is_refused_and_the_packet_goes_on():
    codec = _fix_codec()
    scale = (2 ** 23 - 1) / 180.0
    ok_latlon = Bits(intle=int(10 * scale), length=24) * 2
    bad = ok_latlon + Bits(uint=16380, length=14)      # 1638.0 m in a 0..1000 m field
    with pytest.raises(DecodeError, match="altitude.*outside float codec range") as info:
        _decode(codec, bad)
    assert info.value.position_known
    good = ok_latlon + Bits(uint=9999, length=14)
    assert _decode(codec, good).altitude == pytest.approx(999.9)
    # In a packet: the bad fixed-length message is counted, the next one is published.
    packet = RosPacketCodec()
    payload = Bits(uint=1, length=8) + bad + Bits(uint=1, length=8) + good
    result = packet.decode(b"\xac" + payload.tobytes(), b"", {1: codec})
    assert result.decode_errors == 1 and [m.altitude for _, m in result.messages] == [
        pytest.approx(999.9)]


def test_case5_string_longer_than_max_length_is_refused_and_stops_the_packet():
    codec = MessageCodec("std_msgs/String", {"data": {"codec": "string", "max_length": 32}})
    bits = Bits(uint=63, length=6) + Bits(uint=ord("A"), length=7) * 63
    with pytest.raises(DecodeError, match="63 elements/characters, string max_length allows "
                                          "0..32") as info:
        _decode(codec, bits)
    assert not info.value.position_known
    packet = RosPacketCodec().decode(b"\xac" + (Bits(uint=1, length=8) + bits).tobytes(), b"",
                                     {1: codec})
    assert packet.messages == [] and packet.decode_errors == 1


def test_case5_nul_in_a_7bit_string_is_refused():
    codec = MessageCodec("std_msgs/String", {"data": {"codec": "string", "max_length": 8}})
    bits = Bits(uint=3, length=4) + Bits(uint=ord("a"), length=7) + Bits(uint=0, length=7) * 2
    with pytest.raises(DecodeError, match="NUL"):
        _decode(codec, bits)


def test_case5_bcd_latlon_with_minutes_past_60_is_refused():
    codec = MessageCodec("sensor_msgs/NavSatFix", {"latitude": {"codec": "ccl_latlon_bcd"}})
    good = codec.encode(NavSatFix(latitude=41.5))[0]
    assert _decode(codec, good).latitude == pytest.approx(41.5)
    with pytest.raises(DecodeError, match="minutes") as info:
        _decode(codec, Bits(hex="041a700000"))
    assert info.value.position_known
    with pytest.raises(DecodeError, match="malformed"):
        _decode(codec, Bits(hex="04fa300000"))


# -- non-ASCII in 7-bit strings -------------------------------------------------------------------
def test_non_ascii_is_sent_as_question_marks_and_counted(tmp_path):
    path = _write(tmp_path, HEAD + """\
    - id: 1
      ros_type: std_msgs/String
      subscribe_topic: in
      fields: {data: {codec: string, max_length: 16}}
""")
    config = load_codec_config(path)
    codec = config.by_id()[1].codec
    bits, metadata = codec.encode(String(data="Zürich °C"))
    assert metadata == {"non_ascii_replaced": 2}
    assert _decode(codec, bits).data == "Z?rich ?C"
    queues = MessageQueues(config, default_dest=0, default_priority=1)
    assert queues.add("in", String(data="ça va"), 0.0) == "queued"
    assert queues.counts.non_ascii_replaced == 1 and queues.counts.encode_failures == 0
    assert codec.encode(String(data="plain"))[1] is None


# -- strict mode -----------------------------------------------------------------------------------
def test_on_out_of_range_refuse_refuses_what_clamp_clamps(tmp_path):
    text = HEAD + """\
    - id: 1
      ros_type: sensor_msgs/NavSatFix
      subscribe_topic: in
      on_out_of_range: {mode}
      fields:
        altitude: {{codec: float, min_value: 0, max_value: 1000, precision: 1}}
        header: {{codec: msg, fields: {{frame_id: {{codec: string, max_length: 4}}}}}}
"""
    clamp = load_codec_config(_write(tmp_path, text.format(mode="clamp"), "a.yaml"))
    refuse = load_codec_config(_write(tmp_path, text.format(mode="refuse"), "b.yaml"))
    high = NavSatFix(altitude=1638.0)
    assert _decode(clamp.by_id()[1].codec, clamp.by_id()[1].codec.encode(high)[0]).altitude == 1000
    with pytest.raises(EncodeError, match="altitude"):
        refuse.by_id()[1].codec.encode(high)
    long_name = NavSatFix(altitude=5.0)
    long_name.header.frame_id = "base_link"
    with pytest.raises(EncodeError, match="frame_id"):
        refuse.by_id()[1].codec.encode(long_name)
    assert refuse.by_id()[1].codec.encode(NavSatFix(altitude=5.0))[0]
    with pytest.raises(CodecConfigError, match="on_out_of_range must be one of clamp, refuse"):
        load_codec_config(_write(tmp_path, text.format(mode="wrap"), "c.yaml"))


# -- case 6: config edge cases --------------------------------------------------------------------
@pytest.mark.parametrize("topic, reason", [
    ("bad topic", "token 'bad topic'"), ("a//b", "empty token"), ("a/", "ends with '/'"),
    ("1abc", "token '1abc'"), ("a~b", "'~'")])
def test_case6_invalid_topic_names_are_refused_at_load(tmp_path, topic, reason):
    path = _write(tmp_path, HEAD + f"""\
    - id: 1
      ros_type: std_msgs/String
      subscribe_topic: "{topic}"
""")
    with pytest.raises(CodecConfigError, match="not a valid ROS topic name: .*" + reason):
        load_codec_config(path)


def test_case6_topic_name_rule_agrees_with_rclpy():
    """What rcl accepts when a node subscribes: the name, then its expansion."""
    from rclpy.exceptions import InvalidTopicNameException
    from rclpy.expand_topic_name import expand_topic_name
    from rclpy.validate_full_topic_name import validate_full_topic_name
    from rclpy.validate_topic_name import validate_topic_name

    for name in ("a", "a/b", "/a/b_c", "~/x", "~", "_x/y1", "{node}/x", "a b", "a//b", "a/",
                 "1a", "a/1b", "a~", "a-b", "a.b", "/", "x/~/y", "/a//b", "a__b"):
        try:
            validate_topic_name(name)
            validate_full_topic_name(expand_topic_name(name, "node", "/ns"))
            rclpy_ok = True
        except (InvalidTopicNameException, ValueError):
            rclpy_ok = False
        assert (topic_name_problem(name) is None) == rclpy_ok, name


def test_case6_huge_queue_maxsize_is_refused_at_load(tmp_path):
    path = _write(tmp_path, HEAD + """\
    - id: 1
      ros_type: std_msgs/String
      subscribe_topic: in
      queue_maxsize: 1000000000000000000000000000000
""")
    with pytest.raises(CodecConfigError, match="'queue_maxsize' must be an integer 1..100000"):
        load_codec_config(path)


def test_case6_codec_msg_on_a_float_field_is_refused(tmp_path):
    path = _write(tmp_path, HEAD + """\
    - id: 1
      ros_type: sensor_msgs/NavSatFix
      fields:
        altitude: {codec: msg, ros_type: std_msgs/Float64}
""")
    with pytest.raises(CodecConfigError, match="codec 'msg' on a field of type double"):
        load_codec_config(path)


def test_case6_duplicate_yaml_keys_are_refused(tmp_path):
    path = _write(tmp_path, HEAD + """\
    - id: 1
      ros_type: std_msgs/String
      id: 2
""")
    with pytest.raises(CodecConfigError, match="duplicate key 'id' at line 6"):
        load_codec_config(path)


def test_yaml_merge_keys_load_and_may_be_overridden_but_duplicates_still_refused(tmp_path):
    from acomms_core.codecs.config_yaml import CodecYamlError, read_codec_yaml

    merged = tmp_path / "merged.yaml"
    merged.write_text("base: &b {x: 1, y: 2}\na:\n  <<: *b\n  y: 3\n")
    assert read_codec_yaml(str(merged))["a"] == {"x": 1, "y": 3}
    twice = tmp_path / "twice.yaml"
    twice.write_text("base: &b {x: 1}\na:\n  <<: *b\n  y: 3\n  y: 4\n")
    with pytest.raises(CodecYamlError, match="duplicate key 'y'"):
        read_codec_yaml(str(twice))


def test_case6_missing_include_target_is_named(tmp_path):
    path = _write(tmp_path, HEAD + """\
    - id: 1
      ros_type: std_msgs/String
      fields: !include nowhere/fields.yaml
""")
    with pytest.raises(CodecConfigError, match="include target 'nowhere/fields.yaml' not found"):
        load_codec_config(path)


# -- case 7: config files stay inside their directory ---------------------------------------------
def _include_config(tmp_path, target, tag="!include"):
    config_dir = tmp_path / "config"
    config_dir.mkdir(exist_ok=True)
    return _write(config_dir, HEAD + f"""\
    - id: 1
      ros_type: std_msgs/UInt8
      fields: {tag} {target}
""")


def test_case7_includes_outside_the_config_tree_are_refused(tmp_path):
    outside = tmp_path / "outside.yaml"
    outside.write_text("data: {codec: uint8}\n")
    for target in (str(outside), "../outside.yaml"):
        with pytest.raises(CodecConfigError, match="outside the config directory"):
            load_codec_config(_include_config(tmp_path, target))
    (tmp_path / "config" / "sub").mkdir()
    (tmp_path / "config" / "sub" / "f.yaml").write_text("data: {codec: uint8}\n")
    assert load_codec_config(_include_config(tmp_path, "sub/f.yaml")).by_id()[1]
    (tmp_path / "config" / "link.yaml").symlink_to(outside)
    with pytest.raises(CodecConfigError, match="outside the config directory"):
        load_codec_config(_include_config(tmp_path, "link.yaml"))
    widened = load_codec_config(_include_config(tmp_path, "../outside.yaml"),
                                include_paths=[str(tmp_path)])
    assert widened.by_id()[1].codec.max_length_bits == 8


def test_case7_fifo_include_is_refused_without_hanging(tmp_path):
    (tmp_path / "config").mkdir()
    os.mkfifo(tmp_path / "config" / "pipe.yaml")
    with pytest.raises(CodecConfigError, match="not a regular file"):
        load_codec_config(_include_config(tmp_path, "pipe.yaml"))


def test_case7_environment_substitution_only_when_enabled(tmp_path, monkeypatch):
    monkeypatch.setenv("ACOMMS_TEST_FIELDS", "fields.yaml")
    path = _include_config(tmp_path, "${ACOMMS_TEST_FIELDS}", tag="!variable_include")
    (tmp_path / "config" / "fields.yaml").write_text("data: {codec: uint8}\n")
    with pytest.raises(CodecConfigError, match="environment substitution is disabled"):
        load_codec_config(path)
    assert load_codec_config(path, allow_env_substitution=True).by_id()[1]
    secret = _write(tmp_path, HEAD + """\
    - id: 1
      ros_type: std_msgs/String
      subscribe_topic: !variable_substitute "${HOME}"
""", "secret.yaml")
    with pytest.raises(CodecConfigError, match="environment substitution is disabled"):
        load_codec_config(secret)


@pytest.mark.parametrize("ros_type", ["os/system", "subprocess/msg/Popen", "rclpy/Node",
                                      "std_msgs/msg/__init__"])
def test_case7_ros_type_must_be_an_installed_interface_package(tmp_path, ros_type):
    path = _write(tmp_path, HEAD + f"""\
    - id: 1
      ros_type: {ros_type}
""")
    with pytest.raises(CodecConfigError, match="interface package|not a ROS type name"):
        load_codec_config(path)


def test_valid_time_still_decodes_after_the_bounds_check():
    codec = MessageCodec("std_msgs/Header", {"stamp": {"codec": "time", "precision": 3}})
    stamp = Header(stamp=Time(sec=1_700_000_000, nanosec=500_000_000))
    assert _decode(codec, codec.encode(stamp)[0]).stamp == stamp.stamp
