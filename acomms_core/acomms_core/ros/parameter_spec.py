"""Parameter specifications, ROS-free: one table per node feeds the node, scenarios and launch.

A `ParameterSpec` names a parameter, its default, description and range. Nodes declare them
through `acomms_core.ros.ros_support.declare_parameters`; the scenario loader checks scenario
values against the same specs with `check_value` (no rclpy needed), so both refuse the same
values with the same reasons.

Validators are pure: `validator(values) -> reason | None`, where values are the merged candidate
values of every spec (current values with the proposed change applied). Applying an accepted
change is a separate step (see `declare_parameters`' `apply`).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any

Validator = Callable[[dict[str, Any]], "str | None"]

# ROS parameter type names (rcl_interfaces/ParameterType) a spec may declare explicitly, e.g. for
# an empty default whose type cannot be inferred.
_TYPE_NAMES = ("bool", "integer", "double", "string", "byte_array", "bool_array",
               "integer_array", "double_array", "string_array")


def _type_name(parameter_type) -> str | None:
    if parameter_type is None:
        return None
    name = str(getattr(parameter_type, "name", parameter_type)).lower()
    if name not in _TYPE_NAMES:
        raise ValueError(f"unknown parameter type {parameter_type!r}")
    return name


def _inferred_type(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "double"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (list, tuple)) and value:
        return _inferred_type(value[0]) + "_array"
    raise ValueError(f"cannot infer a parameter type from {value!r}")


@dataclasses.dataclass(frozen=True)
class ParameterSpec:
    """One node parameter: name, default, description and optional numeric range."""

    name: str
    default: Any
    description: str
    minimum: float | int | None = None
    maximum: float | int | None = None
    read_only: bool = False
    # For parameters whose default is empty/None: a ROS type name ("string_array", ...) or an
    # rclpy Parameter.Type.
    parameter_type: Any = None
    # The value may be set as several types (slot lists: 3, [1, 2] or "0:2").
    dynamic_typing: bool = False

    @property
    def type_name(self) -> str:
        explicit = _type_name(self.parameter_type)
        return explicit if explicit is not None else _inferred_type(self.default)

    def check_value(self, value: Any) -> str | None:
        """Why `value` cannot be this parameter (type or range), as ROS would refuse it; or None."""
        if self.dynamic_typing:
            if value is None or isinstance(value, dict):
                return f"{self.name}: {value!r} is not a parameter value"
            return None
        kind = self.type_name
        ok = {
            "bool": lambda v: isinstance(v, bool),
            "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
            "double": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
            "string": lambda v: isinstance(v, str),
        }
        if kind.endswith("_array"):
            element = ok.get(kind[:-6], lambda v: isinstance(v, int))
            if not isinstance(value, (list, tuple)) or not all(element(v) for v in value):
                return f"{self.name}: expected a list of {kind[:-6]}, got {value!r}"
            return None
        if not ok[kind](value):
            return f"{self.name}: expected {kind}, got {type(value).__name__} {value!r}"
        if kind == "double" and not math.isfinite(float(value)):
            return f"{self.name}: expected a finite number, got {value!r}"
        if self.minimum is not None and value < self.minimum:
            return f"{self.name}: {value!r} is below the minimum {self.minimum}"
        if self.maximum is not None and value > self.maximum:
            return f"{self.name}: {value!r} is above the maximum {self.maximum}"
        return None

    def descriptor(self):
        """rcl_interfaces ParameterDescriptor (imported here: the module is otherwise ROS-free)."""
        from rcl_interfaces.msg import FloatingPointRange, IntegerRange, ParameterDescriptor
        from rclpy.parameter import Parameter

        descriptor = ParameterDescriptor(description=self.description, read_only=self.read_only,
                                         dynamic_typing=self.dynamic_typing)
        explicit = _type_name(self.parameter_type)
        if explicit is not None:
            descriptor.type = Parameter.Type[explicit.upper()].value
        if self.minimum is not None or self.maximum is not None:
            if isinstance(self.default, bool):
                raise ValueError(f"{self.name}: a bool parameter has no range")
            if isinstance(self.default, int):
                descriptor.integer_range = [IntegerRange(
                    from_value=int(self.minimum if self.minimum is not None else -(2**63)),
                    to_value=int(self.maximum if self.maximum is not None else 2**63 - 1),
                    step=0)]
            else:
                descriptor.floating_point_range = [FloatingPointRange(
                    from_value=float(self.minimum if self.minimum is not None else -1e308),
                    to_value=float(self.maximum if self.maximum is not None else 1e308),
                    step=0.0)]
        return descriptor


def spec_table(specs: Iterable[ParameterSpec]) -> dict[str, ParameterSpec]:
    """{name: spec}; a repeated name is a programming error."""
    table: dict[str, ParameterSpec] = {}
    for spec in specs:
        if spec.name in table:
            raise ValueError(f"parameter {spec.name} is specified twice")
        table[spec.name] = spec
    return table


def defaults(specs: Iterable[ParameterSpec]) -> dict[str, Any]:
    return {spec.name: spec.default for spec in specs}


def check_values(specs: Iterable[ParameterSpec], values: Mapping[str, Any],
                 validator: Validator | None = None) -> str | None:
    """Everything a node would say about these values, without a node: the first reason, or None.

    `values` may hold a subset of the specs; the rest take their defaults (the merged candidate
    the validator sees). Unknown names are refused.
    """
    table = spec_table(specs)
    for name, value in values.items():
        spec = table.get(name)
        if spec is None:
            return f"{name}: unknown parameter (known: {', '.join(sorted(table))})"
        reason = spec.check_value(value)
        if reason:
            return reason
    if validator is None:
        return None
    merged = {**defaults(table.values()), **values}
    try:
        return validator(merged)
    except Exception as exc:  # a validator bug refuses; it must not crash a loader or a node
        return f"validation error: {exc}"
