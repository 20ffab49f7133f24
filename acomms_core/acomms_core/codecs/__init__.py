"""Codecs of acomms, ROS-free (no node needed): field -> message -> packet, as in ros_acomms.

- `MessageCodec`: one rclpy message type <-> bits, ltcodecs field codecs for leaf fields, our own
  handling of nested messages and arrays of messages, optional crc8/crc32.
- `RosPacketCodec`: the `ros` packet layout, bit-compatible with ros_acomms.
- `load_codec_config`: the ros_acomms codec config YAML, validated with errors that name the file,
  codec and field.
"""

from acomms_core.codecs.config import (
    CodecConfig,
    CodecConfigError,
    MessageCodecConfig,
    PacketCodecConfig,
    load_codec_config,
    parse_codec_config,
)
from acomms_core.codecs.message_codec import (
    ChecksumError,
    CodecBuildError,
    DecodeError,
    EncodeError,
    MessageCodec,
)
from acomms_core.codecs.packet_codec import PacketDecodeResult, RosPacketCodec
from acomms_core.codecs.ros_types import UnknownRosType, resolve_message_class

__all__ = [
    "ChecksumError", "CodecBuildError", "CodecConfig", "CodecConfigError", "DecodeError",
    "EncodeError", "MessageCodec", "MessageCodecConfig", "PacketCodecConfig",
    "PacketDecodeResult", "RosPacketCodec", "UnknownRosType", "load_codec_config",
    "parse_codec_config", "resolve_message_class",
]
