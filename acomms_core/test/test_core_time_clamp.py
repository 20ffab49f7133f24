"""A time codec that clamps a stamp (a clock outside its epoch range) is reported once per field:
the ROS-free codec notes it in the encode metadata, the queue collects it, the node logs it."""

from __future__ import annotations

import textwrap

from builtin_interfaces.msg import Time
from core_ros_helpers import publisher, queue_node
from rcl_interfaces.msg import Log
from std_msgs.msg import Header

from acomms_core.codecs import parse_codec_config
from acomms_core.codecs.message_codec import MessageCodec
from acomms_core.queue.message_queue import MessageQueues
from acomms_core.ros.testing import RosHarness

EPOCH_2021 = 1622520000  # ltcodecs' time codec default epoch_start
STAMPS = {"stamp": {"codec": "time", "precision": 0}, "frame_id": {"codec": "string",
                                                                    "max_length": 4}}


def header(seconds: int) -> Header:
    return Header(stamp=Time(sec=seconds), frame_id="a")


def test_codec_reports_each_time_field_once():
    codec = MessageCodec("std_msgs/Header", STAMPS)
    _, metadata = codec.encode(header(EPOCH_2021 + 5))
    assert metadata is None  # in range: nothing to say
    _, metadata = codec.encode(header(12))  # a 1970 clock
    [warning] = metadata["clamp_warnings"]
    assert "field 'stamp'" in warning and "outside time codec range 1622520000" in warning
    assert "\n" not in warning
    _, metadata = codec.encode(header(13))
    assert metadata is None  # once per field


def test_nested_time_fields_are_named_by_path_and_refuse_mode_stays_an_error():
    codec = MessageCodec("std_msgs/Header", {"stamp": {"codec": "msg", "fields": {
        "sec": {"codec": "uint32"}}}, "frame_id": {"codec": "string", "max_length": 4}})
    _, metadata = codec.encode(header(1))
    assert metadata is None  # not a time codec: no clamp note
    config = parse_codec_config([{"codec_name": "t", "miniframe_header": [0xAC],
                                  "message_codecs": [{
                                      "id": 1, "ros_type": "std_msgs/Header",
                                      "subscribe_topic": "h", "fields": STAMPS}]}], "t.yaml")
    queues = MessageQueues(config)
    assert queues.add("h", header(3), 0.0) == "queued"
    assert queues.add("h", header(4), 0.0) == "queued"  # still sent, clamped
    [warning] = queues.take_clamp_warnings()
    assert "std_msgs/msg/Header field 'stamp'" in warning
    assert queues.take_clamp_warnings() == []


def test_queue_node_logs_the_clamp_once(tmp_path):
    path = tmp_path / "codecs.yaml"
    path.write_text(textwrap.dedent("""\
        - codec_name: stamps
          miniframe_header: [0xac]
          message_codecs:
            - id: 1
              ros_type: std_msgs/Header
              subscribe_topic: to_acomms/header
              fields:
                stamp: {codec: time, precision: 0}
                frame_id: {codec: string, max_length: 4}
        """))
    with RosHarness() as ros:
        logs: list[Log] = []
        ros.helper.create_subscription(Log, "/rosout", logs.append, 100)
        queue_node(ros, "/clamp", str(path))
        pub = publisher(ros, Header, "/clamp/to_acomms/header")
        for seconds in (1, 2, 3):
            pub.publish(header(seconds))

        def clamp_lines():
            return [m.msg for m in logs if "clamps" in m.msg]

        assert ros.spin_until(lambda: clamp_lines(), timeout=10.0)
        ros.spin_until(lambda: False, timeout=0.5)
        [line] = clamp_lines()
        assert line.startswith("to_acomms/header: std_msgs/msg/Header field 'stamp'")
