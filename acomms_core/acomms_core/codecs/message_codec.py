"""rclpy-aware message codec: ROS 2 messages <-> bits, field by field, with ltcodecs field codecs.

A message codec is built from a ros_acomms `fields` mapping ({field: {codec: ..., params}}) or,
when that is omitted, from the message definition (see `ros_types.default_field_params`). Leaf
fields are encoded by ltcodecs' own field codec classes, so the bits are exactly ltcodecs' bits
for the same field config. What ltcodecs cannot do with rclpy classes is done here: nested
messages (`codec: msg` or a nested field without config), arrays of messages (`fixed_len_array`,
`variable_len_array`, `variable_len_array_optional` with `element_type: msg` or a message type —
ltcodecs' array codecs still encode the length prefix, our codec encodes each element) and turning
decoded values back into the rclpy field types.

Optional per-message checksum (`checksum: crc8|crc32`): a CRC-8 (SAE J1850) or CRC-32C (iSCSI)
of the message's encoded bits, zero-padded to whole bytes, appended after them. A message whose
checksum does not match raises ChecksumError and must not be published. (ltcodecs' own
RosMessageCodec computes its CRC over a msgpack dump of the decoded values instead; that scheme
can reject good messages when a float codec's decoded value differs in the last bit from its
encoded value, so we checksum the bits.)
"""

from __future__ import annotations

import array
import inspect
import threading

import numpy as np
from bitstring import BitArray, Bits, ConstBitStream
from crccheck.crc import Crc8SaeJ1850, Crc32Iscsi
from rosidl_parser.definition import (
    AbstractNestedType,
    AbstractString,
    BasicType,
    NamespacedType,
)

from acomms_core.codecs._ltcodecs import (
    FIELD_CODEC_CLASSES,
    METADATA_DECODERS,
    METADATA_ENCODERS,
    MultipleFieldCodec,
    ltcodecs,
)
from acomms_core.codecs.field_bounds import (
    FIELD_CODEC_OVERRIDES,
    OutOfBounds,
    codec_checker,
    ros_value_checker,
    target_checkers,
)
from acomms_core.codecs.ros_types import (
    UnknownRosType,
    default_field_params,
    message_fields,
    namespaced_class,
    resolve_message_class,
    type_name_of,
)

CHECKSUM_BITS = {"crc8": 8, "crc32": 32}
MESSAGE_CODEC_NAMES = ("msg", "ros_msg")
ARRAY_CODEC_NAMES = ("fixed_len_array", "variable_len_array", "variable_len_array_optional")
TIME_CODEC_NAMES = ("time", "rostime")
# What the encoder does with a value outside its field codec's bounds: ltcodecs' behaviour
# (clamp numbers, truncate strings and arrays) or refuse the message (EncodeError).
ON_OUT_OF_RANGE = ("clamp", "refuse")
NON_ASCII_REPLACEMENT = "?"
_encode_notes = threading.local()   # per-thread tallies of the message being encoded


class CodecBuildError(ValueError):
    """A field config that cannot be built; `field` is the dotted field path ('' = message)."""

    def __init__(self, field: str, reason: str):
        super().__init__(f"field '{field}': {reason}" if field else reason)
        self.field = field
        self.reason = reason


class EncodeError(ValueError):
    """A message value the codec cannot encode (e.g. a string that is not ASCII)."""


class DecodeError(ValueError):
    """Bits that do not decode to a valid message (truncated, or a value the type refuses).

    `position_known` is true when every bit of the message was read (only a value was refused), so
    a packet decoder can go on with the next message.
    """

    def __init__(self, message: str, position_known: bool = False):
        super().__init__(message)
        self.position_known = position_known


class ChecksumError(DecodeError):
    """The message's crc8/crc32 does not match its bits."""

    def __init__(self, message: str):
        super().__init__(message, position_known=True)


def checksum_of(kind: str, bits: Bits) -> int:
    data = Bits(bits).tobytes()  # zero-padded to a whole byte
    return Crc8SaeJ1850.calc(data) if kind == "crc8" else Crc32Iscsi.calc(data)


def _length_bits(codec, which: str) -> int:
    value = getattr(codec, which)
    return value() if callable(value) else value  # ltcodecs' PaddingCodec defines methods


# ---------------------------------------------------------------------------------------------
# Value conversion between rclpy field values and what ltcodecs' field codecs take and return.

def _prepare_generic(value):
    if isinstance(value, (np.ndarray, array.array)):
        value = value.tolist()
    elif isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, list) and value and isinstance(value[0], bytes):
        value = [item[0] if len(item) else 0 for item in value]  # octet[] -> ints
    return value


def ascii_only(text: str) -> str:
    """text with every non-ASCII character replaced by '?', tallied for the message's encode."""
    if text.isascii():
        return text
    replaced = sum(1 for c in text if not c.isascii())
    _encode_notes.non_ascii_replaced = getattr(_encode_notes, "non_ascii_replaced", 0) + replaced
    return "".join(c if c.isascii() else NON_ASCII_REPLACEMENT for c in text)


def _make_prepare(codec):
    bytes_like = isinstance(codec, (ltcodecs.BytesCodec, ltcodecs.LzmaCodec))
    string_like = isinstance(codec, (ltcodecs.AsciiStringCodec, ltcodecs.StringEnumCodec))
    ascii_codec = isinstance(codec, ltcodecs.AsciiStringCodec)
    ascii_elements = isinstance(getattr(codec, "element_field_codec", None),
                                ltcodecs.AsciiStringCodec)

    def prepare(value):
        if isinstance(value, bytes) and not bytes_like:
            if string_like:
                value = value.decode("ascii", "replace")
            elif len(value) == 1:
                return value[0]  # octet scalar
        if ascii_codec and isinstance(value, str):
            return ascii_only(value)
        value = _prepare_generic(value)
        if ascii_elements and isinstance(value, list):
            return [ascii_only(v) if isinstance(v, str) else v for v in value]
        if bytes_like:
            if isinstance(value, str):
                return value.encode("latin-1")
            return bytes(value)
        return value

    return prepare


def _to_int(value):
    if isinstance(value, float):
        return int(round(value))
    return int(value)


def _time_parts(value):
    if hasattr(value, "secs") and hasattr(value, "nsecs"):  # armw native time
        return int(value.secs), int(value.nsecs)
    if hasattr(value, "sec") and hasattr(value, "nanosec"):
        return int(value.sec), int(value.nanosec)
    total_ns = int(round(float(value) * 1e9))
    return total_ns // 1_000_000_000, total_ns % 1_000_000_000


def _make_convert(slot_type, convert=None):
    """A function that turns a decoded value into what the rclpy field setter accepts, refusing
    (OutOfBounds) what the field's ROS type cannot hold (ints wider than the field, ...)."""
    if slot_type is None:
        return lambda value: value
    convert = convert or _make_raw_convert(slot_type)
    is_time = (isinstance(slot_type, NamespacedType)
               and set(namespaced_class(slot_type).get_fields_and_field_types())
               == {"sec", "nanosec"})
    check = ros_value_checker(slot_type, is_time=is_time)

    def checked(value):
        converted = convert(value)
        check(converted)
        return converted

    return checked


def _is_integer_slot(slot_type) -> bool:
    return isinstance(slot_type, BasicType) and ("int" in slot_type.typename
                                                 or slot_type.typename == "octet")


def _make_raw_convert(slot_type):
    if slot_type is None:
        return lambda value: value
    if isinstance(slot_type, BasicType):
        name = slot_type.typename
        if name == "boolean":
            return bool
        if name in ("float", "double"):
            return float
        if name == "octet":
            return lambda v: v if isinstance(v, bytes) else bytes([_to_int(v)])
        if name in ("char", "wchar"):
            return lambda v: chr(v) if isinstance(v, int) and name == "wchar" else v
        return _to_int
    if isinstance(slot_type, AbstractString):
        return lambda v: v.decode("ascii", "replace") if isinstance(v, bytes) else str(v)
    if isinstance(slot_type, NamespacedType):
        cls = namespaced_class(slot_type)
        if set(cls.get_fields_and_field_types()) == {"sec", "nanosec"}:  # Time, Duration

            def to_time(value):
                if isinstance(value, cls):
                    return value
                sec, nanosec = _time_parts(value)
                return cls(sec=sec, nanosec=nanosec)

            return to_time
        return lambda v: v
    if isinstance(slot_type, AbstractNestedType):
        element = _make_raw_convert(slot_type.value_type)
        is_bytes_field = (isinstance(slot_type.value_type, BasicType)
                          and slot_type.value_type.typename == "uint8")

        def convert_list(value):
            if isinstance(value, bytes) and is_bytes_field:
                return list(value)
            return [element(v) for v in value]

        return convert_list
    return lambda v: v


# ---------------------------------------------------------------------------------------------
# Fields of a message codec.

def _checked(name: str, check, value):
    """check(value) with an OutOfBounds turned into a DecodeError naming the field."""
    try:
        check(value)
    except OutOfBounds as exc:
        raise DecodeError(f"field '{name}': {exc}", position_known=exc.framing_intact) from None
    return value


def _read(name: str, decode, stream):
    """decode(stream), with an OutOfBounds of a bounded decoder (lzma, BCD) as a DecodeError."""
    try:
        return decode(stream)
    except OutOfBounds as exc:
        raise DecodeError(f"field '{name}': {exc}", position_known=exc.framing_intact) from None


def _refuse_on_encode(name: str, check, value) -> None:
    try:
        check(value)
    except OutOfBounds as exc:
        raise EncodeError(f"field '{name}': {exc}") from None


def _note_clamp(path: str, check, value) -> None:
    """Note (for this thread's encode) that the codec will clamp value, and why."""
    try:
        check(value)
    except OutOfBounds as exc:
        _encode_notes.clamped.append((path, str(exc)))


class _LeafField:
    """A field encoded by one ltcodecs FieldCodec (also arrays of messages, via an adapter).

    Decoded values are checked against the codec's bounds (`field_bounds.codec_checker`);
    `refuse` (on_out_of_range: refuse) applies the same check before encoding. A fixed_len_array
    refuses a value with another element count (ltcodecs would encode fewer elements)."""

    def __init__(self, name, codec, slot_type, convert=None, refuse=False, clamp_path=None):
        self.name = name
        self.codec = codec
        # a time field: a value its codec clamps is noted by this path (MessageCodec.encode
        # reports each field's first one as a clamp warning)
        self.clamp_path = clamp_path
        self.has_slot = slot_type is not None
        self.needs_value = getattr(codec, "requires_encode_value", True)
        self.prepare = _make_prepare(codec)
        self.convert = _make_convert(slot_type, convert)
        self.check = codec_checker(codec)
        self.refuse = refuse
        self.fixed_count = (codec.length if isinstance(codec, ltcodecs.FixedLenArrayCodec)
                            else None)
        self.min_bits = _length_bits(codec, "min_length_bits")
        self.max_bits = _length_bits(codec, "max_length_bits")

    def encode(self, msg, message_dict):
        value = self.prepare(getattr(msg, self.name)) if self.needs_value else None
        if self.fixed_count is not None and len(value) != self.fixed_count:
            raise EncodeError(f"field '{self.name}': {len(value)} elements, fixed_len_array "
                              f"length is {self.fixed_count}")
        if self.refuse:
            _refuse_on_encode(self.name, self.check, value)
        elif self.clamp_path is not None:
            _note_clamp(self.clamp_path, self.check, value)
        bits, _ = self.codec.encode(value)
        return bits

    def decode(self, stream, packet, out):
        out[self.name] = _checked(self.name, self.check,
                                  _read(self.name, self.codec.decode, stream))

    def assign(self, msg, raw):
        if self.has_slot and self.name in raw and raw[self.name] is not None:
            setattr(msg, self.name, self.convert(raw[self.name]))


class _MultiField:
    """An ltcodecs MultipleFieldCodec (optional, variable_len_bit_array, ...): sets extra fields."""

    def __init__(self, name, codec, slot_type, slot_types, refuse=False):
        self.name = name
        self.codec = codec
        self.prepare = _make_prepare(codec)
        self.converts = {n: _make_convert(t) for n, t in slot_types.items()}
        self.check = codec_checker(codec)
        self.target_checks = target_checkers(codec)
        self.refuse = refuse
        self.min_bits = _length_bits(codec, "min_length_bits")
        self.max_bits = _length_bits(codec, "max_length_bits")

    def encode(self, msg, message_dict):
        value = self.prepare(getattr(msg, self.name))
        values = message_dict(msg)
        if self.refuse:
            _refuse_on_encode(self.name, self.check, value)
            for target, check in self.target_checks.items():
                if target in values:
                    _refuse_on_encode(target, check, values[target])
        bits, _, _ = self.codec.encode_multiple(value, values)
        return bits

    def decode(self, stream, packet, out):
        value, extras = self.codec.decode_multiple(stream)
        out[self.name] = _checked(self.name, self.check, value)
        for target, target_value in extras.items():
            if target in self.target_checks:
                _checked(target, self.target_checks[target], target_value)
        out.update(extras)

    def assign(self, msg, raw):
        targets = [self.name, *(getattr(self.codec, "target_fields", None) or ())]
        bit_length_field = getattr(self.codec, "bit_length_field", None)
        if bit_length_field:
            targets.append(bit_length_field)
        for name in targets:
            if name in self.converts and raw.get(name) is not None:
                setattr(msg, name, self.converts[name](raw[name]))


class _NestedField:
    def __init__(self, name, codec: MessageCodec):
        self.name = name
        self.codec = codec
        self.min_bits = codec.body_min_bits
        self.max_bits = codec.body_max_bits

    def encode(self, msg, message_dict):
        return self.codec.encode_body(getattr(msg, self.name))

    def decode(self, stream, packet, out):
        out[self.name] = self.codec.decode_values(stream, packet)

    def assign(self, msg, raw):
        setattr(msg, self.name, self.codec.build(raw[self.name]))


class _MetadataField:
    """Zero bits; on decode the value comes from the ReceivedPacket (src, dest, toa, snr_in)."""

    min_bits = max_bits = 0

    def __init__(self, name, metadata_name, slot_type):
        self.name = name
        self.metadata_name = metadata_name
        self.has_slot = slot_type is not None
        self.convert = _make_convert(slot_type)
        self.codec = ltcodecs.MetadataFieldCodec(metadata_name)

    def encode(self, msg, message_dict):
        return Bits()

    def decode(self, stream, packet, out):
        if packet is None or self.metadata_name not in METADATA_DECODERS:
            return
        try:
            out[self.name] = self.codec.decode_metadata(packet, METADATA_DECODERS)
        except (AttributeError, KeyError):
            pass

    def assign(self, msg, raw):
        if self.has_slot and self.name in raw:
            setattr(msg, self.name, self.convert(raw[self.name]))


class _MessageElementCodec:
    """Stands in for an ltcodecs element codec so ltcodecs' array codecs carry rclpy messages."""

    requires_encode_value = True

    def __init__(self, codec: MessageCodec):
        self.codec = codec

    def encode(self, value):
        return self.codec.encode_body(value), None

    def decode(self, bits_to_decode):
        return self.codec.decode_values(bits_to_decode, None)

    @property
    def min_length_bits(self):
        return self.codec.body_min_bits

    @property
    def max_length_bits(self):
        return self.codec.body_max_bits


# ---------------------------------------------------------------------------------------------

def _required_parameters(cls) -> list[str]:
    try:
        signature = inspect.signature(cls.__init__)
    except (TypeError, ValueError):
        return []
    return [p.name for p in list(signature.parameters.values())[1:]
            if p.default is inspect.Parameter.empty
            and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]


def _check_codec_params(codec_name: str, params: dict, path: str, what: str = "") -> None:
    """Missing parameters and min > max, reported before ltcodecs raises something vaguer."""
    if codec_name not in FIELD_CODEC_CLASSES:
        known = ", ".join(sorted(FIELD_CODEC_CLASSES))
        raise CodecBuildError(path, f"unknown {what}codec '{codec_name}' (ltcodecs knows: {known})")
    missing = [p for p in _required_parameters(FIELD_CODEC_CLASSES[codec_name])
               if p not in params]
    if missing:
        raise CodecBuildError(path, f"{what}codec '{codec_name}' is missing required parameter"
                                    f"{'s' if len(missing) > 1 else ''} "
                                    + ", ".join(f"'{m}'" for m in missing))
    low, high = params.get("min_value"), params.get("max_value")
    if isinstance(low, (int, float)) and isinstance(high, (int, float)) and low > high:
        raise CodecBuildError(path, f"{what}codec '{codec_name}' has min_value {low} > "
                                    f"max_value {high}")
    if params.get("length_mode") == "fill_outer":
        raise CodecBuildError(path, "length_mode 'fill_outer' is not supported: in a ros packet a "
                                    "message is followed by other messages, not by the packet end")


def _construct(codec_name: str, params: dict, path: str):
    cls = FIELD_CODEC_OVERRIDES.get(codec_name, FIELD_CODEC_CLASSES[codec_name])
    try:
        return cls(**params)
    except CodecBuildError:
        raise
    except Exception as exc:  # ltcodecs raises TypeError/ValueError/KeyError/ZeroDivision...
        raise CodecBuildError(path, f"codec '{codec_name}' refused its parameters: "
                                    f"{type(exc).__name__}: {exc}") from None


def _names_latitude(field_name: str) -> bool:
    """ccl_latlon's bound without lat_not_lon: ±90 for a field named like a latitude."""
    name = field_name.lower()
    return "lat" in name and "lon" not in name


def _slot_name(slot_type) -> str:
    return getattr(slot_type, "typename", None) or type(slot_type).__name__


class MessageCodec:
    """Encode/decode one rclpy message type with a ros_acomms field config (or defaults).

    Every decoded value is checked against its field codec's bounds and its ROS field type
    (`field_bounds`); a violation is a DecodeError (position_known when the framing around it
    is intact), never a published value. on_out_of_range: 'clamp' (ltcodecs' encoding: values
    clamped, strings and arrays truncated) or 'refuse' (EncodeError instead).
    """

    def __init__(self, ros_type, fields: dict | None = None, checksum: str | None = None,
                 _path: str = "", on_out_of_range: str = "clamp", sender_src: bool = False):
        """sender_src: a message type with an integer `src` field that `fields` leaves out gets
        the received packet's SRC there on decode, as `src: {codec: src}` would (zero bits:
        nothing more is sent); the packet codecs' top-level message codecs set it."""
        try:
            self.msg_class = resolve_message_class(ros_type)
        except UnknownRosType as exc:
            raise CodecBuildError(_path, str(exc)) from None
        self.type_name = type_name_of(self.msg_class)
        if checksum not in (None, *CHECKSUM_BITS):
            raise CodecBuildError(_path, f"checksum must be one of {sorted(CHECKSUM_BITS)}, "
                                         f"got {checksum!r}")
        self.checksum = checksum
        if on_out_of_range not in ON_OUT_OF_RANGE:
            raise CodecBuildError(_path, f"on_out_of_range must be one of "
                                         f"{', '.join(ON_OUT_OF_RANGE)}, got {on_out_of_range!r}")
        self.on_out_of_range = on_out_of_range
        self.refuse = on_out_of_range == "refuse"
        self.slot_types = message_fields(self.msg_class)
        if fields is not None and not isinstance(fields, dict):
            raise CodecBuildError(_path, f"'fields' must be a mapping, got {type(fields).__name__}")
        if not fields:
            fields = {name: default_field_params(t) for name, t in self.slot_types.items()}
        self.fields_config = fields
        self.dest_field: str | None = None
        self._fields = []
        for name, params in fields.items():
            path = f"{_path}.{name}" if _path else str(name)
            self._fields.append(self._build_field(str(name), params, path))
        if sender_src and "src" not in fields and _is_integer_slot(self.slot_types.get("src")):
            self._fields.append(_MetadataField("src", "src", self.slot_types["src"]))
        self._needs_message_dict = any(isinstance(f, _MultiField) for f in self._fields)
        self.body_min_bits = sum(f.min_bits for f in self._fields)
        self.body_max_bits = sum(f.max_bits for f in self._fields)
        self.checksum_bits = CHECKSUM_BITS.get(checksum, 0)
        self._clamp_warned: set[str] = set()  # time fields already reported clamped

    # -- construction ---------------------------------------------------------------------------
    def _build_field(self, name: str, params, path: str):
        if not isinstance(params, dict) or "codec" not in params:
            raise CodecBuildError(path, "needs a mapping with a 'codec' key")
        params = dict(params)
        codec_name = params["codec"]
        slot_type = self.slot_types.get(name)
        if codec_name in METADATA_DECODERS or codec_name in METADATA_ENCODERS:
            if codec_name in METADATA_ENCODERS:
                if slot_type is None:
                    raise CodecBuildError(path, f"not a field of {self.type_name} (codec "
                                                f"'{codec_name}' reads the destination from it)")
                self.dest_field = name
            return _MetadataField(name, codec_name, slot_type)
        if codec_name in MESSAGE_CODEC_NAMES:
            return _NestedField(name, self._nested_codec(params, slot_type, path))
        _check_codec_params(codec_name, params, path)
        codec_class = FIELD_CODEC_CLASSES[codec_name]
        if slot_type is None and getattr(codec_class, "requires_encode_value", True):
            raise CodecBuildError(path, f"not a field of {self.type_name} (fields: "
                                        f"{', '.join(self.slot_types)})")
        if codec_name in ARRAY_CODEC_NAMES and self._is_message_element(params, slot_type):
            codec = self._message_array_codec(codec_name, params, slot_type, path)
            element = (codec.array_codec if codec_name == "variable_len_array_optional"
                       else codec).element_field_codec.codec
            if codec_name == "variable_len_array_optional":
                field = _MultiField(name, codec, slot_type, self.slot_types, self.refuse)
                field.converts[name] = lambda raw: [element.build(v) for v in raw]
                return field
            return _LeafField(name, codec, slot_type,
                              convert=lambda raw: [element.build(v) for v in raw],
                              refuse=self.refuse)
        if codec_name in ARRAY_CODEC_NAMES:
            element_type = params.get("element_type")
            element_params = dict(params.get("element_params") or {})
            _check_codec_params(element_type, element_params, path, what="element ")
            if element_type in ARRAY_CODEC_NAMES or element_type in MESSAGE_CODEC_NAMES:
                raise CodecBuildError(path, f"element_type '{element_type}' is not supported here")
        if codec_name in TIME_CODEC_NAMES:
            params.pop("ros_type", None)  # armw cannot load rclpy types; we convert ourselves
        for nested_key in ("target_fields", "fields"):
            for target, target_params in (params.get(nested_key) or {}).items():
                if isinstance(target_params, dict) and "codec" in target_params:
                    _check_codec_params(target_params["codec"], target_params,
                                        f"{path}.{target}")
        codec = _construct(codec_name, params, path)
        if codec_name == "ccl_latlon":  # the codec cannot tell; the bound check needs to
            codec.lat_not_lon = bool(params.get("lat_not_lon", _names_latitude(name)))
        if isinstance(codec, MultipleFieldCodec):
            return _MultiField(name, codec, slot_type, self.slot_types, self.refuse)
        return _LeafField(name, codec, slot_type, refuse=self.refuse,
                          clamp_path=path if codec_name in TIME_CODEC_NAMES else None)

    def _nested_codec(self, params, slot_type, path) -> MessageCodec:
        element_slot = slot_type
        if isinstance(slot_type, AbstractNestedType):
            element_slot = slot_type.value_type
        ros_type = params.get("ros_type")
        if ros_type:
            try:
                cls = resolve_message_class(ros_type)
            except UnknownRosType as exc:
                raise CodecBuildError(path, str(exc)) from None
            if (isinstance(element_slot, NamespacedType)
                    and namespaced_class(element_slot) is not cls):
                raise CodecBuildError(path, f"ros_type '{ros_type}' does not match the field's "
                                            f"type {type_name_of(namespaced_class(element_slot))}")
        elif isinstance(element_slot, NamespacedType):
            cls = namespaced_class(element_slot)
        else:
            raise CodecBuildError(path, "codec 'msg' needs a message-typed field or a 'ros_type'")
        if element_slot is not None and not isinstance(element_slot, NamespacedType):
            raise CodecBuildError(path, f"codec 'msg' on a field of type {_slot_name(slot_type)}, "
                                        "which is not a message")
        return MessageCodec(cls, params.get("fields"), _path=path,
                            on_out_of_range=self.on_out_of_range)

    @staticmethod
    def _is_message_element(params, slot_type) -> bool:
        element_type = params.get("element_type")
        if element_type in MESSAGE_CODEC_NAMES:
            return True
        if isinstance(element_type, str) and "/" in element_type:
            return True
        return (element_type is None and isinstance(slot_type, AbstractNestedType)
                and isinstance(slot_type.value_type, NamespacedType))

    def _message_array_codec(self, codec_name, params, slot_type, path):
        element_params = dict(params.get("element_params") or {})
        element_type = params.get("element_type")
        if isinstance(element_type, str) and "/" in element_type:
            element_params.setdefault("ros_type", element_type)
        element = self._nested_codec(element_params, slot_type, f"{path}[]")
        array_params = {k: v for k, v in params.items() if k not in ("element_params",)}
        array_params["element_type"] = "bool"  # placeholder, replaced by our element codec below
        _check_codec_params(codec_name, array_params, path)
        codec = _construct(codec_name, array_params, path)
        holder = codec.array_codec if codec_name == "variable_len_array_optional" else codec
        holder.element_field_codec = _MessageElementCodec(element)
        return codec

    # -- sizes ------------------------------------------------------------------------------------
    @property
    def min_length_bits(self) -> int:
        return self.body_min_bits + self.checksum_bits

    @property
    def max_length_bits(self) -> int:
        return self.body_max_bits + self.checksum_bits

    @property
    def is_fixed_length(self) -> bool:
        return self.body_min_bits == self.body_max_bits

    # -- encode -----------------------------------------------------------------------------------
    def _message_dict(self, msg) -> dict:
        return {name: _prepare_generic(getattr(msg, name)) for name in self.slot_types}

    def encode_body(self, msg) -> BitArray:
        bits = BitArray()
        for field in self._fields:
            try:
                bits.append(field.encode(msg, self._message_dict))
            except EncodeError:
                raise
            except Exception as exc:
                raise EncodeError(f"{self.type_name} field '{field.name}': "
                                  f"{type(exc).__name__}: {exc}") from None
        return bits

    def encode(self, msg) -> tuple[BitArray, dict | None]:
        """(bits including checksum, metadata); metadata {'dest': n} when a field sets the dest,
        {'non_ascii_replaced': n} when n non-ASCII characters were sent as '?'."""
        if not isinstance(msg, self.msg_class):
            raise EncodeError(f"expected {self.type_name}, got {type(msg).__name__}")
        _encode_notes.non_ascii_replaced = 0
        _encode_notes.clamped = []
        bits = self.encode_body(msg)
        if self.checksum:
            bits.append(Bits(uint=checksum_of(self.checksum, bits), length=self.checksum_bits))
        metadata = {}
        if self.dest_field is not None:
            metadata["dest"] = int(getattr(msg, self.dest_field))
        if _encode_notes.non_ascii_replaced:
            metadata["non_ascii_replaced"] = _encode_notes.non_ascii_replaced
        warnings = self._first_clamps(_encode_notes.clamped)
        if warnings:
            metadata["clamp_warnings"] = warnings
        return bits, metadata or None

    def _first_clamps(self, clamped: list) -> list[str]:
        """One warning per time field, the first time its codec clamps a value (a clock
        outside the codec's epoch range, e.g. a simulated clock at 1970, clamps every one)."""
        warnings = []
        for path, reason in clamped:
            if path not in self._clamp_warned:
                self._clamp_warned.add(path)
                warnings.append(f"{self.type_name} field '{path}': {reason}; the codec clamps "
                                f"to its range (further clamps of this field are not logged)")
        return warnings

    # -- decode -----------------------------------------------------------------------------------
    def decode_values(self, stream: ConstBitStream, packet=None) -> dict:
        raw = {}
        for field in self._fields:
            field.decode(stream, packet, raw)
        return raw

    def build(self, raw: dict):
        msg = self.msg_class()
        for field in self._fields:
            try:
                field.assign(msg, raw)
            except DecodeError:
                raise
            except Exception as exc:
                raise DecodeError(f"{self.type_name} field '{field.name}': value "
                                  f"{raw.get(field.name)!r} refused: {exc}",
                                  position_known=True) from None
        return msg

    def decode(self, stream: ConstBitStream, received_packet=None):
        """Read one message from stream (advancing it); ChecksumError / DecodeError on bad bits."""
        start = stream.pos
        try:
            raw = self.decode_values(stream, received_packet)
            if self.checksum:
                body = stream[start:stream.pos]
                received = stream.read(f"uint:{self.checksum_bits}")
        except DecodeError:
            raise
        except Exception as exc:
            raise DecodeError(f"{self.type_name}: bits end or are invalid "
                              f"({type(exc).__name__}: {exc})") from None
        if self.checksum and checksum_of(self.checksum, body) != received:
            raise ChecksumError(f"{self.type_name}: {self.checksum} mismatch")
        return self.build(raw)

    def __repr__(self) -> str:
        return f"MessageCodec({self.type_name}, {len(self._fields)} fields)"
