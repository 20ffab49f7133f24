"""Codecs without nodes: round trips, ltcodecs bit compatibility, packet layout, config errors."""

from __future__ import annotations

import os
import textwrap
from types import SimpleNamespace

import pytest
from bitstring import BitArray, Bits, ConstBitStream
from core_samples import ALL_CODECS_CONFIG, EXAMPLE_CONFIG, differences, sample_messages
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from geometry_msgs.msg import Point32, Polygon, Pose
from sensor_msgs.msg import BatteryState, NavSatFix
from std_msgs.msg import Float32, Header, String, UInt8

from acomms_core.codecs import (
    ChecksumError,
    CodecConfigError,
    DecodeError,
    MessageCodec,
    RosPacketCodec,
    load_codec_config,
    parse_codec_config,
)
from acomms_core.codecs._ltcodecs import FIELD_CODEC_CLASSES, ltcodecs

PACKET = SimpleNamespace(packet=SimpleNamespace(src=1, dest=42))


@pytest.fixture(scope="module")
def all_codecs():
    return load_codec_config(ALL_CODECS_CONFIG)


def test_every_sample_round_trips_within_codec_precision(all_codecs):
    by_id = all_codecs.by_id()
    for codec_id, (_, sent, expected, tolerances) in sample_messages(src=1).items():
        codec = by_id[codec_id].codec
        bits, _ = codec.encode(sent)
        assert codec.min_length_bits <= len(bits) <= codec.max_length_bits
        stream = ConstBitStream(bits)
        decoded = codec.decode(stream, PACKET)
        assert stream.pos == len(bits), f"id {codec_id} left bits unread"
        assert differences(expected, decoded, tolerances) == [], f"id {codec_id}"


def test_comparison_helper_notices_differences():
    assert differences(Float32(data=1.0), Float32(data=1.5)) != []
    assert differences(Float32(data=1.0), Float32(data=1.05), {"data": 0.1}) == []


def test_config_covers_every_field_codec(all_codecs):
    used = set()

    def collect(fields):
        for params in (fields or {}).values():
            used.add(params["codec"])
            collect(params.get("fields"))
            collect(params.get("target_fields"))
            element = params.get("element_params") or {}
            collect(element.get("fields"))
            if "element_type" in params:
                used.add(params["element_type"])

    for message in all_codecs.message_codecs:
        collect(message.params.get("fields"))
    # dict/dictionary encode Python dicts; ROS messages have no dict fields (nested messages
    # use msg/ros_msg instead).
    expected = set(FIELD_CODEC_CLASSES) - {"dict", "dictionary"}
    assert expected - used == set()
    assert {"src", "dest"} <= used
    assert {m.checksum for m in all_codecs.message_codecs} >= {"crc8", "crc32"}


def test_metadata_dest_field_sets_the_queued_destination(all_codecs):
    codec = all_codecs.by_id()[9].codec
    _, metadata = codec.encode(sample_messages()[9][1])
    assert metadata == {"dest": 42}


@pytest.mark.parametrize("cls", [Header, Pose, NavSatFix, Polygon, DiagnosticArray, BatteryState])
def test_default_codec_for_standard_types_is_lossless(cls):
    msg = cls()
    if cls is Polygon:
        msg.points = [Point32(x=1.0, y=2.0, z=3.0)] * 3
    if cls is DiagnosticArray:
        msg.status = [DiagnosticStatus(level=b"\x02", name="dvl", message="ok",
                                       values=[KeyValue(key="k", value="v")])]
    if cls is NavSatFix:
        msg.latitude, msg.position_covariance[4] = 41.5, 2.25
    codec = MessageCodec(cls.__module__.split(".")[0] + "/" + cls.__name__)
    bits, _ = codec.encode(msg)
    assert codec.decode(ConstBitStream(bits)) == msg


def test_defaults_for_unbounded_strings_and_arrays_truncate_as_documented():
    codec = MessageCodec("std_msgs/msg/String")
    bits, _ = codec.encode(String(data="x" * 200))
    assert codec.decode(ConstBitStream(bits)).data == "x" * 128
    codec = MessageCodec("geometry_msgs/Polygon")
    bits, _ = codec.encode(Polygon(points=[Point32(x=float(i)) for i in range(12)]))
    assert len(codec.decode(ConstBitStream(bits)).points) == 10


# -- bit compatibility with ltcodecs ---------------------------------------------------------

BATTERY_FIELDS = {
    "voltage": {"codec": "float", "min_value": 0.0, "max_value": 60.0, "precision": 2},
    "temperature": {"codec": "linspace", "min_value": -10.0, "max_value": 50.0, "num_bits": 8},
    "current": {"codec": "float64"}, "charge": {"codec": "float32"},
    "capacity": {"codec": "integer", "min_value": 0, "max_value": 1000, "resolution": 10},
    "percentage": {"codec": "fixedint", "num_bits": 7},
    "power_supply_status": {"codec": "uint8"}, "power_supply_health": {"codec": "int8"},
    "present": {"codec": "bool"},
    "cell_voltage": {"codec": "variable_len_array", "element_type": "float", "max_length": 8,
                     "element_params": {"min_value": 0.0, "max_value": 5.0, "precision": 3}},
    "location": {"codec": "string_enum", "entries": ["bow", "stern"]},
    "serial_number": {"codec": "ascii", "max_length": 12, "bits_per_char": 6},
    "pad": {"codec": "padding", "num_bits": 5},
}
FIX_FIELDS = {
    "latitude": {"codec": "ccl_latlon"},
    "longitude": {"codec": "ccl_latlon_bcd", "lat_not_lon": False},
    "altitude": {"codec": "linspace", "min_value": -100.0, "max_value": 100.0, "resolution": 0.5},
    "position_covariance": {"codec": "fixed_len_array", "element_type": "float32", "length": 9},
    "position_covariance_type": {"codec": "egint", "min_value": 0, "max_value": 3},
}


@pytest.mark.parametrize("msg,fields", [
    (sample_messages()[2][1], BATTERY_FIELDS),
    (sample_messages()[1][1], FIX_FIELDS),
    (BatteryState(voltage=7.77, temperature=-3.3, cell_voltage=[0.1, 4.999], location="bow",
                  serial_number="Z9"), BATTERY_FIELDS),
])
def test_flat_encoding_equals_ltcodecs_bit_for_bit(msg, fields):
    ours, _ = MessageCodec(type(msg), fields).encode(msg)
    theirs, _ = ltcodecs.RosMessageCodec(ros_type=type(msg), fields_dict=dict(fields)).encode(msg)
    assert ours.bin == theirs.bin and len(ours) > 0


def _as_dict_config(fields):
    """The same field config for ltcodecs' dict codecs (msg -> dict)."""
    converted = {}
    for name, params in fields.items():
        params = dict(params)
        if params["codec"] in ("msg", "ros_msg"):
            params = {"codec": "dict", "fields": _as_dict_config(params["fields"])}
        if params.get("element_type") in ("msg",) or "/" in str(params.get("element_type")):
            params["element_type"] = "dict"
            params["element_params"] = {"fields": _as_dict_config(
                params["element_params"]["fields"])}
        converted[name] = params
    return converted


def test_nested_and_array_of_message_encoding_equals_ltcodecs_dict_codec(all_codecs):
    from core_samples import message_to_dict

    by_id = all_codecs.by_id()
    for codec_id in (5, 6):
        message_config = by_id[codec_id]
        msg = sample_messages()[codec_id][1]
        ours, _ = message_config.codec.encode(msg)
        ltcodecs_codec = ltcodecs.DictFieldCodec(
            fields=_as_dict_config(message_config.params["fields"]))
        theirs, _ = ltcodecs_codec.encode(message_to_dict(msg))
        assert ours.bin == theirs.bin, f"id {codec_id}"


# -- checksums ---------------------------------------------------------------------------------

@pytest.mark.parametrize("checksum,extra_bits", [("crc8", 8), ("crc32", 32)])
def test_checksum_rejects_every_single_bit_error(checksum, extra_bits):
    fields = {"data": {"codec": "string", "max_length": 20}}
    plain = MessageCodec("std_msgs/String", fields)
    codec = MessageCodec("std_msgs/String", fields, checksum=checksum)
    bits, _ = codec.encode(String(data="hello acomms"))
    assert len(bits) == len(plain.encode(String(data="hello acomms"))[0]) + extra_bits
    assert codec.decode(ConstBitStream(bits)).data == "hello acomms"
    for position in range(len(bits)):
        corrupted = BitArray(bits)
        corrupted.invert(position)
        with pytest.raises(DecodeError):  # ChecksumError, or bits that run out
            codec.decode(ConstBitStream(corrupted))
    corrupted = BitArray(bits)
    corrupted.invert(10)
    with pytest.raises(ChecksumError):
        codec.decode(ConstBitStream(corrupted))


# -- the ros packet codec --------------------------------------------------------------------

def test_packet_layout_matches_ros_acomms_format():
    codec = RosPacketCodec(miniframe_header=b"\xac", dataframe_header=b"\x01\x02")
    fourteen = Bits(uint=0x2ABC, length=14)
    mini, data = codec.pack([(105, Bits(uint=7, length=8)), (3, fourteen), (4, fourteen)], 3, 8)
    payload = BitArray()
    for codec_id, bits in ((105, Bits(uint=7, length=8)), (3, fourteen), (4, fourteen)):
        payload.append(Bits(uint=codec_id, length=8) + bits)
    # miniframe: header + the first 16 payload bits; dataframe: header + the rest, byte-padded
    assert mini == b"\xac" + payload[:16].tobytes()
    assert data == b"\x01\x02" + payload[16:].tobytes()
    assert len(data) == 2 + (len(payload) - 16 + 7) // 8


def test_packet_fills_miniframe_first_and_only_spills_what_does_not_fit():
    codec = RosPacketCodec()
    mini, data = codec.pack([(105, Bits(uint=1, length=8))], 72, 0)
    assert (mini, data) == (bytes([0xAC, 105, 1]), b"")
    assert codec.payload_capacity_bits(72, 192) == 8 * (71 + 192)
    assert codec.payload_capacity_bits(0, 192) == 0  # the miniframe header must fit
    with pytest.raises(ValueError):
        codec.pack([(1, Bits(uint=0, length=20))], 2, 0)


def _uint8_codecs():
    return {105: MessageCodec("std_msgs/UInt8", {"data": {"codec": "uint8"}}),
            7: MessageCodec("std_msgs/Float32", {"data": {
                "codec": "float", "min_value": 0, "max_value": 100, "precision": 1}},
                checksum="crc8")}


def test_packet_decode_recovers_what_it_can():
    codecs = _uint8_codecs()
    codec = RosPacketCodec()
    float_bits, _ = codecs[7].encode(Float32(data=12.5))
    mini, data = codec.pack([(105, Bits(uint=9, length=8)), (7, float_bits),
                             (105, Bits(uint=10, length=8))], 4, 8)
    result = codec.decode(mini, data, codecs)
    assert [(i, type(m).__name__) for i, m in result.messages] == [
        (105, "UInt8"), (7, "Float32"), (105, "UInt8")]
    # unknown id: what came before is kept, the rest counted
    result = codec.decode(mini, data, {105: codecs[105]})
    assert len(result.messages) == 1 and result.unknown_ids == 1
    # truncated: the message that runs off the end is counted as a decode error
    result = codec.decode(mini, data[:1], codecs)
    assert [m.data for _, m in result.messages] == [9] and result.decode_errors == 1
    # corrupted float (checksum): the fixed-length message is skipped, the next one survives
    corrupted = bytearray(mini + data)
    corrupted[4] ^= 0x10  # first dataframe byte: inside the float
    result = codec.decode(bytes(corrupted[:4]), bytes(corrupted[4:]), codecs)
    assert result.checksum_failures == 1
    assert [m.data for _, m in result.messages] == [9, 10]
    # partial packet: dataframe bytes 0..1 invalid -> the float (which spans them) is not trusted
    result = codec.decode(mini, data, codecs, minibytes_valid=[0, 4], databytes_valid=[2, 8])
    assert result.invalid_bytes == 1 and [m.data for _, m in result.messages] == [9, 10]
    # zero padding after the last message is not an unknown id
    result = codec.decode(mini, data + bytes(20), codecs)
    assert len(result.messages) == 3 and result.unknown_ids == 0
    # garbage never raises
    for junk in (b"", b"\xac", b"\xac\xff\xff", bytes(range(256))):
        codec.decode(junk, junk, codecs)


# -- config loading ----------------------------------------------------------------------------

def test_example_config_loads_with_ros1_type_names():
    config = load_codec_config(EXAMPLE_CONFIG)
    assert config.warnings == []
    assert [m.id for m in config.message_codecs] == [101, 102, 103, 104, 105]
    fix = config.by_id()[101]
    assert fix.msg_class is NavSatFix and fix.queue_order == "lifo" and fix.priority == 50
    assert config.packet_codecs[0].packet_codec.miniframe_header == b"\xac"


def _write(tmp_path, text: str) -> str:
    path = tmp_path / "codec_config.yaml"
    path.write_text(textwrap.dedent(text))
    return str(path)


HEAD = """\
- codec_name: mine
  packet_codec: ros
  miniframe_header: [0xac]
  message_codecs:
"""


def test_ros2_type_names_and_unknown_keys_load_with_warnings(tmp_path):
    path = _write(tmp_path, HEAD + """\
    - id: 1
      ros_type: std_msgs/msg/UInt8
      subscribe_topic: a
      allow fragmentation: false
      fields: {data: {codec: uint8}}
""")
    config = load_codec_config(path)
    assert config.by_id()[1].msg_class is UInt8
    assert any("allow fragmentation" in w for w in config.warnings)


@pytest.mark.parametrize("body,expected", [
    ("fields: {data: {codec: uint7}}", ["id 5", "field 'data'", "unknown codec 'uint7'"]),
    ("fields: {data: {codec: float, min_value: 0}}",
     ["id 5", "field 'data'", "missing required parameter", "max_value", "precision"]),
    ("fields: {data: {codec: integer, min_value: 10, max_value: 1}}",
     ["id 5", "field 'data'", "min_value 10 > max_value 1"]),
    ("fields: {nope: {codec: uint8}}", ["id 5", "field 'nope'", "not a field of"]),
    ("fields: {data: {codec: variable_len_array, element_type: float, max_length: 3, "
     "element_params: {min_value: 5, max_value: 1, precision: 1}}}",
     ["field 'data'", "element codec 'float'", "min_value 5 > max_value 1"]),
])
def test_bad_field_config_is_refused_naming_file_codec_and_field(tmp_path, body, expected):
    path = _write(tmp_path, HEAD + f"""\
    - id: 5
      ros_type: std_msgs/UInt8
      {body}
""")
    with pytest.raises(CodecConfigError) as error:
        load_codec_config(path)
    message = str(error.value)
    for fragment in [path, "packet codec 'mine'", *expected]:
        assert fragment in message, message


def test_unknown_ros_type_and_duplicate_id_are_refused(tmp_path):
    path = _write(tmp_path, HEAD + """\
    - {id: 3, ros_type: no_such_pkg/Thing}
""")
    with pytest.raises(CodecConfigError, match="id 3.*unknown ROS type 'no_such_pkg/Thing'"):
        load_codec_config(path)
    path = _write(tmp_path, HEAD + """\
    - {id: 3, ros_type: std_msgs/UInt8}
    - {id: 3, ros_type: std_msgs/Float32}
""")
    with pytest.raises(CodecConfigError, match="duplicate message codec id 3"):
        load_codec_config(path)


@pytest.mark.parametrize("data,expected", [
    (None, "non-empty list"),
    ([{"codec_name": "x", "packet_codec": "ccl", "message_codecs": []}], "unknown packet_codec"),
    ([{"codec_name": "x", "message_codecs": [{"id": 300, "ros_type": "std_msgs/UInt8"}]}],
     "0..255"),
    ([{"codec_name": "x", "message_codecs": [{"id": 1, "ros_type": "std_msgs/UInt8",
                                              "queue_order": "random"}]}], "fifo or lifo"),
    ([{"codec_name": "x", "miniframe_header": [300], "message_codecs": []}], "0..255"),
])
def test_bad_packet_and_queue_settings_are_refused(data, expected):
    with pytest.raises(CodecConfigError, match=expected):
        parse_codec_config(data, "cfg.yaml")


def test_missing_file_is_a_clear_error(tmp_path):
    with pytest.raises(CodecConfigError, match="cannot read"):
        load_codec_config(str(tmp_path / "absent.yaml"))
    with pytest.raises(CodecConfigError, match="codec_config_file"):
        load_codec_config("")


def test_src_names_expand_topics(tmp_path):
    path = _write(tmp_path, """\
- codec_name: fleet
  src_names: {1: auv1, 2: auv2}
  message_codecs:
    - id: 9
      ros_type: std_msgs/UInt8
      subscribe_topic: "{name}/status"
      publish_topic: "from_acomms/{name}/status"
""")
    message = load_codec_config(path).by_id()[9]
    assert message.subscribe_topics() == ["auv1/status", "auv2/status"]
    assert message.publish_topics() == {1: "from_acomms/auv1/status",
                                        2: "from_acomms/auv2/status"}


def test_includes_resolve_relative_to_the_config(tmp_path):
    (tmp_path / "fields.yaml").write_text("data: {codec: uint8}\n")
    path = _write(tmp_path, HEAD + """\
    - id: 1
      ros_type: std_msgs/UInt8
      fields: !include fields.yaml
""")
    assert os.path.exists(path)
    codec = load_codec_config(path).by_id()[1].codec
    assert codec.max_length_bits == 8
