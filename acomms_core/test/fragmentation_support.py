"""Codec configs and links for the fragmentation tests (test helper)."""

from __future__ import annotations

import textwrap

from acomms_core.codecs.config import load_codec_config
from acomms_core.fragmentation.settings import FragmentationSettings
from acomms_core.fragmentation.simulated_link import LinkEnd

BLOB_CONFIG = """\
- codec_name: default
  packet_codec: ros
  miniframe_header: [0xac]
  message_codecs:
    - id: 110
      ros_type: std_msgs/String
      subscribe_topic: blob
      publish_topic: from_acomms/blob
      default_dest: 2
      allow_fragmentation: true
      queue_maxsize: 4
      checksum: crc32
      fields: {data: {codec: string, max_length: 65000}}
    - id: 111
      ros_type: std_msgs/UInt8
      subscribe_topic: small
      publish_topic: from_acomms/small
      default_dest: 2
      fields: {data: {codec: uint8}}
"""


def write_config(tmp_path, text: str = BLOB_CONFIG) -> str:
    path = tmp_path / "fragment_codecs.yaml"
    path.write_text(textwrap.dedent(text))
    return str(path)


def make_link(tmp_path, **changes):
    config = load_codec_config(write_config(tmp_path))
    settings = FragmentationSettings.from_values({}, **changes)
    return LinkEnd(1, config, settings), LinkEnd(2, config, settings)


def text_of(size: int, seed: int = 0) -> str:
    letters = "abcdefghijklmnopqrstuvwxyz0123456789 "
    return "".join(letters[(i * 7 + seed * 13 + i // 37) % len(letters)] for i in range(size))
