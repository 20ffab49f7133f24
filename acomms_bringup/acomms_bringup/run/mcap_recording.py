"""MCAP recording of a run (what `ros2 bag` and Foxglove open): every topic, CDR as published.

- `message_definition("pkg/msg/Type")`: the ros2msg schema text (the type's .msg file followed by
  each dependency's, `MSG: pkg/Type` sections as rosbag2 writes them), read from the installed
  .msg files (AMENT_PREFIX_PATH and this Python's prefix), or written from the Python class's
  field table when no file is installed. ROS-free apart from importing the message class.
- `McapSink`: one .mcap file (mcap-ros2-support's writer: profile ros2, zstd chunks); a schema and a
  channel per topic, registered on first use; `write(topic, type_name, cdr, time_ns)`; thread
  safe; `close()` finishes the file.
- `TopicRecorder(node, sink, now_ns=, exclude_pattern=)`: subscribes `node` to every topic of the
  ROS graph (raw CDR, no decoding; the publishers' reliability and durability) except
  EXCLUDED_TOPICS and topics matching `exclude_pattern` (a regex, `acomms_run --mcap-exclude`:
  e.g. the 1 Hz status topics, which then are not even published at --warp max), stamps
  each message with `now_ns()` (default: the node clock; sim time in a simulated run) and writes
  it to the sink; `scan()` picks up topics that appeared since; after `close()` nothing more is
  written. A sink is anything with
  `write(topic, type_name, cdr, time_ns)` and optionally `add_topic(topic, type_name)` (told when
  a topic is subscribed, before its first message): McapSink, the live view
  (`live_view.LiveView`), `TeeSink(*sinks)` for several, `ExcludingSink(sink, regex)` for a sink
  that leaves some topics out while another still gets them.
"""

from __future__ import annotations

import functools
import importlib
import os
import pathlib
import re
import sys
import threading

EXCLUDED_TOPICS = ("/clock", "/tick", "/tock", "/parameter_events")
PRIMITIVES = {"boolean": "bool", "octet": "byte", "float": "float32", "double": "float64",
              "char": "char", "long double": "float64"}
_BUILTIN = {"bool", "byte", "char", "float32", "float64", "int8", "uint8", "int16", "uint16",
            "int32", "uint32", "int64", "uint64", "string", "wstring"}
SEPARATOR = "=" * 80


def _prefixes() -> list[pathlib.Path]:
    paths = [pathlib.Path(p) for p in os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep)
             if p]
    return paths + [pathlib.Path(sys.prefix)]


def _msg_file(package: str, name: str) -> str | None:
    for prefix in _prefixes():
        path = prefix / "share" / package / "msg" / f"{name}.msg"
        if path.is_file():
            return path.read_text()
    return None


def message_class(type_name: str):
    """The Python class of "pkg/msg/Type" (ImportError / AttributeError when unknown)."""
    package, _, name = type_name.split("/")
    return getattr(importlib.import_module(f"{package}.msg"), name)


def _field_type_text(idl_type: str) -> str:
    """A field type of get_fields_and_field_types() in .msg syntax."""
    match = re.fullmatch(r"sequence<(.+?)(?:, (\d+))?>", idl_type)
    if match:
        inner = _field_type_text(match.group(1))
        return f"{inner}[<={match.group(2)}]" if match.group(2) else f"{inner}[]"
    match = re.fullmatch(r"(.+)\[(\d+)\]", idl_type)
    if match:
        return f"{_field_type_text(match.group(1))}[{match.group(2)}]"
    return PRIMITIVES.get(idl_type, idl_type)


def _generated_definition(type_name: str) -> str:
    cls = message_class(type_name)
    return "\n".join(f"{_field_type_text(t)} {n}"
                     for n, t in cls.get_fields_and_field_types().items()) + "\n"


def _dependencies(text: str, package: str) -> list[str]:
    """The message types ("pkg/Type") the fields of a .msg text use."""
    found = []
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if len(line.split()) < 2 or re.match(r"^\S+\s+\w+\s*=", line):  # blank, constant
            continue
        base = re.sub(r"\[.*\]$", "", line.split()[0]).split("<=")[0]
        if base in _BUILTIN:
            continue
        if base == "Header":
            base = "std_msgs/Header"
        elif "/" not in base:
            base = f"{package}/{base}"
        found.append(base.replace("/msg/", "/"))
    return found


@functools.cache
def message_definition(type_name: str) -> str:
    """The ros2msg schema text of "pkg/msg/Type" with its dependencies (see the docstring)."""
    package, _, name = type_name.split("/")
    sections, seen, pending = [], set(), [f"{package}/{name}"]
    while pending:
        current = pending.pop(0)
        if current in seen:
            continue
        seen.add(current)
        pkg, msg = current.split("/")
        text = _msg_file(pkg, msg) or _generated_definition(f"{pkg}/msg/{msg}")
        sections.append(text if not sections else f"{SEPARATOR}\nMSG: {current}\n{text}")
        pending += _dependencies(text, pkg)
    return "\n".join(section.rstrip("\n") for section in sections) + "\n"


class McapSink:
    """One MCAP file of ROS 2 messages (see the module docstring)."""

    def __init__(self, path: pathlib.Path | str):
        from mcap_ros2.writer import Writer

        self.path = pathlib.Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file = self.path.open("wb")
        self._writer = Writer(self._file)
        self._channels: dict[str, int] = {}
        self._schemas: dict[str, int] = {}
        self._sequence = 0
        self._lock = threading.Lock()
        self.counts: dict[str, int] = {}  # topic -> messages written
        self.closed = False

    def _channel(self, topic: str, type_name: str) -> int:
        if topic not in self._channels:
            raw = self._writer._writer  # the plain mcap writer: CDR is written as it came
            if type_name not in self._schemas:
                self._schemas[type_name] = self._writer.register_msgdef(
                    type_name, message_definition(type_name)).id
            self._channels[topic] = raw.register_channel(
                topic=topic, message_encoding="cdr", schema_id=self._schemas[type_name])
        return self._channels[topic]

    def write(self, topic: str, type_name: str, cdr: bytes, time_ns: int) -> None:
        with self._lock:
            if self.closed:
                return
            channel = self._channel(topic, type_name)
            self._sequence += 1
            self._writer._writer.add_message(channel_id=channel, log_time=time_ns, data=cdr,
                                             publish_time=time_ns, sequence=self._sequence)
            self.counts[topic] = self.counts.get(topic, 0) + 1

    def close(self) -> None:
        with self._lock:
            if not self.closed:
                self.closed = True
                self._writer.finish()
                self._file.close()


class TeeSink:
    """Several sinks fed by one TopicRecorder (e.g. run.mcap and the live view)."""

    def __init__(self, *sinks):
        self.sinks = sinks

    def add_topic(self, topic: str, type_name: str) -> None:
        for sink in self.sinks:
            if callable(getattr(sink, "add_topic", None)):
                sink.add_topic(topic, type_name)

    def write(self, topic: str, type_name: str, cdr: bytes, time_ns: int) -> None:
        for sink in self.sinks:
            sink.write(topic, type_name, cdr, time_ns)


class ExcludingSink:
    """A sink that does not get the topics whose full name matches `pattern` (a regex)."""

    def __init__(self, sink, pattern: str):
        self.sink, self.pattern = sink, re.compile(pattern)

    def write(self, topic: str, type_name: str, cdr: bytes, time_ns: int) -> None:
        if not self.pattern.fullmatch(topic):
            self.sink.write(topic, type_name, cdr, time_ns)


class TopicRecorder:
    """Subscribes a node to every topic of the graph and writes what comes to a sink."""

    def __init__(self, node, sink, exclude=EXCLUDED_TOPICS, now_ns=None,
                 exclude_pattern: str | None = None):
        self.node, self.sink, self.exclude = node, sink, set(exclude)
        self.exclude_pattern = re.compile(exclude_pattern) if exclude_pattern else None
        self.now_ns = now_ns or (lambda: node.get_clock().now().nanoseconds)
        self.subscriptions: dict[str, object] = {}
        self.skipped: dict[str, str] = {}  # topic -> why it is not recorded
        self.closed = False  # `close()`: what comes later is not written

    def _qos(self, topic: str):
        from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

        infos = self.node.get_publishers_info_by_topic(topic)
        best_effort = any(i.qos_profile.reliability == ReliabilityPolicy.BEST_EFFORT
                          for i in infos)
        latched = infos and all(i.qos_profile.durability == DurabilityPolicy.TRANSIENT_LOCAL
                                for i in infos)
        return QoSProfile(depth=1000, reliability=ReliabilityPolicy.BEST_EFFORT if best_effort
                          else ReliabilityPolicy.RELIABLE,
                          durability=DurabilityPolicy.TRANSIENT_LOCAL if latched
                          else DurabilityPolicy.VOLATILE)

    def scan(self) -> int:
        """Subscribe to the topics not yet recorded; how many were added."""
        added = 0
        for topic, types in self.node.get_topic_names_and_types():
            if topic in self.subscriptions or topic in self.exclude or topic in self.skipped:
                continue
            if self.exclude_pattern is not None and self.exclude_pattern.fullmatch(topic):
                self.skipped[topic] = f"matches --mcap-exclude {self.exclude_pattern.pattern}"
                continue
            try:
                cls = message_class(types[0])
            except (ImportError, AttributeError, ValueError) as exc:
                self.skipped[topic] = f"type {types[0]} not importable: {exc}"
                continue
            if callable(getattr(self.sink, "add_topic", None)):
                self.sink.add_topic(topic, types[0])
            self.subscriptions[topic] = self.node.create_subscription(
                cls, topic, lambda data, t=topic, n=types[0]: self._on_message(t, n, data),
                self._qos(topic), raw=True)
            added += 1
        return added

    def _on_message(self, topic: str, type_name: str, data: bytes) -> None:
        if not self.closed:
            self.sink.write(topic, type_name, data, self.now_ns())

    def close(self) -> None:
        """Write nothing more: the run has ended though its nodes still publish."""
        self.closed = True

    def stop(self) -> None:
        for subscription in self.subscriptions.values():
            self.node.destroy_subscription(subscription)
        self.subscriptions.clear()
