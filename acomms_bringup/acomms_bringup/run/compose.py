"""Instantiate described nodes in one process (the embedded runner's building block).

`create_node(description, context)` builds the node class named by `NodeDescription.plugin` with
the description's name, namespace, parameters (as parameter_overrides) and remappings (as
node-local `--ros-args -r` arguments), so an in-process node is configured exactly like the same
node started by a launch file.

Lean mode (`acomms_run --lean`, scenario `runtime: {lean: true}`; issue 30): `lean_options`
gives the construction options that drop the services nobody outside the process needs: the
type-description service of every node, the parameter services of every node but the MACs
(tuned at run time with `ros2 param set`), the /parameter_events publisher of the acomms
lifecycle nodes and lifecycle managers without parameter services
(`OptionalParameterEvents`: `parameter_events=False`), and the
lifecycle services of lifecycle nodes, which the group's manager drives in-process
(`LifecycleManager.use_local_nodes`), the managers' `restart` service, and every node's /rosout
publisher: a lean node's ERROR lines still go to the console and, through its logger
(`ErrorLines`), to the `error_sink` the runner gives (`Recorder.note_error`: the reason quoted
when a node fails to come up).
"""

from __future__ import annotations

from collections.abc import Callable

from rclpy.impl.rcutils_logger import RcutilsLogger
from rclpy.logging import LoggingSeverity
from rclpy.parameter import Parameter

from acomms_bringup.description.stack import NodeDescription, NodeGroup


class ComposeError(RuntimeError):
    """A described node could not be created; the message names it and says why."""


def parameter_overrides(description: NodeDescription) -> list[Parameter]:
    return [Parameter(name, value=value) for name, value in description.parameters.items()]


def remapping_arguments(description: NodeDescription) -> list[str]:
    if not description.remappings:
        return []
    arguments = ["--ros-args"]
    for source, target in description.remappings:
        arguments += ["-r", f"{source}:={target}"]
    return arguments


def start_sim_clock(node, sim_start_s: float | None) -> None:
    """A sim-time node's clock reads the simulated clock's start from its creation on, as if
    /clock had arrived: timers made at configure/activate (before the clock group publishes)
    then count from the start time, not from 0 (a jump of decades would strand them)."""
    if (sim_start_s is None or not node.has_parameter("use_sim_time")
            or not node.get_parameter("use_sim_time").value):
        return
    from rclpy.time import Time

    node.get_clock().set_ros_time_override(Time(nanoseconds=round(sim_start_s * 1e9)))


TYPE_DESCRIPTION_PARAMETER = "start_type_description_service"  # rclpy's, read at construction
ErrorSink = Callable[[str, str], None]  # (logger name, ERROR line)


class ErrorLines(RcutilsLogger):
    """The logger of a lean node (no /rosout publisher): what it logs at ERROR (or above) is
    also handed to `sink(logger name, line)`."""

    def __init__(self, name: str, sink: ErrorSink):
        super().__init__(name)
        self._sink = sink

    def log(self, message, severity, name=None, **kwargs) -> bool:
        logged = super().log(message, severity, name=name, **kwargs)
        if logged and LoggingSeverity(severity) >= LoggingSeverity.ERROR:
            self._sink(self.name, str(message))
        return logged


def keeps_parameter_services(node_class) -> bool:
    """Whether a lean node keeps its parameter services: the MACs (and the MAC switcher) do."""
    from acomms_core.nodes.mac_node import MacNode
    from acomms_core.nodes.mac_switcher_node import MacSwitcherNode

    return issubclass(node_class, (MacNode, MacSwitcherNode))


def lean_options(node_class) -> dict:
    """Extra construction keywords of a lean node of node_class (see the module docstring)."""
    from rclpy.lifecycle import LifecycleNode

    from acomms_bringup.nodes.lifecycle_manager import LifecycleManager
    from acomms_core.ros.ros_support import OptionalParameterEvents

    tunable = keeps_parameter_services(node_class)
    options = {"start_parameter_services": tunable, "enable_rosout": False}
    if issubclass(node_class, LifecycleManager):
        options["restart_service"] = False
    if issubclass(node_class, LifecycleNode):
        options["enable_communication_interface"] = False
    if issubclass(node_class, OptionalParameterEvents) and not tunable:
        options["parameter_events"] = False  # nobody outside can change its parameters
    return options


def create_node(description: NodeDescription, context, sim_start_s: float | None = None,
                lean: bool = False, error_sink: ErrorSink | None = None):
    """The node object for one description, in the given rclpy Context (its sim-time clock at
    sim_start_s, `start_sim_clock`); lean: without the services of `lean_options`, its ERROR
    lines to error_sink (`ErrorLines`)."""
    try:
        node_class = description.load_class()
    except (ImportError, AttributeError) as exc:
        raise ComposeError(f"{description.fully_qualified_name}: cannot load "
                           f"{description.plugin}: {exc}") from None
    overrides, options = parameter_overrides(description), {}
    if lean:
        overrides.append(Parameter(TYPE_DESCRIPTION_PARAMETER, value=False))
        options = lean_options(node_class)
    try:
        node = node_class(node_name=description.name, namespace=description.namespace,
                          context=context, parameter_overrides=overrides,
                          cli_args=remapping_arguments(description), **options)
    except Exception as exc:  # refused parameters etc.: name the node, keep the reason
        raise ComposeError(f"{description.fully_qualified_name}: {exc}") from None
    if lean and error_sink is not None:
        node._logger = ErrorLines(node.get_logger().name, error_sink)  # rclpy's get_logger()
    start_sim_clock(node, sim_start_s)
    return node


def create_group(group: NodeGroup, context, sim_start_s: float | None = None,
                 lean: bool = False) -> list:
    """The group's lifecycle nodes in order, then its lifecycle manager."""
    return [create_node(node, context, sim_start_s, lean) for node in (*group.nodes, group.manager)]
