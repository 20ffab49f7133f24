"""Value conversion between rclpy field values and what ltcodecs' field codecs take and return
(ROS message classes only through their rosidl type descriptions): the encode side's `prepare`
(numpy arrays to lists, bytes, ASCII-only strings), the decode side's `convert` (back to the
rclpy field type, refusing what the field's ROS type cannot hold)."""

from __future__ import annotations

import array
import threading

import numpy as np
from rosidl_parser.definition import (
    AbstractNestedType,
    AbstractString,
    BasicType,
    NamespacedType,
)

from acomms_core.codecs._ltcodecs import ltcodecs
from acomms_core.codecs.field_bounds import ros_value_checker
from acomms_core.codecs.ros_types import namespaced_class

NON_ASCII_REPLACEMENT = "?"
_encode_notes = threading.local()   # per-thread tallies of the message being encoded


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
