"""Test helpers for authenticated packet codecs: key files and secured codec configs."""

from __future__ import annotations

import os
import types

from acomms_core.codecs import parse_codec_config

KEY_1 = "00112233445566778899aabbccddeeff"
KEY_2 = "ffeeddccbbaa99887766554433221100"
ROGUE_KEY = "0f1e2d3c4b5a69788796a5b4c3d2e1f0"


def write_key_file(path, keys, send_key=None, mode=0o600) -> str:
    """keys: [(id, hex, accept_until or None)]."""
    lines = [] if send_key is None else [f"send_key: {send_key}"]
    lines.append("keys:")
    for key_id, secret, until in keys:
        extra = "" if until is None else f", accept_until: {until!r}"
        lines.append(f"  - {{id: {key_id}, key: '{secret}'{extra}}}")
    path.write_text("\n".join(lines) + "\n")
    os.chmod(path, mode)
    return str(path)


def secured_entry(key_file: str, mode: str = "authenticate", tag_bytes: int = 4,
                  header=(0xA5,), **security) -> dict:
    return {"codec_name": "commands", "miniframe_header": list(header),
            "security": {"key_file": key_file, "mode": mode, "tag_bytes": tag_bytes, **security},
            "message_codecs": [
                {"id": 5, "ros_type": "std_msgs/String", "subscribe_topic": "command_out",
                 "publish_topic": "command",
                 "fields": {"data": {"codec": "string", "max_length": 40}}},
                {"id": 6, "ros_type": "std_msgs/UInt8", "fields": {"data": {"codec": "uint8"}}}]}


def secured_codec(key_file: str, src: int | None = None, state_dir=None, fresh=True, **kwargs):
    """(the secured PacketCodecConfig, its SecuredPacketCodec), bound as sender when src given
    (fresh: the test's key is new, a missing counter state may start at 0)."""
    config = parse_codec_config([secured_entry(key_file, **kwargs)], "cfg.yaml")
    packet = config.packet_codecs[0]
    if src is not None:
        packet.packet_codec.bind_sender(src, str(state_dir), allow_fresh=fresh)
    return packet, packet.packet_codec


def seal(packet, messages, mini=40, data=0, dest=0):
    codecs = packet.codecs_by_id()
    encoded = [(i, codecs[i].encode(m)[0]) for i, m in messages]
    return packet.packet_codec.pack(encoded, mini, data, dest=dest)


def rx(src: int, dest: int = 0):
    """The part of a ReceivedPacket a packet codec reads (its SRC and dest)."""
    return types.SimpleNamespace(packet=types.SimpleNamespace(src=src, dest=dest))


def open_packet(packet, mini, data, src, dest=0, **valid):
    """(messages, the outcome counter) of one received packet."""
    result = packet.packet_codec.decode(mini, data, packet.codecs_by_id(), rx(src, dest),
                                        **valid)
    (outcome,) = result.counters
    return result.messages, outcome


def unwritable_dir(tmp_path) -> str:
    """A directory this process cannot create files in (root ignores modes: /sys refuses)."""
    if os.geteuid() == 0:
        return "/sys"
    path = tmp_path / "read_only"
    path.mkdir(exist_ok=True)
    path.chmod(0o500)
    return str(path)
