"""What a decoded (or, in strict mode, an encoded) value may be: codec bounds and ROS field types.

Noise after a valid header decodes into *some* value for every field codec: a float codec's
offset past its max_value, a string length prefix past max_length, a time past 2^31 seconds, an
lzma stream that inflates to megabytes. Nothing like that may be published. Two checks, both
always on:

- `codec_checker(codec)`: the bounds a field codec declares (min_value/max_value with its
  quantisation, max_length of strings, bytes and arrays, lat/lon ranges, the decompressed size of
  lzma). The same check serves the encoder's strict mode (`on_out_of_range: refuse`).
- `ros_value_checker(slot_type)`: what the ROS field type holds (int8..uint64 ranges, float32
  range, bounded strings and sequences, fixed array sizes, Time/Duration sec and nanosec).
  rclpy checks these only under ROS_PYTHON_CHECK_FIELDS; we always do, before publishing.

A violation raises `OutOfBounds`; `framing_intact` says whether the bits around the value still
parse as the codec's framing (a value out of range: yes; a length prefix past max_length: no).
"""

from __future__ import annotations

import lzma
import math
from collections.abc import Callable

from rosidl_parser.definition import (
    AbstractNestedType,
    AbstractString,
    Array,
    BasicType,
    BoundedSequence,
    BoundedString,
    BoundedWString,
    NamespacedType,
)

from acomms_core.codecs._ltcodecs import ltcodecs

Checker = Callable[[object], None]

INTEGER_RANGES = {
    "int8": (-2 ** 7, 2 ** 7 - 1), "uint8": (0, 2 ** 8 - 1), "char": (0, 2 ** 8 - 1),
    "int16": (-2 ** 15, 2 ** 15 - 1), "uint16": (0, 2 ** 16 - 1),
    "int32": (-2 ** 31, 2 ** 31 - 1), "uint32": (0, 2 ** 32 - 1),
    "int64": (-2 ** 63, 2 ** 63 - 1), "uint64": (0, 2 ** 64 - 1),
}
FLOAT32_MAX = 3.4028234663852886e38
TIME_SEC_RANGE = INTEGER_RANGES["int32"]
NANOSEC_PER_SEC = 1_000_000_000
# Default bound of lzma's decompressed output, as a multiple of its compressed max_length
# (the codec parameter `max_decompressed_length` overrides it).
LZMA_DEFAULT_EXPANSION = 16
LAT_LON_LIMITS = {True: 90.0, False: 180.0}   # lat_not_lon -> |degrees| limit


class OutOfBounds(ValueError):
    """A value outside its codec's bounds or its ROS field type."""

    def __init__(self, reason: str, framing_intact: bool = True):
        super().__init__(reason)
        self.framing_intact = framing_intact


def _no_check(value) -> None:
    return None


def _number(value) -> float | None:
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)):
        return value
    seconds = time_seconds(value)
    return seconds


def time_seconds(value) -> float | None:
    """Seconds of an rclpy Time/Duration, an armw native time, or None for anything else."""
    if hasattr(value, "sec") and hasattr(value, "nanosec"):
        return value.sec + value.nanosec / NANOSEC_PER_SEC
    if hasattr(value, "secs") and hasattr(value, "nsecs"):
        return value.secs + value.nsecs / NANOSEC_PER_SEC
    return None


def range_checker(low: float, high: float, what: str) -> Checker:
    def check(value) -> None:
        number = _number(value)
        if number is None:
            raise OutOfBounds(f"{value!r} is not a number ({what})")
        if not (low <= number <= high):  # NaN fails too
            raise OutOfBounds(f"{number!r} outside {what}")
    return check


def length_checker(max_length: int, what: str, element: Checker = _no_check,
                   min_length: int = 0) -> Checker:
    def check(value) -> None:
        try:
            length = len(value)
        except TypeError:
            raise OutOfBounds(f"{type(value).__name__} has no length ({what})") from None
        if not min_length <= length <= max_length:
            raise OutOfBounds(f"{length} elements/characters, {what} allows "
                              f"{min_length}..{max_length}", framing_intact=False)
        if element is not _no_check:
            for item in value:
                element(item)
    return check


def _quantum_margin(step: float) -> float:
    return abs(step) / 2 + 1e-9


def _float_codec(codec) -> Checker:
    margin = _quantum_margin(10.0 ** -codec.precision)
    return range_checker(codec.min_value, codec.max_value + margin,
                         f"float codec range {codec.min_value}..{codec.max_value}")


def _linspace_codec(codec) -> Checker:
    top = codec.min_value + (codec.num_values - 1) * codec.resolution
    return range_checker(codec.min_value, min(top, codec.max_value) + 1e-9 * max(1.0, abs(top)),
                         f"linspace range {codec.min_value}..{codec.max_value}")


def _integer_codec(codec) -> Checker:
    if isinstance(codec, ltcodecs.FixedIntCodec) and type(codec) is not ltcodecs.FixedIntCodec:
        return _no_check  # int8..uint64: every bit pattern is valid; the ROS type bounds it
    high = codec.max_value
    if isinstance(codec, ltcodecs.FixedIntCodec):
        high = codec.max_value - codec.resolution  # ltcodecs' max_value is one step past
    return range_checker(codec.min_value, high, f"integer range {codec.min_value}..{high}")


def _time_codec(codec) -> Checker:
    margin = _quantum_margin(10.0 ** -codec.precision)
    return range_checker(codec.min_value, codec.max_value + margin,
                         f"time codec range {codec.min_value}..{codec.max_value} s")


def _lat_lon(codec) -> Checker:
    limit = LAT_LON_LIMITS[bool(getattr(codec, "lat_not_lon", False))]
    return range_checker(-limit, limit, f"±{limit:g}°")


def _array(codec) -> Checker:
    element = codec_checker(codec.element_field_codec)
    if isinstance(codec, ltcodecs.FixedLenArrayCodec):
        return length_checker(codec.length, "fixed_len_array", element, min_length=codec.length)
    return length_checker(codec.max_length, "variable_len_array max_length", element,
                          min_length=getattr(codec, "min_length", 0))


def _string_enum(codec) -> Checker:
    allowed = set(codec.entries)
    if codec.unknown_value is not None:
        allowed.add(codec.unknown_value)

    def check(value) -> None:
        compare = value if codec.case_sensitive else str(value).lower()
        if compare not in allowed:
            raise OutOfBounds(f"{value!r} is not one of the string_enum entries")
    return check


def _lzma(codec) -> Checker:
    return length_checker(codec.max_decompressed_length, "lzma max_decompressed_length")


# (codec class, checker factory) in the order isinstance is tried (subclasses first).
_CHECKERS = (
    (ltcodecs.FloatCodec, _float_codec),
    (ltcodecs.LinspaceFloatCodec, _linspace_codec),
    (ltcodecs.ExponentialGolombIntegerCodec, _integer_codec),
    (ltcodecs.VarintCodec, _integer_codec),             # also fixedint and int8..uint64
    (ltcodecs.RosTimeCodec, _time_codec),
    (ltcodecs.CclLatLonCodec, _lat_lon),
    (ltcodecs.CclLatLonBcdCodec, _lat_lon),
    (ltcodecs.LzmaCodec, _lzma),
    (ltcodecs.AsciiStringCodec, lambda c: length_checker(c.max_length, "string max_length")),
    (ltcodecs.BytesCodec, lambda c: length_checker(c.max_length, "bytes max_length")),
    (ltcodecs.VariableLenBitArrayCodec,
     lambda c: length_checker(c.max_length, "variable_len_bit_array max_length")),
    (ltcodecs.StringEnumCodec, _string_enum),
    (ltcodecs.FixedLenArrayCodec, _array),
    (ltcodecs.VariableLenArrayCodec, _array),
    (ltcodecs.VariableLenArrayOptionalCodec, lambda c: _array(c.array_codec)),
)


def codec_checker(codec) -> Checker:
    """The bounds check of one ltcodecs field codec's value (a no-op for codecs without any)."""
    for cls, factory in _CHECKERS:
        if isinstance(codec, cls):
            return factory(codec)
    return _no_check


def target_checkers(codec) -> dict:
    """{target field: checker} of a multiple-field codec's extra fields (optional, ...)."""
    return {name: codec_checker(target)
            for name, target in (getattr(codec, "field_codecs", None) or {}).items()
            if not isinstance(target, str) and target is not None}


# ---------------------------------------------------------------------------------------------
# ROS field types

def _string_checker(slot_type) -> Checker:
    bound = (slot_type.maximum_size
             if isinstance(slot_type, (BoundedString, BoundedWString)) else None)

    def check(value) -> None:
        if not isinstance(value, str):
            raise OutOfBounds(f"{type(value).__name__} is not a string")
        if "\x00" in value:
            raise OutOfBounds("string holds a NUL character (ROS strings end there)")
        if bound is not None and len(value) > bound:
            raise OutOfBounds(f"{len(value)} characters, the field holds at most {bound}")
    return check


def _basic_checker(typename: str) -> Checker:
    if typename == "char":
        integer = range_checker(*INTEGER_RANGES["char"], "char range")

        def check_char(value) -> None:
            if isinstance(value, str):
                if len(value) != 1 or ord(value) > 255:
                    raise OutOfBounds(f"{value!r} is not one 8-bit character")
                return
            integer(value)
        return check_char
    if typename in INTEGER_RANGES:
        low, high = INTEGER_RANGES[typename]
        return range_checker(low, high, f"{typename} range")
    if typename == "float":
        def check_float32(value) -> None:
            if math.isfinite(value) and abs(value) > FLOAT32_MAX:
                raise OutOfBounds(f"{value!r} outside the float32 range")
        return check_float32
    if typename == "octet":
        def check_octet(value) -> None:
            if not (isinstance(value, bytes) and len(value) == 1):
                raise OutOfBounds(f"{value!r} is not one byte")
        return check_octet
    return _no_check


def _time_checker(value) -> None:
    if not TIME_SEC_RANGE[0] <= value.sec <= TIME_SEC_RANGE[1]:
        raise OutOfBounds(f"sec {value.sec} outside int32")
    if not 0 <= value.nanosec < NANOSEC_PER_SEC:
        raise OutOfBounds(f"nanosec {value.nanosec} outside 0..999999999")


def ros_value_checker(slot_type, is_time: bool = False) -> Checker:
    """The check of a value already converted for an rclpy field of slot_type."""
    if isinstance(slot_type, BasicType):
        return _basic_checker(slot_type.typename)
    if isinstance(slot_type, AbstractString):
        return _string_checker(slot_type)
    if isinstance(slot_type, NamespacedType):
        return _time_checker if is_time else _no_check
    if isinstance(slot_type, AbstractNestedType):
        element = ros_value_checker(slot_type.value_type)
        if isinstance(slot_type, Array):
            return length_checker(slot_type.size, "the fixed-size array", element,
                                  min_length=slot_type.size)
        bound = slot_type.maximum_size if isinstance(slot_type, BoundedSequence) else 2 ** 63
        return length_checker(bound, "the bounded sequence", element)
    return _no_check


# ---------------------------------------------------------------------------------------------
# Field codecs with bounded decoding

class BoundedLzmaCodec(ltcodecs.LzmaCodec):
    """ltcodecs' lzma codec whose decoder never inflates past max_decompressed_length bytes and
    never reads a compressed length past max_length (same bits as ltcodecs otherwise); the
    encoder refuses inputs longer than max_decompressed_length (they could not be decoded)."""

    def __init__(self, max_length: int, max_decompressed_length: int | None = None, **kwargs):
        super().__init__(max_length, **kwargs)
        self.max_decompressed_length = int(max_decompressed_length
                                           or LZMA_DEFAULT_EXPANSION * int(max_length))

    def encode(self, value):
        if len(value) > self.max_decompressed_length:
            raise OutOfBounds(f"{len(value)} bytes, lzma max_decompressed_length is "
                              f"{self.max_decompressed_length}")
        return super().encode(value)

    def decode(self, bits_to_decode):
        num_bytes = self.length_codec.decode(bits_to_decode)
        if num_bytes > self.max_length:
            raise OutOfBounds(f"lzma length {num_bytes} past max_length {self.max_length}",
                              framing_intact=False)
        compressed = bits_to_decode.read(f"bytes:{num_bytes}")
        decompressor = lzma.LZMADecompressor(format=lzma.FORMAT_RAW, filters=self.filter)
        try:
            value = decompressor.decompress(compressed, max_length=self.max_decompressed_length)
        except lzma.LZMAError as exc:
            raise OutOfBounds(f"lzma data invalid: {exc}") from None
        if decompressor.eof:
            return value
        if decompressor.needs_input:  # ltcodecs refuses an unterminated stream too
            raise OutOfBounds("lzma data ends before its end-of-stream marker")
        raise OutOfBounds(f"lzma data inflates past max_decompressed_length "
                          f"{self.max_decompressed_length}")


class CheckedCclLatLonBcdCodec(ltcodecs.CclLatLonBcdCodec):
    """ltcodecs' BCD lat/lon codec whose decoder refuses non-decimal digits, a hemisphere
    nibble of the other axis, minutes >= 60 (same bits as ltcodecs otherwise)."""

    def decode(self, bits_to_decode):
        digits = bits_to_decode.read("bytes:5").hex()
        signs = ("a", "c") if self.lat_not_lon else ("b", "d")
        if not (digits[:3].isdigit() and digits[4:].isdigit()) or digits[3] not in signs:
            raise OutOfBounds(f"BCD {'latitude' if self.lat_not_lon else 'longitude'} "
                              f"{digits!r} malformed")
        minutes = int(digits[4:]) / 10000.0
        if minutes >= 60:
            raise OutOfBounds(f"BCD minutes {minutes} >= 60")
        return (1 if digits[3] == signs[0] else -1) * (int(digits[:3]) + minutes / 60)


# Field codec classes acomms uses in place of ltcodecs' (same bits, bounded decoding).
FIELD_CODEC_OVERRIDES = {"lzma": BoundedLzmaCodec, "ccl_latlon_bcd": CheckedCclLatLonBcdCodec}
