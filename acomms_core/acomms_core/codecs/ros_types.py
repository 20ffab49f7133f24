"""Resolve ROS type names of a codec config to rclpy message classes and describe their fields.

Accepts ROS 1 names (`pkg/Msg`, as in ros_acomms configs) and ROS 2 names (`pkg/msg/Msg`), plus
service halves (`pkg/srv/Svc_Request`, or ROS 1 style `pkg/SvcRequest`). Only installed ROS
interface packages are imported (a package whose directory holds rosidl's generated type
support), so a config cannot make a node import an arbitrary module. ros_acomms' interface
packages (`ros_acomms_msgs/CST`) resolve to acomms_interfaces (acomms_core.ros_acomms_names),
noted once per name.
"""

from __future__ import annotations

import functools
import glob
import importlib
import importlib.util
import logging
import os
import re

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

from acomms_core.ros_acomms_names import (
    interface_alias,
    missing_package_hint,
    unsupported_interface,
)

_LOG = logging.getLogger("acomms.ros_types")


class UnknownRosType(ValueError):
    """A type name that does not name an importable ROS 2 message class."""


_IDENTIFIER = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")


@functools.lru_cache(maxsize=256)
def is_interface_package(pkg: str) -> bool:
    """Whether pkg is an installed ROS interface package, found without importing it."""
    if not _IDENTIFIER.match(pkg):
        return False
    try:
        spec = importlib.util.find_spec(pkg)   # a top-level name: located, not executed
    except (ImportError, ValueError):
        return False
    locations = (spec.submodule_search_locations or []) if spec is not None else []
    return any(glob.glob(os.path.join(glob.escape(location), f"{pkg}_s__rosidl_typesupport_c*"))
               for location in locations)


@functools.lru_cache(maxsize=64)
def _alias(type_name: str) -> str:
    """type_name, or its acomms_interfaces name for a ros_acomms one (noted once)."""
    alias = interface_alias(type_name)
    if alias is None:
        return type_name
    _LOG.warning("ros_acomms type '%s' is read as '%s'", type_name, alias)
    return alias


def normalize_type_name(type_name: str) -> str:
    """'pkg/Msg' or 'pkg/msg/Msg' -> 'pkg/msg/Msg' (services keep 'srv')."""
    parts = _alias(str(type_name).strip()).split("/")
    if len(parts) == 2:
        return f"{parts[0]}/msg/{parts[1]}"
    return "/".join(parts)


def resolve_message_class(type_name) -> type:
    """The rclpy class for a type name or class; UnknownRosType names what was tried."""
    if isinstance(type_name, type):
        return type_name
    if not isinstance(type_name, str) or type_name.count("/") not in (1, 2):
        raise UnknownRosType(f"'{type_name}' is not a ROS type name (pkg/Msg or pkg/msg/Msg)")
    given, type_name = type_name, _alias(type_name.strip())
    parts = type_name.split("/")
    pkg, name = parts[0], parts[-1]
    kind = parts[1] if len(parts) == 3 else "msg"
    if not _IDENTIFIER.match(name) or kind not in ("msg", "srv"):
        raise UnknownRosType(f"'{type_name}' is not a ROS type name (pkg/Msg or pkg/msg/Msg)")
    if not is_interface_package(pkg):
        hint = missing_package_hint(type_name)
        raise UnknownRosType(f"unknown ROS type '{type_name}': " + (hint or (
            f"'{pkg}' is not an installed ROS interface package")))
    candidates = []
    if kind == "msg":
        candidates.append((f"{pkg}.msg", name, None))
        for suffix in ("Request", "Response"):  # ROS 1 service halves, e.g. pkg/PingRequest
            if name.endswith(suffix) and len(name) > len(suffix):
                candidates.append((f"{pkg}.srv", name[: -len(suffix)], suffix))
    elif kind == "srv":
        for suffix in ("_Request", "_Response"):
            if name.endswith(suffix):
                candidates.append((f"{pkg}.srv", name[: -len(suffix)], suffix[1:]))
    for module_name, attr, half in candidates:
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        cls = getattr(module, attr, None)
        if cls is not None and half is not None:
            cls = getattr(cls, half, None)
        if isinstance(cls, type) and hasattr(cls, "get_fields_and_field_types"):
            return cls
    if type_name != given.strip() and unsupported_interface(type_name):
        raise UnknownRosType(f"ros_acomms type '{given}' has no counterpart in acomms_interfaces: "
                             f"{unsupported_interface(type_name)}")
    raise UnknownRosType(f"unknown ROS type '{type_name}' (no such message class is installed)")


def type_name_of(cls: type) -> str:
    """'pkg/msg/Name' for an rclpy message class."""
    module = cls.__module__.split(".")
    return f"{module[0]}/{module[1] if len(module) > 1 else 'msg'}/{cls.__name__}"


def message_fields(cls: type) -> dict:
    """{field name: rosidl type} in definition order."""
    names = list(cls.get_fields_and_field_types().keys())
    return dict(zip(names, cls.SLOT_TYPES, strict=True))


def namespaced_class(slot_type: NamespacedType) -> type:
    return resolve_message_class("/".join([*slot_type.namespaces, slot_type.name]))


_BASIC_DEFAULT_CODECS = {
    "boolean": "bool", "octet": "uint8", "char": "uint8", "uint8": "uint8", "int8": "int8",
    "uint16": "uint16", "int16": "int16", "uint32": "uint32", "int32": "int32",
    "uint64": "uint64", "int64": "int64", "float": "float32", "double": "float64",
}
# Defaults for types without a bound (documented in docs/guide/codecs-and-queue.md,
# "Default field codecs").
DEFAULT_STRING_MAX_LENGTH = 128
DEFAULT_ARRAY_MAX_LENGTH = 10


def default_field_params(slot_type) -> dict:
    """The codec parameters used for a field when the config gives none.

    Fixed-size numbers keep full precision (int32 -> int32, double -> float64); strings without
    a bound are `string` with max_length 128 (7-bit ASCII, longer strings truncated); sequences
    without a bound are `variable_len_array` with max_length 10 (extra elements truncated);
    nested messages recurse.
    """
    if isinstance(slot_type, BasicType):
        return {"codec": _BASIC_DEFAULT_CODECS[slot_type.typename]}
    if isinstance(slot_type, AbstractString):
        bounded = isinstance(slot_type, (BoundedString, BoundedWString))
        return {"codec": "string",
                "max_length": slot_type.maximum_size if bounded else DEFAULT_STRING_MAX_LENGTH}
    if isinstance(slot_type, NamespacedType):
        return {"codec": "msg"}
    if isinstance(slot_type, AbstractNestedType):
        element = default_field_params(slot_type.value_type)
        if isinstance(slot_type, Array):
            params = {"codec": "fixed_len_array", "length": slot_type.size}
        else:
            bound = slot_type.maximum_size if isinstance(slot_type, BoundedSequence) else None
            params = {"codec": "variable_len_array",
                      "max_length": bound or DEFAULT_ARRAY_MAX_LENGTH}
        params["element_type"] = element.pop("codec")
        if element:
            params["element_params"] = element
        return params
    raise UnknownRosType(f"unsupported field type {slot_type!r}")
