"""Synthetic traffic for the embedded runner: messages from a scenario's `traffic` entries.

`build_message` fills a message of the entry's ROS type from its `fields` (nested messages as
mappings; strings formatted with `{seq}`, `{vehicle}`, `{time}`) and stamps `header.stamp` with
the publish time when the type has a std_msgs/Header `header`. `match_key` is what identifies a
message at the far end: that stamp (seconds) when there is one, else the message's content
(`matching` compares it only with the messages of the vehicle whose packet carried it).
A bad field name, value or template raises `TrafficError` naming the scenario key.

`plan_traffic` resolves every traffic entry of a scenario against its codec config (ROS type,
the topic arrivals come out on, destinations) into `TrafficPlan`s, which also keep the publish
schedule (`TrafficPlan.due`).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from acomms_bringup.description.scenario import Scenario, Traffic, Vehicle
from acomms_bringup.run.matching import Stream, stamp_tolerance_s
from acomms_core.codecs.ros_types import resolve_message_class
from acomms_core.mac.seeded_random import seeded_uniform
from acomms_core.ros.ros_support import seconds_to_time_msg, stamp_seconds
from acomms_core.ros_acomms_names import did_you_mean

if TYPE_CHECKING:  # annotations only: the stack checks traffic through this module
    from acomms_bringup.description.stack import StackDescription


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


@functools.cache
def has_stamp(cls: type) -> bool:
    """True when the type has a std_msgs/Header `header` (the runner stamps and matches it;
    asked for every arrival, so once per type)."""
    return cls.get_fields_and_field_types().get("header") == "std_msgs/Header"


def _assign(message, values: Mapping[str, Any], key_path: str, template: dict) -> None:
    fields = message.get_fields_and_field_types()
    for name, value in values.items():
        path = f"{key_path}.{name}"
        if name not in fields:
            raise TrafficError(path, f"{type(message).__name__} has no field {name!r}"
                                     f"{did_you_mean(name, fields)} (fields: {sorted(fields)})")
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
                  time_s: float, key_path: str, origin_s: float = 0.0):
    """One message of the entry, number `seq`, published at ROS time `time_s` (its header
    stamp); `{time}` is the simulated time since origin_s."""
    message = cls()
    _assign(message, fields, f"{key_path}.fields",
            {"seq": seq, "vehicle": vehicle, "time": f"{time_s - origin_s:.1f}"})
    if has_stamp(cls):
        message.header.stamp = seconds_to_time_msg(time_s)
    return message


def match_key(message) -> float | str:
    """Stamp seconds for stamped types (the codec may round them), else the content."""
    if has_stamp(type(message)):
        return stamp_seconds(message.header.stamp)
    return repr(message)


@dataclasses.dataclass
class TrafficPlan:
    """One traffic entry with what the runner needs to publish it and to recognise arrivals."""

    vehicle: Vehicle
    traffic: Traffic
    cls: type
    publish_topic: str  # relative, where destinations' packet_dispatch_node publishes it
    destinations: tuple[str, ...]
    next_due_s: float = 0.0
    seq: int = 0
    seed: int = 0  # the scenario seed: Poisson arrivals repeat run after run
    draws: int = 0  # Poisson intervals drawn so far
    origin_s: float = 0.0  # ROS time of simulated second 0 (clock.start_time): `{time}` counts
                           # from here, as start_seconds does

    def move_origin(self, origin_s: float) -> None:
        """Count from origin_s instead (a wall-clock run: its start, known only then)."""
        self.next_due_s += origin_s - self.origin_s
        self.origin_s = origin_s

    @property
    def label(self) -> str:
        return self.traffic.topic

    @property
    def stream(self) -> Stream:
        return Stream(self.label, self.vehicle.name, self.destinations,
                      stamp_tolerance_s(self.traffic.period_seconds))

    def due(self, now_s: float) -> bool:
        """Whether a message is due at now_s; if so, schedule the next one and count this one
        (`seq`). Periods missed by a clock jump are skipped."""
        if now_s < self.next_due_s:
            return False
        while self.next_due_s <= now_s:
            self.next_due_s += self.interval_s()
        self.seq += 1
        return True

    def interval_s(self) -> float:
        """The time to the next message: the period, or a seeded exponential draw with the
        period as its mean (arrivals: poisson; a function of seed, vehicle, topic and count)."""
        if self.traffic.arrivals != "poisson":
            return self.traffic.period_seconds
        self.draws += 1
        u = seeded_uniform(self.seed, f"{self.vehicle.name}/{self.traffic.topic}", "arrival",
                           self.draws)
        return -self.traffic.period_seconds * math.log1p(-u)

    def build(self, now_s: float):
        """Message number `seq`, published at now_s."""
        message = build_message(self.cls, self.traffic.fields, seq=self.seq,
                                vehicle=self.vehicle.name, time_s=now_s, origin_s=self.origin_s,
                                key_path=self.traffic.key_path)
        if self.traffic.file is not None:   # issue 15: the file's name, bytes and SHA-256
            data = self.traffic.file.read_bytes()
            message.name, message.data = self.traffic.file.name, list(data)
            message.sha256 = list(hashlib.sha256(data).digest())
            message.src = self.vehicle.src     # what the receiver reads (the packet's SRC)
        return message


def _queue_default_dest(stack: StackDescription, vehicle: Vehicle) -> int:
    """The vehicle's message_queue_node default_dest (the node's own default unless set)."""
    from acomms_core.nodes.message_queue_node import PARAMETERS
    from acomms_core.ros.parameter_spec import spec_table

    queue = stack.group(vehicle.name).node("message_queue_node")
    return int(queue.parameters.get("default_dest", spec_table(PARAMETERS)["default_dest"].default))


def _destinations(scenario: Scenario, vehicle: Vehicle, dest: int) -> tuple[str, ...]:
    """The vehicle with SRC dest, or every other vehicle when none has it (broadcast)."""
    by_src = [v.name for v in scenario.vehicles if v.src == dest and v is not vehicle]
    return tuple(by_src or [v.name for v in scenario.vehicles if v is not vehicle])


def _plan_entry(scenario: Scenario, vehicle: Vehicle, traffic: Traffic, codecs,
                default_dest: int) -> TrafficPlan:
    from acomms_core.codecs.ros_types import normalize_type_name

    codec = next((m for m in codecs.message_codecs
                  if traffic.topic in [t.lstrip("~/") for t in m.subscribe_topics()]), None)
    if codec is None or not codec.publish_topic:
        raise TrafficError(f"{traffic.key_path}.topic",
                           f"the codec config has no publish_topic for {traffic.topic}")
    if normalize_type_name(codec.ros_type) != traffic.ros_type:
        raise TrafficError(f"{traffic.key_path}.type",
                           f"codec config says {codec.ros_type}")
    dest = codec.default_dest if codec.default_dest is not None else default_dest
    cls = message_class(traffic.ros_type, traffic.key_path)
    build_message(cls, traffic.fields, seq=0, vehicle=vehicle.name, time_s=0.0,
                  key_path=traffic.key_path)  # a bad field or template: TrafficError now
    plan = TrafficPlan(vehicle, traffic, cls, codec.publish_topic.lstrip("~/"),
                       _destinations(scenario, vehicle, dest),
                       next_due_s=scenario.clock.origin_s + traffic.start_seconds,
                       seed=scenario.seed, origin_s=scenario.clock.origin_s)
    if traffic.arrivals == "poisson":
        plan.next_due_s += plan.interval_s()
    return plan


def plan_traffic(scenario: Scenario, stack: StackDescription) -> list[TrafficPlan]:
    """Resolve every traffic entry against its codec config and ROS type; TrafficError (naming
    the scenario key) if one does not fit."""
    from acomms_core.codecs.config import CodecConfigError, load_codec_config

    plans = []
    for vehicle in scenario.vehicles:
        if not vehicle.traffic:
            continue
        default_dest = _queue_default_dest(stack, vehicle)
        try:
            codecs = load_codec_config(str(vehicle.codec_config))
        except (CodecConfigError, OSError) as exc:
            raise TrafficError(f"codec config of vehicle {vehicle.name}", str(exc)) from None
        plans += [_plan_entry(scenario, vehicle, traffic, codecs, default_dest)
                  for traffic in vehicle.traffic]
    return plans
