"""The fields a message codec (acomms_core.codecs.message_codec) is made of, one class per kind:
a leaf field (one ltcodecs field codec), a multiple-field codec, a nested message, packet
metadata (zero bits); the element adapter that lets ltcodecs' array codecs carry messages; and
the checks a field codec's parameters pass before ltcodecs builds it."""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING

from bitstring import Bits

from acomms_core.codecs._ltcodecs import FIELD_CODEC_CLASSES, METADATA_DECODERS, ltcodecs
from acomms_core.codecs.codec_errors import CodecBuildError, DecodeError, EncodeError
from acomms_core.codecs.field_bounds import (
    FIELD_CODEC_OVERRIDES,
    OutOfBounds,
    codec_checker,
    target_checkers,
)
from acomms_core.codecs.field_values import _encode_notes, _make_convert, _make_prepare

if TYPE_CHECKING:
    from acomms_core.codecs.message_codec import MessageCodec


def _length_bits(codec, which: str) -> int:
    value = getattr(codec, which)
    return value() if callable(value) else value  # ltcodecs' PaddingCodec defines methods


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

    reads_packet = False  # arrays of messages decode their elements without the packet

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

    reads_packet = False

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
        self.reads_packet = codec.decode_key is None
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
    reads_packet = True

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
