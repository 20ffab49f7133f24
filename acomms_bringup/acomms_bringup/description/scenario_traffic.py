"""The `traffic:` entries of a scenario's vehicle (ROS-free): synthetic messages the runner
publishes on one of the vehicle's subscribe topics, checked against the vehicle's codec config
(which is read here too: `_check_codec_config`)."""

from __future__ import annotations

import pathlib
from typing import Any

from acomms_bringup.description.scenario_keys import TRAFFIC_KEYS
from acomms_bringup.description.scenario_parsing import _NAME_TOKEN, _Context, _Section
from acomms_bringup.description.scenario_types import Traffic
from acomms_core.codecs.config_yaml import CodecYamlError, read_codec_yaml

FILE_TRANSFER_TYPE = "acomms_interfaces/msg/FileTransfer"


def _check_codec_config(ctx: _Context, path: str, codec_config: pathlib.Path) -> list:
    """Cheap shape check (a YAML list of packet codecs) of the file as the nodes read it (the
    codec loader's own reader: includes, duplicate keys); the codec loader does the rest."""
    try:
        data = read_codec_yaml(str(codec_config))
    except CodecYamlError as exc:
        raise ctx.error(path, f"codec config {codec_config}: {exc}") from None
    if not isinstance(data, list) or not data or not all(isinstance(p, dict) for p in data):
        raise ctx.error(path, f"codec config {codec_config} must be a non-empty YAML list of "
                              "packet codecs")
    return data


def _ros2_type_name(name: str) -> str:
    """'pkg/Msg' or 'pkg/msg/Msg' -> 'pkg/msg/Msg'."""
    parts = name.strip().split("/")
    return f"{parts[0]}/msg/{parts[1]}" if len(parts) == 2 else "/".join(parts)


def _subscribe_topics(codec_data: list) -> dict[str, str]:
    """{subscribe_topic: ros_type} of every message codec in a codec config."""
    topics = {}
    for packet_codec in codec_data:
        for message_codec in packet_codec.get("message_codecs") or []:
            if isinstance(message_codec, dict) and message_codec.get("subscribe_topic"):
                topics[str(message_codec["subscribe_topic"]).lstrip("~/")] = str(
                    message_codec.get("ros_type", ""))
    return topics


def _parse_traffic(ctx: _Context, path: str, data: Any, codec_data: list,
                   codec_config: pathlib.Path, base_dir: pathlib.Path | None = None) -> Traffic:
    section = _Section(ctx, data, path, TRAFFIC_KEYS)
    topic = section.take("topic")
    if not topic or topic.startswith("/") or not all(
            _NAME_TOKEN.match(part) for part in topic.split("/")):
        raise ctx.error(section.key_path("topic"),
                        f"{topic!r} must be a relative topic name like to_acomms/nav_status")
    known = _subscribe_topics(codec_data)
    if topic not in known:
        raise ctx.error(section.key_path("topic"),
                        f"{topic!r} is not a subscribe_topic of codec config {codec_config} "
                        f"(it has {sorted(known)})")
    codec_type = _ros2_type_name(known[topic])
    ros_type = section.take("type", codec_type)
    if _ros2_type_name(ros_type) != codec_type:
        raise ctx.error(section.key_path("type"),
                        f"{ros_type} differs from the codec config's ros_type {codec_type}")
    period = section.take("period_seconds")
    if period < 0.01:
        raise ctx.error(section.key_path("period_seconds"), f"must be >= 0.01, got {period}")
    start = section.take("start_seconds")
    fields = section.take("fields")
    arrivals = section.take("arrivals")
    file = _traffic_file(ctx, section, codec_type, base_dir or codec_config.parent)
    section.finish()
    return Traffic(topic=topic, ros_type=codec_type, period_seconds=period, start_seconds=start,
                   fields=fields, key_path=path, arrivals=arrivals, file=file)


def _traffic_file(ctx: _Context, section, codec_type: str, base_dir: pathlib.Path):
    """issue 15: `file:` (relative to the scenario) sends that file as a FileTransfer."""
    spec = section.take("file")
    if not spec:
        return None
    if codec_type != FILE_TRANSFER_TYPE:
        raise ctx.error(section.key_path("file"), f"files travel as {FILE_TRANSFER_TYPE}, "
                        f"not {codec_type}")
    path = pathlib.Path(spec) if pathlib.Path(spec).is_absolute() else base_dir / spec
    if not path.is_file():
        raise ctx.error(section.key_path("file"), f"file not found: {path}")
    return path


def _check_unique_topics(ctx: _Context, traffic: tuple[Traffic, ...]) -> None:
    seen: dict[str, str] = {}
    for item in traffic:
        if item.topic in seen:
            raise ctx.error(f"{item.key_path}.topic",
                            f"duplicate traffic topic {item.topic} (also {seen[item.topic]})")
        seen[item.topic] = item.key_path
