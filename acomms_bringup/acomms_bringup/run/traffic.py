"""Synthetic traffic for the embedded runner: messages from a scenario's `traffic` entries.

`build_message` fills a message of the entry's ROS type from its `fields` (nested messages as
mappings; strings formatted with `{seq}`, `{vehicle}`, `{time}`) and stamps `header.stamp` with
the publish time when the type has a std_msgs/Header `header`. `match_key` is what identifies a
message at the far end: that stamp (seconds) when there is one, else the message's content.
A bad field name, value or template raises `TrafficError` naming the scenario key.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from acomms_core.codecs.ros_types import resolve_message_class


class TrafficError(ValueError):
    """A traffic entry whose fields do not fit its ROS type; `key_path` names the entry key."""

    def __init__(self, key_path: str, problem: str):
        self.key_path = key_path
        self.problem = problem
        super().__init__(f"{key_path}: {problem}")


def message_class(ros_type: str, key_path: str) -> type:
    try:
        return resolve_message_class(ros_type)
    except ValueError as exc:
        raise TrafficError(f"{key_path}.type", str(exc)) from None


def has_stamp(cls: type) -> bool:
    """True when the type has a std_msgs/Header `header` (the runner stamps and matches it)."""
    return cls.get_fields_and_field_types().get("header") == "std_msgs/Header"


def _assign(message, values: Mapping[str, Any], key_path: str, template: dict) -> None:
    fields = message.get_fields_and_field_types()
    for name, value in values.items():
        path = f"{key_path}.{name}"
        if name not in fields:
            raise TrafficError(path, f"{type(message).__name__} has no field {name!r} "
                                     f"(fields: {sorted(fields)})")
        current = getattr(message, name)
        if isinstance(value, Mapping):
            if not hasattr(current, "get_fields_and_field_types"):
                raise TrafficError(path, f"{name} is a {fields[name]}, not a message: give a value")
            _assign(current, value, path, template)
            continue
        if isinstance(value, str):
            try:
                value = value.format(**template)
            except (KeyError, IndexError, ValueError) as exc:
                raise TrafficError(path, f"bad template {value!r} ({exc}); use {{seq}}, "
                                         "{vehicle} or {time}") from None
        if isinstance(current, float) and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        problem = _type_problem(fields[name], current, value)
        if problem:
            raise TrafficError(path, f"{value!r} does not fit {fields[name]} ({problem})")
        try:
            setattr(message, name, value)
        except (AssertionError, TypeError, ValueError) as exc:
            raise TrafficError(path, f"{value!r} does not fit {fields[name]} ({exc})") from None


_INTEGER_TYPES = {"int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
                  "byte", "char", "octet"}


def _type_problem(field_type: str, current, value) -> str | None:
    """Why value cannot go into a field of this type (rclpy only checks when asked to)."""
    if hasattr(current, "get_fields_and_field_types"):
        return "a message: give a mapping of its fields"
    if "sequence<" in field_type or field_type.endswith("]"):
        return None if isinstance(value, (list, tuple)) else "expected a list"
    if field_type in ("double", "float"):
        ok = isinstance(value, float)
    elif field_type in _INTEGER_TYPES:
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif field_type == "boolean":
        ok = isinstance(value, bool)
    elif "string" in field_type:
        ok = isinstance(value, str)
    else:
        return None
    return None if ok else f"expected a {field_type} value"


def build_message(cls: type, fields: Mapping[str, Any], *, seq: int, vehicle: str,
                  time_s: float, key_path: str):
    """One message of the entry, number `seq`, published at simulated time `time_s`."""
    message = cls()
    _assign(message, fields, f"{key_path}.fields",
            {"seq": seq, "vehicle": vehicle, "time": f"{time_s:.1f}"})
    if has_stamp(cls):
        message.header.stamp.sec = int(time_s)
        message.header.stamp.nanosec = int(round((time_s - int(time_s)) * 1e9)) % 1_000_000_000
    return message


def match_key(message) -> float | str:
    """Stamp seconds for stamped types (the codec may round them), else the content."""
    if has_stamp(type(message)):
        return message.header.stamp.sec + message.header.stamp.nanosec * 1e-9
    return repr(message)
