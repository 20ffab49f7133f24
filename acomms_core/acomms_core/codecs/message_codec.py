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

The fields a message codec is made of are in codec_fields, the conversion of their values
between rclpy and ltcodecs in field_values, the errors in codec_errors.
"""

from __future__ import annotations

from bitstring import BitArray, Bits, ConstBitStream
from crccheck.crc import Crc8SaeJ1850, Crc32Iscsi
from rosidl_parser.definition import AbstractNestedType, NamespacedType

from acomms_core.codecs._ltcodecs import (
    FIELD_CODEC_CLASSES,
    METADATA_DECODERS,
    METADATA_ENCODERS,
    MultipleFieldCodec,
)
from acomms_core.codecs.codec_errors import (
    ChecksumError,
    CodecBuildError,
    DecodeError,
    EncodeError,
)
from acomms_core.codecs.codec_fields import (
    _check_codec_params,
    _construct,
    _LeafField,
    _MessageElementCodec,
    _MetadataField,
    _MultiField,
    _names_latitude,
    _NestedField,
    _slot_name,
)
from acomms_core.codecs.field_values import _encode_notes, _is_integer_slot, _prepare_generic
from acomms_core.codecs.ros_types import (
    UnknownRosType,
    default_field_params,
    message_fields,
    namespaced_class,
    resolve_message_class,
    type_name_of,
)

# The errors live in codec_errors; importable from here as they always were.
__all__ = ["ARRAY_CODEC_NAMES", "CHECKSUM_BITS", "MESSAGE_CODEC_NAMES", "ON_OUT_OF_RANGE",
           "TIME_CODEC_NAMES", "ChecksumError", "CodecBuildError", "DecodeError", "EncodeError",
           "MessageCodec", "checksum_of"]


CHECKSUM_BITS = {"crc8": 8, "crc32": 32}
MESSAGE_CODEC_NAMES = ("msg", "ros_msg")
ARRAY_CODEC_NAMES = ("fixed_len_array", "variable_len_array", "variable_len_array_optional")
TIME_CODEC_NAMES = ("time", "rostime")
# What the encoder does with a value outside its field codec's bounds: ltcodecs' behaviour
# (clamp numbers, truncate strings and arrays) or refuse the message (EncodeError).
ON_OUT_OF_RANGE = ("clamp", "refuse")


def checksum_of(kind: str, bits: Bits) -> int:
    data = Bits(bits).tobytes()  # zero-padded to a whole byte
    return Crc8SaeJ1850.calc(data) if kind == "crc8" else Crc32Iscsi.calc(data)


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
        self.decode_key = self._decode_key()

    def _decode_key(self) -> str | None:
        """What decoding depends on, as text, when it is a function of the bits alone: equal keys
        decode equal bits alike (RosPacketCodec shares such decodes between receivers). None
        when a field reads the received packet (src, toa...: its `reads_packet`) or the config is
        not plain data."""
        if (any(getattr(f, "reads_packet", True) for f in self._fields)  # unknown kind: it may
                or not _plain(self.fields_config)):
            return None
        return repr((self.type_name, self.checksum, self.on_out_of_range, self.fields_config))

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


def _plain(value) -> bool:
    """Plain data (what YAML gives): its repr says all there is to it."""
    if isinstance(value, dict):
        return all(_plain(k) and _plain(v) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return all(_plain(v) for v in value)
    return value is None or isinstance(value, (str, int, float, bool, bytes))
