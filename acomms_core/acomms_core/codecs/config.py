"""Codec config loader/validator: the ros_acomms YAML schema, unchanged.

The file is a list of packet codecs:

    - codec_name: default
      match_src: []            # decode only packets from these sources (empty: any)
      match_dest: []           # ... to these destinations
      except_src: []           # never packets from these sources
      except_dest: []
      packet_codec: ros        # a registered packet codec (acomms_core.codecs.registry)
      custom_packet_codec_paths: []  # acomms extension: .py files / directories / modules that
                               # register packet codecs (relative to this file), see registry
      miniframe_header: [0xac]
      dataframe_header: []
      remove_headers: true     # accepted; the ros packet codec always strips its headers
      src_names: {1: auv1}     # optional: '{src}' / '{name}' in topics expand per source
      security: {key_file: fleet.keys, mode: authenticate}  # acomms extension: authenticated
                               # packets (acomms_core.security.secured_codec)
      relayable: true          # acomms extension: a 4-byte relay header (origin, final dest,
      relay_hop_limit: 3       # sequence, hops left) gateways forward (acomms_core.relay)
      message_codecs:
        - id: 101              # unique in the file; ros: 0..255, the 8-bit id on the wire
          ros_type: geometry_msgs/Pose   # or geometry_msgs/msg/Pose
          subscribe_topic: pose           # omitted: decode-only
          dynamic_queue_service: get_next # instead of subscribe_topic: a dynamic queue, a user
                               # node's GetNextQueuedMessage service asked at packet-build time
          dynamic_update_topic: update_queue  # UpdateQueuedMessage events for that node
          publish_topic: from_acomms/pose # omitted: encode-only
          default_dest: 121    # omitted: the node's default_dest
          priority: 20         # omitted: the node's default_priority (higher is sent first)
          queue_order: fifo    # fifo | lifo
          queue_maxsize: 10
          is_active: true
          allow_fragmentation: false  # larger messages become fragment sessions
                               # (acomms_core.fragmentation)
          fragment_always: false  # acomms extension: every message is a session (acked)
          tags: [nav]
          ttl_seconds: 60      # acomms extension: queued messages expire (0/omitted: never)
          checksum: crc8       # acomms extension: crc8 | crc32 appended to the message
          accept_src: [1, 2]   # acomms extension: dispatch publishes only from these sources
          on_out_of_range: clamp  # acomms extension: clamp (ltcodecs: clamp numbers, truncate
                               # strings/arrays) | refuse (the message is an encode failure)
          fields: {x: {codec: float, min_value: -100, max_value: 100, precision: 1}}

The file is read by `config_yaml.read_codec_yaml`: duplicate keys refused; `!include`-style tags
of rospy_yaml_include resolve relative to the including file and must stay inside the config's
directory tree (parameter `codec_include_paths` adds trees); environment substitution only with
`codec_allow_env_substitution`. Topic names must be valid ROS names. Keys we do not know are
kept and reported as warnings, so a config written for ros_acomms loads as it is.
A bad config raises CodecConfigError naming the file, the packet codec, the message codec and the
field.
"""

from __future__ import annotations

import dataclasses
import os
import re

from acomms_core.codecs.config_yaml import CodecYamlError, read_codec_yaml
from acomms_core.codecs.message_codec import CodecBuildError, MessageCodec
from acomms_core.codecs.packet_codec import PacketCodec
from acomms_core.codecs.registry import (
    PacketCodecError,
    load_packet_codecs,
    packet_codec_entry,
    source_list,
)
from acomms_core.ros.parameter_spec import ParameterSpec
from acomms_core.security.keys import SecurityConfigError

PACKET_KEYS = {"codec_name", "match_src", "match_dest", "except_src", "except_dest",
               "packet_codec", "miniframe_header", "dataframe_header", "remove_headers",
               "message_codecs", "src_names", "config_version", "custom_packet_codec_paths",
               "security", "relayable", "relay_hop_limit"}
MESSAGE_KEYS = {"id", "message_codec", "subscribe_topic", "publish_topic", "ros_type",
                "default_dest", "queue_order", "queue_maxsize", "is_active",
                "allow_fragmentation", "priority", "tags", "fields", "ttl_seconds", "checksum",
                "dynamic_queue_service", "dynamic_update_topic", "on_out_of_range",
                "accept_src", "fragment_always"}

# Largest queue_maxsize (the queue node's subscription history is as deep as its queue).
MAX_QUEUE_MAXSIZE = 100_000
_TOPIC_TOKEN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


DYNAMIC_QUEUE_KEYS = ("dynamic_queue_service", "dynamic_update_topic")  # ros_acomms' names
TOPIC_KEYS = ("subscribe_topic", "publish_topic", *DYNAMIC_QUEUE_KEYS)  # valid ROS names


def topic_name_problem(topic: str) -> str | None:
    """Why topic is not a valid ROS 2 topic name (rcl's rules, after '{src}', '{name}' and
    rcl's own substitutions are expanded), or None. Relative and '~/' names are valid."""
    name = topic
    for substitution in ("{src}", "{name}", "{node}", "{ns}", "{namespace}"):
        name = name.replace(substitution, "x")
    if not name:
        return "is empty"
    if name == "~":
        return None
    if name.endswith("/"):
        return "ends with '/'"
    if "~" in name[1:] or (name.startswith("~") and name != "~" and name[1] != "/"):
        return "uses '~' other than as a leading '~/'"
    tokens = name.lstrip("~").lstrip("/").split("/")
    for token in tokens:
        if not token:
            return "holds an empty token ('//')"
        if not _TOPIC_TOKEN.match(token):
            return (f"token '{token}' must start with a letter or '_' and hold only letters, "
                    "digits and '_'")
    return None


# The parameters of every node that reads a codec config (message_queue_node,
# packet_dispatch_node), ROS-free specs.
CODEC_CONFIG_PARAMETERS = (
    ParameterSpec("codec_config_file", "", "Path of the ros_acomms-format codec config YAML; "
                  "read at configure (change it, then cleanup + configure)",
                  parameter_type="string"),
    ParameterSpec("custom_packet_codec_paths", "", "Python files, directories (every "
                  "*_packet_codec.py) or module names that register packet codecs, one string "
                  "or a list (as in ros_acomms); loaded at configure", dynamic_typing=True),
    ParameterSpec("codec_include_paths", [""], "Directories whose files the codec config's "
                  "!include tags may read besides the config file's own directory tree",
                  parameter_type="string_array"),
    ParameterSpec("codec_allow_env_substitution", False, "Allow !variable_substitute / "
                  "!variable_include (environment variables) in the codec config"),
    # ros_acomms' names. ros_acomms searches them up the namespace (rospy.search_param: the
    # node's private name, then each enclosing namespace); in ROS 2 a params file section for
    # the namespace (`/auv1/**:`) gives them to every node below it.
    ParameterSpec("packet_codec_file", "", "ros_acomms name of codec_config_file (either may be "
                  "given; both: the same file)", parameter_type="string"),
    ParameterSpec("codec_directory", "", "ros_acomms: directory a relative !include path in the "
                  "codec config is read from (also an allowed include root); '': the including "
                  "file's directory", parameter_type="string"),
)


def codec_config_path(values: dict) -> str:
    """The codec config file: codec_config_file, else ros_acomms' packet_codec_file."""
    return values.get("codec_config_file") or values.get("packet_codec_file") or ""


def check_codec_config_parameters(values: dict) -> str | None:
    """Pure validator piece for CODEC_CONFIG_PARAMETERS (the file itself is read at configure)."""
    ours, theirs = values.get("codec_config_file"), values.get("packet_codec_file")
    if ours and theirs and ours != theirs:
        return (f"codec_config_file {ours!r} and packet_codec_file {theirs!r} name different "
                "files; give one")
    try:
        source_list(values.get("custom_packet_codec_paths"))
    except PacketCodecError as exc:
        return str(exc)
    return None


def codec_config_from_parameters(values: dict) -> CodecConfig:
    """The codec config CODEC_CONFIG_PARAMETERS' values name; CodecConfigError with the reason."""
    return load_codec_config(codec_config_path(values),
                             values.get("custom_packet_codec_paths"),
                             include_paths=values.get("codec_include_paths") or (),
                             allow_env_substitution=bool(
                                 values.get("codec_allow_env_substitution")),
                             codec_directory=values.get("codec_directory") or "")


class CodecConfigError(ValueError):
    """A codec config that cannot be used; the message names file, codec and field."""


@dataclasses.dataclass
class MessageCodecConfig:
    id: int
    ros_type: str
    codec: MessageCodec
    subscribe_topic: str | None = None
    publish_topic: str | None = None
    default_dest: int | None = None      # None: the node's default_dest
    priority: int | None = None          # None: the node's default_priority
    queue_order: str = "fifo"
    queue_maxsize: int = 10
    is_active: bool = True
    allow_fragmentation: bool = False
    tags: tuple = ()
    ttl_seconds: float = 0.0
    checksum: str | None = None
    accept_src: tuple = ()               # dispatch publishes only from these sources (empty: any)
    dynamic_queue_service: str | None = None  # a dynamic queue (acomms_core.queue.dynamic_queue)
    dynamic_update_topic: str | None = None
    packet_codec: PacketCodecConfig | None = None
    params: dict = dataclasses.field(default_factory=dict)  # every key as written

    @property
    def msg_class(self) -> type:
        return self.codec.msg_class

    def subscribe_topics(self) -> list[str]:
        """The subscribe topic, expanded per src_names when it contains {src} or {name}."""
        return _expand(self.subscribe_topic, self.packet_codec.src_names)

    def publish_topics(self) -> dict:
        """{src or None: topic}; None is the topic for every source."""
        topic = self.publish_topic
        if not topic:
            return {}
        if "{src}" in topic or "{name}" in topic:
            return {src: topic.format(src=src, name=name)
                    for src, name in self.packet_codec.src_names.items()}
        return {None: topic}


@dataclasses.dataclass
class PacketCodecConfig:
    codec_name: str
    packet_codec: PacketCodec
    match_src: tuple = ()
    match_dest: tuple = ()
    except_src: tuple = ()
    except_dest: tuple = ()
    remove_headers: bool = True
    src_names: dict = dataclasses.field(default_factory=dict)
    message_codecs: list = dataclasses.field(default_factory=list)

    def matches(self, src: int, dest: int, miniframe: bytes, dataframe: bytes) -> bool:
        """ros_acomms' match order: src, dest, except lists, then header bytes."""
        if self.match_src and src not in self.match_src:
            return False
        if self.match_dest and dest not in self.match_dest:
            return False
        if src in self.except_src or dest in self.except_dest:
            return False
        return self.packet_codec.headers_match(miniframe, dataframe)

    def codecs_by_id(self) -> dict:
        return {m.id: m.codec for m in self.message_codecs}


@dataclasses.dataclass
class CodecConfig:
    path: str
    packet_codecs: list
    warnings: list

    @property
    def message_codecs(self) -> list:
        return [m for p in self.packet_codecs for m in p.message_codecs]

    def by_id(self) -> dict:
        return {m.id: m for m in self.message_codecs}


def _expand(topic, src_names) -> list[str]:
    if not topic:
        return []
    if "{src}" in topic or "{name}" in topic:
        return [topic.format(src=src, name=name) for src, name in src_names.items()]
    return [topic]


def load_codec_config(path: str, custom_packet_codec_paths=(), include_paths=(),
                      allow_env_substitution: bool = False,
                      codec_directory: str = "") -> CodecConfig:
    """Read and validate a codec config file; CodecConfigError says what and where.

    custom_packet_codec_paths: the node parameter (one string or a list; files, directories or
    module names, relative to the working directory), loaded before the config's packet codecs
    are resolved. include_paths / allow_env_substitution / codec_directory: see
    `config_yaml.read_codec_yaml`.
    """
    if not path:
        raise CodecConfigError("no codec config file given (parameter codec_config_file or "
                               "packet_codec_file)")
    try:
        data = read_codec_yaml(path, include_paths, allow_env_substitution, codec_directory)
    except CodecYamlError as exc:
        message = str(exc)
        raise CodecConfigError(message if message.startswith(path) else
                               f"{path}: {message}") from None
    return parse_codec_config(data, path, custom_packet_codec_paths)


def _int_list(value, where: str, key: str) -> tuple:
    if value is None:
        return ()
    if isinstance(value, int) and not isinstance(value, bool):
        value = [value]
    if not isinstance(value, list) or not all(
            isinstance(v, int) and not isinstance(v, bool) for v in value):
        raise CodecConfigError(f"{where}: '{key}' must be a list of integers, got {value!r}")
    return tuple(value)


def _header(value, where: str, key: str) -> bytes:
    values = _int_list(value, where, key)
    if not all(0 <= v <= 255 for v in values):
        raise CodecConfigError(f"{where}: '{key}' must hold byte values 0..255, got {value!r}")
    return bytes(values)


def parse_codec_config(data, path: str = "<memory>",
                       custom_packet_codec_paths=()) -> CodecConfig:
    """Validate an already-loaded config (a list of packet codec mappings)."""
    if not isinstance(data, list) or not data:
        raise CodecConfigError(f"{path}: a codec config is a non-empty list of packet codecs, got "
                               f"{type(data).__name__}")
    try:
        load_packet_codecs(custom_packet_codec_paths)
    except PacketCodecError as exc:
        raise CodecConfigError(f"{path}: custom_packet_codec_paths (node parameter): "
                               f"{exc}") from None
    warnings: list[str] = []
    packet_codecs = []
    seen_ids: dict[int, str] = {}
    seen_topics: dict[str, str] = {}
    for index, entry in enumerate(data):
        packet = _parse_packet_codec(entry, index, path, warnings)
        where = f"{path}: packet codec '{packet.codec_name}'"
        message_entries = entry.get("message_codecs")
        if not isinstance(message_entries, list) or not message_entries:
            raise CodecConfigError(f"{where}: 'message_codecs' must be a non-empty list")
        for m_index, params in enumerate(message_entries):
            message = _parse_message_codec(params, where, m_index, warnings,
                                           packet.packet_codec.message_ids)
            message.packet_codec = packet
            if message.id in seen_ids:
                raise CodecConfigError(f"{where}: duplicate message codec id {message.id} (also "
                                       f"used by {seen_ids[message.id]})")
            seen_ids[message.id] = f"packet codec '{packet.codec_name}' ({message.ros_type})"
            for topic in message.subscribe_topics():
                if topic in seen_topics:
                    raise CodecConfigError(f"{where}: message codec id {message.id}: "
                                           f"subscribe_topic '{topic}' is already used by "
                                           f"{seen_topics[topic]}")
                seen_topics[topic] = f"message codec id {message.id}"
            packet.message_codecs.append(message)
        packet_codecs.append(packet)
    return CodecConfig(path=path, packet_codecs=packet_codecs, warnings=warnings)


def _parse_packet_codec(entry, index: int, path: str, warnings: list) -> PacketCodecConfig:
    """One packet codec entry without its message codecs."""
    if not isinstance(entry, dict):
        raise CodecConfigError(f"{path}: packet codec #{index} must be a mapping")
    name = str(entry.get("codec_name", f"#{index}"))
    where = f"{path}: packet codec '{name}'"
    if entry.get("config_version") is not None:
        raise CodecConfigError(f"{where}: config_version {entry['config_version']!r} is not "
                               "supported (only the legacy one-queue-per-codec layout)")
    codec, options = _build_packet_codec(entry, where, path)
    for key in sorted(set(entry) - PACKET_KEYS - set(options)):
        warnings.append(f"{where}: unknown key '{key}' ignored")
    src_names = entry.get("src_names") or {}
    try:
        src_names = {int(k): str(v) for k, v in dict(src_names).items()}
    except (TypeError, ValueError):
        raise CodecConfigError(f"{where}: src_names must map integer sources to names") from None
    return PacketCodecConfig(
        codec_name=name, packet_codec=codec,
        match_src=_int_list(entry.get("match_src"), where, "match_src"),
        match_dest=_int_list(entry.get("match_dest"), where, "match_dest"),
        except_src=_int_list(entry.get("except_src"), where, "except_src"),
        except_dest=_int_list(entry.get("except_dest"), where, "except_dest"),
        remove_headers=bool(entry.get("remove_headers", True)),
        src_names=src_names)


def _build_packet_codec(entry: dict, where: str, path: str) -> tuple[PacketCodec, tuple]:
    """(the entry's packet codec, the option keys it registered); custom sources load first."""
    kind = entry.get("packet_codec", "ros")
    try:
        load_packet_codecs(entry.get("custom_packet_codec_paths"),
                           os.path.dirname(os.path.abspath(path)))
        registered = packet_codec_entry(kind)
    except PacketCodecError as exc:
        raise CodecConfigError(f"{where}: {exc}") from None
    options = {key: entry[key] for key in registered.options if key in entry}
    headers = (_header(entry.get("miniframe_header", [0xAC]), where, "miniframe_header"),
               _header(entry.get("dataframe_header", []), where, "dataframe_header"))
    security = entry.get("security")
    relayable = _relayable(entry, where)
    wrapped = security is not None or relayable   # the wrapper keeps the headers in clear
    try:
        codec = registered.factory(miniframe_header=b"" if wrapped else headers[0],
                                   dataframe_header=b"" if wrapped else headers[1], **options)
    except CodecConfigError:
        raise
    except Exception as exc:
        raise CodecConfigError(f"{where}: packet_codec '{kind}' refused its settings: "
                               f"{type(exc).__name__}: {exc}") from None
    if not isinstance(codec, PacketCodec):
        raise CodecConfigError(f"{where}: packet_codec '{kind}' built {type(codec).__name__}, "
                               "which lacks the PacketCodec methods")
    if security is not None:
        from acomms_core.security.secured_codec import secure_packet_codec  # imports codecs

        try:
            codec = secure_packet_codec(codec, security,
                                        *((b"", b"") if relayable else headers),
                                        os.path.dirname(os.path.abspath(path)))
        except SecurityConfigError as exc:
            raise CodecConfigError(f"{where}: security: {exc}") from None
    if relayable:
        from acomms_core.relay.relay_codec import RelayPacketCodec

        codec = RelayPacketCodec(codec, *headers, hop_limit=entry.get("relay_hop_limit", 3))
    return codec, registered.options


def _relayable(entry: dict, where: str) -> bool:
    """The entry's `relayable` (issue 32, acomms_core.relay) and its relay_hop_limit, checked."""
    relayable = entry.get("relayable", False)
    if not isinstance(relayable, bool):
        raise CodecConfigError(f"{where}: relayable must be true or false, got {relayable!r}")
    hop_limit = entry.get("relay_hop_limit", 3)
    if not isinstance(hop_limit, int) or isinstance(hop_limit, bool) or not 1 <= hop_limit <= 15:
        raise CodecConfigError(f"{where}: relay_hop_limit must be an integer 1..15, got "
                               f"{hop_limit!r}")
    if "relay_hop_limit" in entry and not relayable:
        raise CodecConfigError(f"{where}: relay_hop_limit needs relayable: true")
    if relayable and any(isinstance(m, dict) and m.get("allow_fragmentation")
                         for m in entry.get("message_codecs") or ()):
        raise CodecConfigError(f"{where}: allow_fragmentation is not supported in a relayable "
                               "packet codec (fragment sessions are kept per transmitter); put "
                               "those message codecs in another packet codec")
    return relayable


def _parse_message_codec(params, where: str, index: int, warnings: list,
                         message_ids: range) -> MessageCodecConfig:
    if not isinstance(params, dict):
        raise CodecConfigError(f"{where}: message codec #{index} must be a mapping")
    codec_id = params.get("id")
    if not isinstance(codec_id, int) or isinstance(codec_id, bool) or codec_id not in message_ids:
        raise CodecConfigError(f"{where}: message codec #{index}: 'id' must be an integer "
                               f"{message_ids.start}..{message_ids.stop - 1} (the message id on "
                               f"the wire of this packet codec), got {codec_id!r}")
    ros_type = params.get("ros_type")
    here = f"{where}: message codec id {codec_id}" + (f" ({ros_type})" if ros_type else "")
    if not isinstance(ros_type, str) or not ros_type:
        raise CodecConfigError(f"{here}: 'ros_type' is required (e.g. std_msgs/Float32)")
    for key in sorted(set(params) - MESSAGE_KEYS):
        warnings.append(f"{here}: unknown key '{key}' ignored")
    if params.get("dynamic_queue_service") and params.get("subscribe_topic"):
        raise CodecConfigError(f"{here}: give subscribe_topic or dynamic_queue_service, not both")

    def check(key, ok, expected, default=None):
        value = params.get(key, default)
        if value is not None and not ok(value):
            raise CodecConfigError(f"{here}: '{key}' must be {expected}, got {value!r}")
        return value

    def is_int(v):
        return isinstance(v, int) and not isinstance(v, bool)

    order = check("queue_order", lambda v: v in ("fifo", "lifo"), "fifo or lifo", "fifo")
    maxsize = check("queue_maxsize", lambda v: is_int(v) and 1 <= v <= MAX_QUEUE_MAXSIZE,
                    f"an integer 1..{MAX_QUEUE_MAXSIZE}", 10)
    priority = check("priority", lambda v: is_int(v) and 0 <= v <= 32767,
                     "an integer 0..32767")
    dest = check("default_dest", lambda v: is_int(v) and -1 <= v <= 255, "an integer 0..255")
    active = check("is_active", lambda v: isinstance(v, bool), "true or false", True)
    tags = check("tags", lambda v: isinstance(v, list) and all(isinstance(t, str) for t in v),
                 "a list of strings", [])
    ttl = check("ttl_seconds", lambda v: isinstance(v, (int, float)) and not isinstance(v, bool)
                and v >= 0, "a number >= 0", 0)
    checksum = check("checksum", lambda v: v in ("crc8", "crc32"), "crc8 or crc32")
    for key in TOPIC_KEYS:
        check(key, lambda v: isinstance(v, str) and v.strip(), "a non-empty topic name")
        if params.get(key) is not None and topic_name_problem(params[key]):
            raise CodecConfigError(f"{here}: '{key}' {params[key]!r} is not a valid ROS topic "
                                   f"name: {topic_name_problem(params[key])}")
    try:
        codec = MessageCodec(ros_type, params.get("fields"), checksum=checksum,
                             on_out_of_range=params.get("on_out_of_range", "clamp"),
                             sender_src=True)
    except CodecBuildError as exc:
        raise CodecConfigError(f"{here}: {exc}") from None
    return MessageCodecConfig(
        id=codec_id, ros_type=ros_type, codec=codec,
        subscribe_topic=params.get("subscribe_topic"), publish_topic=params.get("publish_topic"),
        default_dest=dest, priority=priority, queue_order=order, queue_maxsize=maxsize,
        is_active=active, allow_fragmentation=bool(params.get("allow_fragmentation", False)),
        tags=tuple(tags), ttl_seconds=float(ttl), checksum=checksum,
        accept_src=_int_list(params.get("accept_src"), here, "accept_src"), params=dict(params),
        **{key: params.get(key) for key in DYNAMIC_QUEUE_KEYS})
