"""Codecs of acomms, ROS-free (no node needed): field -> message -> packet, as in ros_acomms.

- `MessageCodec`: one rclpy message type <-> bits, ltcodecs field codecs for leaf fields, our own
  handling of nested messages and arrays of messages, optional crc8/crc32.
- `PacketCodec`: the packet-codec protocol the queue and dispatch use for every size decision;
  `RosPacketCodec` (`ros`) is ros_acomms' layout, bit-compatible.
- `registry`: packet codecs by name; `register_packet_codec`, custom codecs loaded from
  `custom_packet_codec_paths`.
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
from acomms_core.codecs.packet_codec import PacketCodec, PacketDecodeResult
from acomms_core.codecs.registry import (
    PACKET_CODECS,
    PacketCodecError,
    load_packet_codecs,
    register_packet_codec,
)
from acomms_core.codecs.ros_packet_codec import RosPacketCodec
from acomms_core.codecs.ros_types import UnknownRosType, resolve_message_class

__all__ = [
    "PACKET_CODECS", "ChecksumError", "CodecBuildError", "CodecConfig", "CodecConfigError",
    "DecodeError", "EncodeError", "MessageCodec", "MessageCodecConfig", "PacketCodec",
    "PacketCodecConfig", "PacketCodecError", "PacketDecodeResult", "RosPacketCodec",
    "UnknownRosType", "load_codec_config", "load_packet_codecs", "parse_codec_config",
    "register_packet_codec", "resolve_message_class",
]
