"""Local events of a scenario vehicle (`events:`): one message published on one of the vehicle's
own topics at a simulated time, not queued for the acoustic link (ROS-free).

    events:
      - at_seconds: 60.0                       # simulated seconds after the start
        topic: mac_switcher_node/aloha/select  # relative to the vehicle's namespace
        type: std_msgs/msg/Bool                # pkg/msg/Name (or ROS 1 style pkg/Name)
        fields: {data: true}                   # strings may use {vehicle}, {time}

The loader checks the keys (unknown key: "did you mean"), the topic's syntax and that it is not
a subscribe_topic of the vehicle's codec config (that would queue it for the link: use
`traffic`), and the type name's form. Whether the type exists and the fields fit it is checked
where the message classes are imported: `acomms_bringup.run.local_events.plan_events`, which
acomms_check_scenario and acomms_run call.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from acomms_bringup.description.scenario_keys import EVENT_KEYS

_TOKEN = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")


@dataclasses.dataclass(frozen=True)
class LocalEvent:
    """One message the runner publishes once on the vehicle's own topic."""

    at_seconds: float  # simulated seconds after the start (clock.start_time)
    topic: str  # relative to the vehicle namespace
    ros_type: str  # pkg/msg/Name
    fields: Mapping[str, Any]
    key_path: str  # where it is in the scenario file, for error messages


def relative_topic_problem(topic: Any) -> str | None:
    """Why topic is not a relative ROS topic name like a/b_c (None: it is one)."""
    if isinstance(topic, str) and topic and not topic.startswith("/") and all(
            _TOKEN.match(part) for part in topic.split("/")):
        return None
    return f"{topic!r} must be a relative topic name like mac_switcher_node/aloha/select"


def message_type_name(type_name: str) -> str | None:
    """'pkg/Msg' or 'pkg/msg/Msg' -> 'pkg/msg/Msg'; None when it has neither form."""
    parts = type_name.strip().split("/")
    if len(parts) == 2:
        parts = [parts[0], "msg", parts[1]]
    if len(parts) != 3 or parts[1] != "msg" or not all(_TOKEN.match(p) for p in parts):
        return None
    return "/".join(parts)


def parse_events(items: Iterable[tuple[str, Any]], section: Callable[[Any, str], Any],
                 error: Callable[[str, str], Exception],
                 subscribe_topics: Iterable[str]) -> tuple[LocalEvent, ...]:
    """The vehicle's `events` entries ([(key path, item)]); `section(data, path)` reads a
    mapping with EVENT_KEYS (the loader's section reader), `error(key_path, problem)` makes the
    loader's error, subscribe_topics are the codec config's (relative)."""
    subscribe_topics = set(subscribe_topics)
    events = []
    for path, data in items:
        entry = section(data, path)
        at_seconds = entry.take("at_seconds")
        topic = entry.take("topic")
        problem = relative_topic_problem(topic)
        if problem:
            raise error(entry.key_path("topic"), problem)
        if topic in subscribe_topics:
            raise error(entry.key_path("topic"),
                        f"{topic} is a subscribe_topic of the codec config: an event on it "
                        "would be queued for the link (use `traffic` to send it)")
        given = entry.take("type")
        ros_type = message_type_name(given)
        if ros_type is None:
            raise error(entry.key_path("type"),
                        f"{given!r} is not a message type name (pkg/msg/Name or pkg/Name)")
        other = next((e for e in events if e.topic == topic and e.ros_type != ros_type), None)
        if other is not None:
            raise error(entry.key_path("type"), f"{other.key_path} publishes {other.ros_type} "
                        f"on {topic}: one type per topic")
        fields = entry.take("fields")
        entry.finish()
        events.append(LocalEvent(at_seconds=at_seconds, topic=topic, ros_type=ros_type,
                                 fields=fields, key_path=path))
    return tuple(events)


__all__ = ["EVENT_KEYS", "LocalEvent", "message_type_name", "parse_events",
           "relative_topic_problem"]
