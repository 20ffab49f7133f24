"""The reading machinery every scenario section parser shares (ROS-free): a `_Context` (the file
name, notes on old names accepted), a `_Section` (a mapping read key by key through its
scenario_keys table, so an error carries its key path and unknown keys are refused with "did you
mean"), type checks, and where files named in a scenario are found (`resolve_path`)."""

from __future__ import annotations

import copy
import math
import os
import pathlib
import re
from collections.abc import Callable
from typing import Any

from acomms_bringup.description.scenario_keys import (
    REQUIRED,
    SCENARIO_KEYS,
    ScenarioKey,
    key_table,
)
from acomms_bringup.description.scenario_types import ScenarioError
from acomms_core.ros_acomms_names import did_you_mean, rename_parameters, unit_alias

SCENARIO_KEYS_TABLE = key_table(SCENARIO_KEYS)

_NAME_TOKEN = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
_NAMESPACE = re.compile(r"^(/[A-Za-z][A-Za-z0-9_]*)+$")
_TOPIC = re.compile(r"^/?[A-Za-z_][A-Za-z0-9_]*(/[A-Za-z_][A-Za-z0-9_]*)*$")


# ---------------------------------------------------------------------------------------------
# Parsing helpers: every read goes through a _Section so errors carry the key path.

_REQUIRED = REQUIRED
_FROM_TABLE = object()
_TYPE_NAMES = {int: "an integer", float: "a number", str: "a string", bool: "true/false",
               list: "a list", dict: "a mapping"}


def _describe_type(value: Any) -> str:
    if value is None:
        return "nothing (null)"
    return f"{type(value).__name__} {value!r}"


class _Context:
    def __init__(self, file: str):
        self.file = file
        self.notes: list[str] = []  # accepted old names (ros_acomms, `_m_s`): Scenario.warnings
        self.base_dir = pathlib.Path.cwd()  # relative file names (slot_tags) are read from here

    def error(self, key_path: str, problem: str) -> ScenarioError:
        return ScenarioError(self.file, key_path, problem)


def _matches(value: Any, kinds: tuple[type, ...]) -> bool:
    for kind in kinds:
        if kind is bool and isinstance(value, bool):
            return True
        if kind is int and isinstance(value, int) and not isinstance(value, bool):
            return True
        if kind is float and isinstance(value, (int, float)) and not isinstance(value, bool):
            return True
        if kind in (str, list, dict) and isinstance(value, kind):
            return True
    return False


def _check_type(ctx: _Context, path: str, value: Any, kinds: tuple[type, ...]) -> Any:
    if not _matches(value, kinds):
        expected = " or ".join(_TYPE_NAMES[k] for k in kinds)
        raise ctx.error(path, f"expected {expected}, got {_describe_type(value)}")
    if kinds == (float,):
        value = float(value)
        if not math.isfinite(value):
            raise ctx.error(path, f"expected a finite number, got {value}")
    return value


class _Section:
    """A mapping being read; remembers which keys were used so unknown ones can be refused.

    `keys` is its table of ScenarioKeys (scenario_keys): `take` reads a key with the type,
    default and range the table gives it, `section` a mapping key with its own table."""

    def __init__(self, ctx: _Context, data: Any, path: str,
                 keys: tuple[ScenarioKey, ...] = ()):
        if not isinstance(data, dict):
            raise ctx.error(path or "(top level)",
                            f"expected a mapping, got {_describe_type(data)}")
        self.ctx, self.data, self.path, self.used = ctx, data, path, set()
        self.keys = key_table(keys)
        if any(isinstance(key, str) and unit_alias(key) for key in data):
            self.rename({key: unit_alias(key) for key in data
                         if isinstance(key, str) and unit_alias(key)}, "the old unit spelling")

    def take(self, key: str, default: Any = _FROM_TABLE, **options) -> Any:
        """The key's value, checked as its ScenarioKey says; `default` and `options` (e.g.
        choices known only at run time) where the value depends on other keys."""
        spec = self.keys[key]
        if default is _FROM_TABLE:  # a fresh copy of a list/mapping default per read
            default = copy.deepcopy(spec.default) if isinstance(spec.default, (list, dict)) \
                else spec.default
        return self.get(key, spec.kinds, default,
                        **{"minimum": spec.minimum, "maximum": spec.maximum,
                           "exclusive_minimum": spec.exclusive_minimum,
                           "choices": spec.choices, **options})

    def raw(self, key: str) -> Any:
        """The key's value unchecked (the caller parses it); None when absent."""
        self.used.add(self.keys[key].name)
        return self.data.get(key)

    def rename(self, renames: dict[str, str], what: str = "the ros_acomms name") -> None:
        """Read old names (ros_acomms', `_m_s` units) as ours, with a note; both: refused."""
        try:
            self.data, notes = rename_parameters(self.data, renames, self.path or "(top level)",
                                                 what)
        except ValueError as exc:
            raise self.ctx.error(self.path, str(exc).partition(": ")[2]) from None
        self.ctx.notes.extend(notes)

    def missing(self, key: str, problem: str = "missing (required)") -> ScenarioError:
        """A required key is absent: a misspelling of it present is named as the unknown key."""
        for other in self.data:
            if other not in self.used and did_you_mean(str(other), [key]):
                return self.ctx.error(self.key_path(str(other)),
                                      f"unknown key{did_you_mean(str(other), [key])}")
        return self.ctx.error(self.key_path(key), problem)

    def key_path(self, key: str) -> str:
        return f"{self.path}.{key}" if self.path else key

    def has(self, key: str) -> bool:
        return key in self.data

    def get(self, key: str, kinds: tuple[type, ...], default: Any = _REQUIRED, *,
            minimum: float | None = None, maximum: float | None = None,
            exclusive_minimum: bool = False, choices: tuple[str, ...] | None = None) -> Any:
        self.used.add(key)
        path = self.key_path(key)
        if key not in self.data or self.data[key] is None:
            if default is _REQUIRED:
                raise self.missing(key)
            return default
        value = _check_type(self.ctx, path, self.data[key], kinds)
        if minimum is not None and (value <= minimum if exclusive_minimum else value < minimum):
            relation = ">" if exclusive_minimum else ">="
            raise self.ctx.error(path, f"must be {relation} {minimum}, got {value}")
        if maximum is not None and value > maximum:
            raise self.ctx.error(path, f"must be <= {maximum}, got {value}")
        if choices is not None and value not in choices:
            raise self.ctx.error(path, f"unknown value {value!r}; expected one of {list(choices)}")
        return value

    def section(self, key: str, required: bool = False,
                keys: tuple[ScenarioKey, ...] | None = None) -> _Section | None:
        """A mapping key, with the keys of its table (or `keys`)."""
        self.used.add(key)
        if key not in self.data or self.data[key] is None:
            if required:
                raise self.missing(key)
            return None
        if keys is None:
            spec = self.keys.get(key)
            keys = spec.keys if spec is not None and spec.keys else ()
        return _Section(self.ctx, self.data[key], self.key_path(key), keys)

    def empty(self, key: str) -> _Section:
        """An absent mapping key as an empty section (its keys take their defaults)."""
        return _Section(self.ctx, {}, self.key_path(key), self.keys[key].keys or ())

    def items(self, key: str, required: bool = False) -> list[tuple[str, Any]]:
        """The entries of a list: [(key path, item), ...]."""
        self.used.add(key)
        value = self.data.get(key)
        if value is None:
            if required:
                raise self.missing(key)
            return []
        _check_type(self.ctx, self.key_path(key), value, (list,))
        return [(f"{self.key_path(key)}[{i}]", item) for i, item in enumerate(value)]

    def finish(self, allowed: tuple[str, ...] | None = None) -> None:
        unknown = sorted(set(self.data) - self.used, key=str)
        if unknown:
            allowed = sorted(allowed if allowed is not None else self.used, key=str)
            hint = did_you_mean(str(unknown[0]), allowed)
            raise self.ctx.error(self.key_path(str(unknown[0])),
                                 f"unknown key{hint}; allowed here: {allowed}")


# ---------------------------------------------------------------------------------------------


def default_package_share(package: str) -> pathlib.Path:
    """The installed share directory of a ROS package (ament index), or raise LookupError."""
    try:
        from ament_index_python.packages import (
            PackageNotFoundError,
            get_package_share_directory,
        )
    except ImportError:  # no ament_index_python: search AMENT_PREFIX_PATH by hand
        for prefix in os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep):
            marker = pathlib.Path(prefix, "share/ament_index/resource_index/packages", package)
            if prefix and marker.exists():
                return pathlib.Path(prefix, "share", package)
        raise LookupError(f"package {package!r} not found in AMENT_PREFIX_PATH") from None
    try:
        return pathlib.Path(get_package_share_directory(package))
    except (PackageNotFoundError, ValueError, KeyError) as exc:
        raise LookupError(f"package {package!r} not found ({exc})") from None


PackageShareResolver = Callable[[str], pathlib.Path]


def resolve_path(spec: str, base_dir: pathlib.Path,
                 package_share: PackageShareResolver = default_package_share) -> pathlib.Path:
    """`package://pkg/rel/path`, an absolute path, or a path relative to base_dir."""
    if spec.startswith("package://"):
        package, _, relative = spec[len("package://"):].partition("/")
        if not package or not relative:
            raise LookupError(f"{spec!r}: expected package://<package>/<path>")
        return package_share(package) / relative
    path = pathlib.Path(os.path.expanduser(spec))
    return path if path.is_absolute() else base_dir / path
