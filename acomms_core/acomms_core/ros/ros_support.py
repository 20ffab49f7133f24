"""Shared plumbing for acomms lifecycle nodes: declared, range-checked, validated parameters.

Every node declares its parameters through `ParameterSpec` so that `ros2 param describe` shows a
description and range, `ros2 param set` outside the range is refused by rclpy itself, and a
node-specific validator can refuse a change with a reason (e.g. a TDMA schedule that does not fit).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from typing import Any

from rcl_interfaces.msg import (
    FloatingPointRange,
    IntegerRange,
    ParameterDescriptor,
    SetParametersResult,
)
from rclpy.parameter import Parameter

# A validator gets {name: new_value} for the parameters being set and returns None when the change
# is acceptable, or a reason string when it must be refused.
Validator = Callable[[dict[str, Any]], "str | None"]


@dataclasses.dataclass(frozen=True)
class ParameterSpec:
    """One node parameter: name, default, description and optional numeric range."""

    name: str
    default: Any
    description: str
    minimum: float | int | None = None
    maximum: float | int | None = None
    read_only: bool = False
    # For parameters whose default is empty/None, the ROS type cannot be inferred from it.
    parameter_type: Parameter.Type | None = None

    def descriptor(self) -> ParameterDescriptor:
        descriptor = ParameterDescriptor(description=self.description, read_only=self.read_only)
        if self.parameter_type is not None:
            descriptor.type = self.parameter_type.value
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


def declare_parameters(node, specs: Iterable[ParameterSpec],
                       validator: Validator | None = None) -> dict[str, Any]:
    """Declare specs on node, install validator as an on-set callback, return current values.

    Overrides given at construction (parameter_overrides, launch files, YAML) apply as usual and
    are validated too: a bad initial value raises here with the reason.
    """
    values = {}
    for spec in specs:
        if spec.parameter_type is not None and spec.default is None:
            param = node.declare_parameter(spec.name, spec.parameter_type, spec.descriptor())
        else:
            param = node.declare_parameter(spec.name, spec.default, spec.descriptor())
        values[spec.name] = param.value
    if validator is not None:
        reason = validator(dict(values))
        if reason:
            raise ValueError(reason)

        def on_set(parameters: list[Parameter]) -> SetParametersResult:
            change = {p.name: p.value for p in parameters}
            try:
                reason = validator(change)
            except Exception as exc:  # a validator bug must refuse, not crash the node
                reason = f"validation error: {exc}"
            return SetParametersResult(successful=not reason, reason=reason or "")

        node.add_on_set_parameters_callback(on_set)
    return values


def parameter_values(node, names: Iterable[str]) -> dict[str, Any]:
    """Current values of the named parameters."""
    return {name: node.get_parameter(name).value for name in names}


def run_node(node_factory: Callable[[], Any], args: list[str] | None = None) -> int:
    """Console-script body shared by every acomms node: init, spin, clean shutdown.

    The node is spun by a MultiThreadedExecutor (services answered in parallel). A node whose
    initial parameters are refused (out of range, wrong type, or a validator's reason) exits with
    status 1 and the reason on stderr, not a traceback.
    """
    import sys

    import rclpy
    from rclpy.exceptions import ParameterException
    from rclpy.executors import ExternalShutdownException, MultiThreadedExecutor

    rclpy.init(args=args)
    try:
        try:
            node = node_factory()
        except (ValueError, ParameterException) as exc:
            name = getattr(node_factory, "__name__", "node")
            print(f"{name}: refused parameters: {exc}", file=sys.stderr)
            return 1
        executor = MultiThreadedExecutor()
        executor.add_node(node)
        try:
            executor.spin()
        except (KeyboardInterrupt, ExternalShutdownException):
            pass
        finally:
            executor.shutdown()
            node.destroy_node()
    finally:
        rclpy.try_shutdown()
    return 0


def destroy_entities(node, entities: Iterable[Any]) -> None:
    """Destroy the services, subscriptions, clients and timers a node created (e.g. in on_cleanup),
    each with the node method for its type."""
    from rclpy.client import Client
    from rclpy.service import Service
    from rclpy.subscription import Subscription
    from rclpy.timer import Timer

    destroyers = ((Service, node.destroy_service), (Subscription, node.destroy_subscription),
                  (Client, node.destroy_client), (Timer, node.destroy_timer))
    for entity in entities:
        destroy = next((d for kind, d in destroyers if isinstance(entity, kind)), None)
        if destroy is None:
            raise TypeError(f"cannot destroy {entity!r}")
        destroy(entity)
