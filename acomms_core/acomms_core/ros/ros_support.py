"""Shared plumbing for acomms lifecycle nodes: parameters, lifecycle state, entities, time.

- `declare_parameters`: declare `ParameterSpec`s (description, range); a pure validator refuses a
  change with a reason before it is accepted, and a separate `apply` step acts on accepted ones
  (the rclpy on-set / post-set split).
- `is_active(node)`: the lifecycle state without reaching into rclpy internals everywhere.
- `NodeResources`: creates and tracks a node's publishers, services, subscriptions, clients and
  timers, and releases all of them in reverse order with one call (on_cleanup / on_shutdown);
  `ManagedNode`: a LifecycleNode with one holder for configure and one for activate, released by
  the default on_deactivate / on_cleanup / on_shutdown.
- `now_s`, `seconds_to_time_msg`, `seconds_to_duration_msg`, `stamp_seconds`: one set of time
  conversions.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any

from rcl_interfaces.msg import SetParametersResult
from rclpy.lifecycle import LifecycleNode, TransitionCallbackReturn
from rclpy.parameter import Parameter

from acomms_core.ros.interrupts import quiet_interrupts
from acomms_core.ros.parameter_spec import ParameterSpec, Validator
from acomms_core.ros.service_calls import ReliableReplies
from acomms_core.ros_acomms_names import parameter_renames
from acomms_core.ros_acomms_params import (
    PARAMS_FILE_NAME,
    as_parameter_value,
    read_params_file,
)

__all__ = ["ParameterSpec", "Validator", "declare_parameters", "parameter_values", "run_node",
           "is_active", "lifecycle_state_label", "NodeResources", "ManagedNode",
           "destroy_entities", "now_s", "seconds_to_time_msg", "seconds_to_duration_msg",
           "stamp_seconds", "declared_parameter_specs", "counters_diagnostics", "wake_timer_at",
           "announce_unconfigured"]

# apply(values, changed): values are every spec's current value after an accepted change,
# changed the names that changed.
Apply = Callable[[dict[str, Any], frozenset], None]


def _given_at_start(node, name: str) -> Parameter | None:
    """The start-up value (params file, launch, parameter_overrides) of a name the node does
    not declare, read through rclpy's public API: declared for a moment, then undeclared."""
    from rcl_interfaces.msg import ParameterDescriptor

    param = node.declare_parameter(name, None, ParameterDescriptor(dynamic_typing=True))
    node.undeclare_parameter(name)
    return None if param.type_ == Parameter.Type.NOT_SET else param


def _read_ros_acomms_names(node, specs: dict[str, ParameterSpec]) -> dict[str, Any]:
    """{our name: value} for ros_acomms parameter names given at start-up whose counterpart is
    one of names, each with a warning (acomms_core.ros_acomms_names); ROS would otherwise ignore
    the undeclared name silently. The value is declared as the default: ours, if given, wins."""
    values = {}
    for old, new in parameter_renames().items():
        if new not in specs or old in specs:
            continue
        given = _given_at_start(node, old)
        if given is None:
            continue
        if _given_at_start(node, new) is not None:
            node.get_logger().warning(f"parameter '{old}' (ros_acomms) ignored: '{new}' is "
                                      "given too")
            continue
        values[new] = as_parameter_value(specs[new], given.value)
        node.get_logger().warning(f"parameter '{old}' is the ros_acomms name; read as '{new}' "
                                  f"(use '{new}')")
    return values


def _params_file_values(node, specs: tuple[ParameterSpec, ...]) -> tuple[dict, dict]:
    """({ros_acomms_params_file: path}, the file's values) when specs have that parameter
    (acomms_core.ros_acomms_params); its notes are logged. ValueError: the file's problem."""
    spec = next((s for s in specs if s.name == PARAMS_FILE_NAME), None)
    if spec is None:
        return {}, {}
    path = node.declare_parameter(spec.name, spec.default, spec.descriptor()).value
    if not path:
        return {spec.name: path}, {}
    file_values, notes = read_params_file(path, specs)
    for note in notes:
        node.get_logger().warning(note)
    node.get_logger().info(f"{PARAMS_FILE_NAME} {path}: read {', '.join(sorted(file_values))}")
    return {spec.name: path}, file_values


def declare_parameters(node, specs: Iterable[ParameterSpec], validator: Validator | None = None,
                       apply: Apply | None = None) -> dict[str, Any]:
    """Declare specs on node, install validator (on-set) and apply (post-set); return the values.

    The validator sees the merged candidate values of every spec (current values with the change
    applied) and returns a reason to refuse, or None; it must not change the node. `apply` runs
    after a change was accepted. Overrides given at construction (parameter_overrides, launch
    files, YAML) are validated too: a bad initial value raises ValueError here with the reason.
    """
    specs = tuple(specs)
    names = {spec.name for spec in specs}
    _record_specs(node, specs)
    values, file_values = _params_file_values(node, specs)
    file_values.update(_read_ros_acomms_names(node, {spec.name: spec for spec in specs}))
    for spec in specs:
        if spec.name in values:
            continue
        if spec.name in file_values:  # ros_acomms names and files: given values win
            param = node.declare_parameter(spec.name, file_values[spec.name], spec.descriptor())
        elif spec.parameter_type is not None and spec.default is None:
            param = node.declare_parameter(
                spec.name, Parameter.Type[spec.type_name.upper()], spec.descriptor())
        else:
            param = node.declare_parameter(spec.name, spec.default, spec.descriptor())
        values[spec.name] = param.value
    if validator is not None:
        reason = validator(dict(values))
        if reason:
            raise ValueError(reason)

        def on_set(parameters: list[Parameter]) -> SetParametersResult:
            change = {p.name: p.value for p in parameters if p.name in names}
            if not change:
                return SetParametersResult(successful=True)
            candidate = {**parameter_values(node, names), **change}
            try:
                reason = validator(candidate)
            except Exception as exc:  # a validator bug must refuse, not crash the node
                reason = f"validation error: {exc}"
            return SetParametersResult(successful=not reason, reason=reason or "")

        node.add_on_set_parameters_callback(on_set)
    if apply is not None:
        def post_set(parameters: list[Parameter]) -> None:
            changed = frozenset(p.name for p in parameters) & names
            if changed:
                apply(parameter_values(node, names), changed)

        node.add_post_set_parameters_callback(post_set)
    return values


_DECLARED_SPECS = "_acomms_declared_parameter_specs"


def _record_specs(node, specs: tuple[ParameterSpec, ...]) -> None:
    if getattr(node, _DECLARED_SPECS, None) is None:
        setattr(node, _DECLARED_SPECS, [])
    getattr(node, _DECLARED_SPECS).extend(specs)


def declared_parameter_specs(node) -> tuple[ParameterSpec, ...]:
    """Every ParameterSpec declared on node through `declare_parameters`, in declaration order
    (what docs/reference/nodes.md lists)."""
    return tuple(getattr(node, _DECLARED_SPECS, None) or ())


def parameter_values(node, names: Iterable[str]) -> dict[str, Any]:
    """Current values of the named parameters; None for one declared without a value yet (a
    typed parameter no override set), as the validator saw it at declaration."""
    from rclpy.exceptions import ParameterUninitializedException

    values = {}
    for name in names:
        try:
            values[name] = node.get_parameter(name).value
        except ParameterUninitializedException:
            values[name] = None
    return values


def run_node(node_factory: Callable[[], Any], args: list[str] | None = None) -> int:
    """Console-script body shared by every acomms node: init, spin, clean shutdown.

    The node is spun by the executor its class names in `EXECUTOR` ("single": one thread, the
    fastest for nodes whose callbacks are short, e.g. the queue and dispatch under a message
    flood; default "multi": a MultiThreadedExecutor, services answered in parallel). A node whose
    initial parameters are refused (out of range, wrong type, or a validator's reason) exits with
    status 1 and the reason on stderr, not a traceback. SIGINT / SIGTERM (Ctrl-C, `ros2 launch`
    stopping) end the process with status 0 and no error, whenever they come
    (`acomms_core.ros.interrupts`). A lifecycle node left unconfigured says once what it waits for
    (`announce_unconfigured`).
    """
    import sys

    import rclpy
    from rclpy.exceptions import ParameterException
    from rclpy.executors import (
        ExternalShutdownException,
        MultiThreadedExecutor,
        SingleThreadedExecutor,
    )

    interrupted = quiet_interrupts()
    if interrupted:  # a signal while the node module was imported: nothing started yet
        return 0
    rclpy.init(args=args)
    try:
        try:
            node = node_factory()
        except (ValueError, ParameterException) as exc:
            name = getattr(node_factory, "__name__", "node")
            print(f"{name}: refused parameters: {exc}", file=sys.stderr)
            return 1
        except Exception:
            if interrupted or not rclpy.ok():
                return 0  # interrupted while the node was being made: nothing to report
            raise
        if isinstance(node, LifecycleNode):
            announce_unconfigured(node)
        single = getattr(node_factory, "EXECUTOR", "multi") == "single"
        executor = SingleThreadedExecutor() if single else MultiThreadedExecutor()
        executor.add_node(node)
        try:
            if not interrupted:  # a signal before rclpy.init: stop at once
                executor.spin()
        except (KeyboardInterrupt, ExternalShutdownException):
            pass
        except Exception:
            # SIGINT shut the context down while the executor was between two waits: rclpy
            # then raises from its next wait set (RCLError) instead of ExternalShutdownException.
            if not (interrupted or not rclpy.ok()):
                raise
        finally:
            executor.shutdown()
            node.destroy_node()
    finally:
        rclpy.try_shutdown()
    return 0


UNCONFIGURED_NOTICE_S = 3.0  # wall seconds after start before an unconfigured node says so


def announce_unconfigured(node, after_s: float = UNCONFIGURED_NOTICE_S) -> None:
    """Once, `after_s` wall seconds after start, a node still unconfigured logs what it is
    waiting for (a lifecycle manager, or `ros2 lifecycle set`). Safe to call twice."""
    if getattr(node, "_unconfigured_notice", None) is not None:
        return
    from rclpy.clock import Clock, ClockType

    def notice():
        node._unconfigured_notice.cancel()
        if lifecycle_state_label(node) == "unconfigured":
            name = node.get_fully_qualified_name()
            node.get_logger().info(
                f"unconfigured: waiting for a lifecycle manager (a lifecycle_manager with {name} "
                f"in node_names, e.g. vehicle.launch.py, or `ros2 lifecycle set {name} "
                "configure` then `activate`)")

    node._unconfigured_notice = node.create_timer(
        after_s, notice, clock=Clock(clock_type=ClockType.STEADY_TIME))


LISTED_IS_THERE_S = 1.0  # a service listed this long without DDS calling it ready is used


def service_listed(node, name: str) -> bool:
    """Whether the fully qualified service `name` is in the ROS graph `node` sees."""
    return any(listed == name for listed, _types in node.get_service_names_and_types())


class ListedLongEnough:
    """Fast DDS calls a service "not ready" while its graph still holds half of a dead server of
    the same name (a node restarted within its discovery lease, an earlier test's node). Fed
    each poll with whether the service is listed, says when it has been listed for
    LISTED_IS_THERE_S: then it is used anyway, and a request lost on the way is retried."""

    def __init__(self, after_s: float = LISTED_IS_THERE_S):
        self.after_s = after_s
        self._since: float | None = None

    def __call__(self, listed: bool, now_s: float) -> bool:
        self._since = (self._since if self._since is not None else now_s) if listed else None
        return self._since is not None and now_s - self._since >= self.after_s


def destroy_entities(node, entities: Iterable[Any]) -> None:
    """Destroy the publishers, services, subscriptions, clients and timers a node created (e.g. in
    on_cleanup), each with the node method for its type; while endpoints are deferred (the end of
    a run: `deferred_endpoints`), the DDS endpoints only leave their node, destroyed later."""
    from rclpy.client import Client
    from rclpy.lifecycle import LifecyclePublisher
    from rclpy.publisher import Publisher
    from rclpy.service import Service
    from rclpy.subscription import Subscription
    from rclpy.timer import Timer

    from acomms_core.ros.deferred_endpoints import deferring

    # A plain rclpy Node (no lifecycle publishers) may use this too.
    destroy_lifecycle_publisher = getattr(node, "destroy_lifecycle_publisher",
                                          node.destroy_publisher)
    destroyers = ((LifecyclePublisher, destroy_lifecycle_publisher),
                  (Publisher, node.destroy_publisher),
                  (Service, node.destroy_service), (Subscription, node.destroy_subscription),
                  (Client, node.destroy_client), (Timer, node.destroy_timer))
    deferred = deferring()
    for entity in entities:
        destroy = next((d for kind, d in destroyers if isinstance(entity, kind)), None)
        if destroy is None:
            raise TypeError(f"cannot destroy {entity!r}")
        if deferred is not None and not isinstance(entity, Timer):
            deferred.release(destroy, entity)
        else:
            destroy(entity)


def lifecycle_state_label(node) -> str:
    """'unconfigured', 'inactive', 'active', 'finalized' or a transition state's label."""
    return node._state_machine.current_state[1]  # the one place that reads rclpy's internals


def is_active(node) -> bool:
    return lifecycle_state_label(node) == "active"


class NodeResources:
    """The ROS entities a lifecycle node created, released together in reverse order.

    Create through the holder (`resources.publisher(...)`, `.service(...)`, ...) or `track` an
    entity made elsewhere; `release()` destroys all of them, newest first, and is safe to call
    twice (on_cleanup, then on_shutdown or destroy_node).
    """

    def __init__(self, node):
        self._node = node
        self._entities: list[Any] = []

    def __len__(self) -> int:
        return len(self._entities)

    def track(self, entity):
        self._entities.append(entity)
        return entity

    def publisher(self, msg_type, topic: str, qos=10, **kwargs):
        """A lifecycle publisher (publishes only while the node is active)."""
        return self.track(self._node.create_lifecycle_publisher(msg_type, topic, qos, **kwargs))

    def service(self, srv_type, name: str, callback, **kwargs):
        """A service whose replies are sent again when discovery lost them
        (acomms_core.ros.service_calls.ReliableReplies)."""
        service = self._node.create_service(srv_type, name, callback, **kwargs)
        ReliableReplies(service, self._node.get_logger())
        return self.track(service)

    def subscription(self, msg_type, topic: str, callback, qos=10, **kwargs):
        return self.track(self._node.create_subscription(msg_type, topic, callback, qos,
                                                         **kwargs))

    def client(self, srv_type, name: str, **kwargs):
        return self.track(self._node.create_client(srv_type, name, **kwargs))

    def timer(self, period_s: float, callback, **kwargs):
        return self.track(self._node.create_timer(period_s, callback, **kwargs))

    def release(self) -> None:
        entities, self._entities = self._entities, []
        destroy_entities(self._node, reversed(entities))


def now_s(node) -> float:
    """The node clock's time in seconds (sim time when use_sim_time is set)."""
    return node.get_clock().now().nanoseconds * 1e-9


def _time_fields(seconds: float) -> tuple[int, int]:
    """(sec, nanosec) of a builtin_interfaces Time or Duration holding `seconds`."""
    whole = math.floor(seconds)
    nanos = int(round((seconds - whole) * 1e9))
    if nanos >= 1_000_000_000:
        whole, nanos = whole + 1, nanos - 1_000_000_000
    return int(whole), nanos


def seconds_to_time_msg(seconds: float):
    from builtin_interfaces.msg import Time

    sec, nanosec = _time_fields(seconds)
    return Time(sec=sec, nanosec=nanosec)


def stamped_seconds(seconds: float) -> float:
    """What `stamp_seconds` reads back from a Time or Duration message made of `seconds`,
    without making the message."""
    sec, nanosec = _time_fields(seconds)
    return sec + nanosec * 1e-9


def seconds_to_duration_msg(seconds: float):
    from builtin_interfaces.msg import Duration

    msg = seconds_to_time_msg(seconds)
    return Duration(sec=msg.sec, nanosec=msg.nanosec)


def stamp_seconds(msg) -> float:
    """Seconds of a builtin_interfaces Time or Duration message."""
    return msg.sec + msg.nanosec * 1e-9


def listened(publisher) -> bool:
    """Whether anyone subscribes to `publisher` now. Periodic status is built and published only
    then: a simulation of many vehicles at --warp max would otherwise spend a third of its time
    serializing status nobody receives (volatile topics: a later subscriber gets the next one)."""
    try:
        return publisher is not None and publisher.get_subscription_count() > 0
    except Exception:  # destroyed meanwhile (another thread)
        return False


def counters_diagnostics(name: str, message: str, counters: dict, stamp,
                         level: int | None = None):
    """A DiagnosticArray with one status (name, message, every counter as a key/value): what an
    acomms node publishes on /diagnostics."""
    from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue

    diagnostics = DiagnosticArray()
    diagnostics.header.stamp = stamp
    diagnostics.status.append(DiagnosticStatus(
        level=DiagnosticStatus.OK if level is None else level, name=name, message=message,
        values=[KeyValue(key=str(k), value=str(v)) for k, v in sorted(counters.items())]))
    return diagnostics


def wake_timer_at(timer, wake_ns: int, now_ns: int) -> bool:
    """Make a periodic timer fire next at wake_ns (node-clock ns; then every wake_ns - now_ns
    until changed again). False when the timer was destroyed meanwhile (another thread)."""
    from rclpy._rclpy_pybind11 import InvalidHandle

    try:
        timer.timer_period_ns = max(1, wake_ns - now_ns)
        timer.reset()
    except InvalidHandle:
        return False
    return True


PARAMETER_EVENTS_TOPIC = "/parameter_events"  # rclpy's Node creates its publisher at construction


class OptionalParameterEvents:
    """Mixed in before rclpy's Node: `parameter_events=False` (lean nodes without parameter
    services) makes a node without the /parameter_events publisher; nothing outside the process
    can change or list such a node's parameters, and every endpoint less makes every later one
    of the process cheaper to create."""

    def __init__(self, node_name: str, *args, parameter_events: bool = True, **kwargs):
        self._acomms_parameter_events = parameter_events  # read by create_publisher below
        super().__init__(node_name, *args, **kwargs)

    def create_publisher(self, msg_type, topic, *args, **kwargs):
        if topic == PARAMETER_EVENTS_TOPIC and not getattr(self, "_acomms_parameter_events", True):
            return None  # rclpy's Node then publishes no parameter events (it checks for None)
        return super().create_publisher(msg_type, topic, *args, **kwargs)


class ManagedNode(OptionalParameterEvents, LifecycleNode):
    """An rclpy LifecycleNode with the acomms lifecycle rule built in (docs/ARCHITECTURE.md).

    `self.configured` holds what on_configure creates (publishers, clients), `self.activated`
    what on_activate creates (services, subscriptions, timers that must not act while
    inactive). on_deactivate releases `activated`; on_cleanup and on_shutdown release
    everything through `release_resources()`: `activated`, then the node's own `on_release()`
    (stop threads, drop references), then `configured`. Safe to run twice.

    `WORKER` (optional) names the attribute holding a background worker the node starts in
    on_activate (a socket server, link or client with `close()`): deactivate, cleanup,
    shutdown and destroy_node close it and set the attribute to None.
    """

    WORKER: str | None = None

    def __init__(self, node_name: str, parameter_events: bool = True, **kwargs):
        """parameter_events=False: `OptionalParameterEvents`."""
        super().__init__(node_name, parameter_events=parameter_events, **kwargs)
        self.configured = NodeResources(self)
        self.activated = NodeResources(self)
        announce_unconfigured(self)

    def close_worker(self) -> None:
        """Close the WORKER (if any, if running); safe to call twice."""
        if self.WORKER is None:
            return
        worker = getattr(self, self.WORKER, None)
        if worker is not None:
            setattr(self, self.WORKER, None)
            worker.close()

    def destroy_node(self):
        self.close_worker()
        return super().destroy_node()

    def on_deactivate(self, state):
        self.activated.release()
        self.close_worker()
        return super().on_deactivate(state)

    def on_cleanup(self, state):
        self.release_resources()
        return TransitionCallbackReturn.SUCCESS

    def on_shutdown(self, state):
        self.release_resources()
        return TransitionCallbackReturn.SUCCESS

    def release_resources(self) -> None:
        self.activated.release()
        self.close_worker()
        self.on_release()
        self.configured.release()

    def on_release(self) -> None:
        """Hook: the node's own clean-up between releasing `activated` and `configured`."""

    def activate_failed(self, exc: Exception) -> TransitionCallbackReturn:
        """For on_activate's `except`: log the reason, release what activate made, FAILURE.
        While the process is stopping (SIGINT shut the context down mid-activate), no error."""
        if self.context.ok():
            self.get_logger().error(f"activate refused: {type(exc).__name__}: {exc}")
        else:
            self.get_logger().info("activate interrupted: the process is stopping")
        self.activated.release()
        return TransitionCallbackReturn.FAILURE
