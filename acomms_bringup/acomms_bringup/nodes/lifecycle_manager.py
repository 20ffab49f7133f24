"""lifecycle_manager: bring a vehicle's lifecycle nodes up and down in dependency order.

Drives the nodes named in `node_names` (in dependency order; relative names are resolved in the
manager's namespace, so a launch file can push a namespace around the manager and its nodes)
through their standard `<node>/change_state` and `<node>/get_state` services (lifecycle_msgs), so
it works the same for nodes in this process (embedded runner) and in other processes (launch files).

- startup: configure every node in order, then activate every node in order, each step planned
  by `acomms_bringup.description.bringup_policy.next_step` from the states, the moved node's
  state read again just before its transition. A call whose answer does not come within
  `transition_timeout_seconds` is not a failure: it is retried with backoff until
  `retry_deadline_seconds` (a change_state only after reading that the node did not move). If a
  node refuses a transition, stays away, or the deadline passes, the manager names the node and
  the reason, then rolls back what this startup changed (deactivate, clean up, in reverse
  order), so no node is left half-started. With `wait_for_managers`, startup first waits until
  those managers report their groups active (their `manager_status`).
- shutdown: deactivate then clean up in reverse order (best effort; failures are reported).
- restart: shutdown then startup.

Interfaces (relative to the manager, `~/`): services `startup`, `shutdown`, `restart`, `status`
(std_srvs/Trigger; the response message says what happened or who failed and why), and the
transient-local topic `manager_status` (diagnostic_msgs/DiagnosticArray: one status for the manager
and one per managed node, level ERROR naming the reason on failure).

The manager is a plain rclpy node (not a lifecycle node itself): it is what brings the lifecycle
nodes up, so it must be running before anything else is. All its waiting is asynchronous
(coroutine callbacks), so it works under a single- or multi-threaded executor, in-process or not.

In-process fast path: a process that holds the managed node objects (the embedded runner) hands
them over with `use_local_nodes({name: node})` before the manager spins. The manager then drives
those nodes by calling their `trigger_*` methods and reading their state directly, inside the
node's own callback group (as its change_state service would run), instead of waiting for their
services to be discovered and making two or three service round trips per transition. Nothing
else changes: the same sequences, rollback, reasons, status topic and services; every node still
serves its lifecycle and parameter services for `ros2 lifecycle` / `ros2 param`. The service
clients to a managed node are created only when the manager first reaches it through its
services (no DDS entities for nodes driven in-process).
"""

from __future__ import annotations

import contextlib
import dataclasses
import sys
import threading
import time
from typing import Any

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from lifecycle_msgs.msg import State, Transition
from lifecycle_msgs.srv import ChangeState, GetState
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.clock import Clock, ClockType
from rclpy.lifecycle import TransitionCallbackReturn
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from rclpy.task import Future
from std_srvs.srv import Trigger

from acomms_bringup.description.bringup_policy import (
    DOWN,
    TRANSITION_STATES,
    UP,
    Attempts,
    Blocked,
    Wait,
    is_valid_node_name,
    next_step,
    resolve_node_name,
)
from acomms_core.ros.ros_support import (
    ListedLongEnough,
    NodeResources,
    ParameterSpec,
    declare_parameters,
    lifecycle_state_label,
    run_node,
    service_listed,
)

STATE_LABELS = {
    State.PRIMARY_STATE_UNKNOWN: "unknown",
    State.PRIMARY_STATE_UNCONFIGURED: "unconfigured",
    State.PRIMARY_STATE_INACTIVE: "inactive",
    State.PRIMARY_STATE_ACTIVE: "active",
    State.PRIMARY_STATE_FINALIZED: "finalized",
}

PARAMETERS = (
    ParameterSpec("node_names", None,
                  "Names of the lifecycle nodes to manage, in dependency order (started in this "
                  "order, stopped in reverse); relative names are resolved in the manager's "
                  "namespace.",
                  read_only=True, parameter_type=Parameter.Type.STRING_ARRAY),
    ParameterSpec("autostart", True,
                  "Start (configure + activate) the managed nodes as soon as the manager runs."),
    ParameterSpec("transition_timeout_seconds", 10.0,
                  "Longest wait for one change_state or get_state answer, s (wall clock).",
                  minimum=0.1, maximum=600.0),
    ParameterSpec("service_wait_seconds", 10.0,
                  "Longest wait for a managed node's lifecycle services to appear, s (wall clock).",
                  minimum=0.0, maximum=600.0),
    ParameterSpec("retry_deadline_seconds", 60.0,
                  "How long one step (a state read or a transition) is retried when its answer "
                  "does not come, with backoff, before the manager gives up, s (wall clock).",
                  minimum=0.0, maximum=3600.0),
    ParameterSpec("wait_for_managers", None,
                  "Other lifecycle managers (names, relative ones in this namespace) whose groups "
                  "must be active before this manager starts its own (e.g. the clock after every "
                  "vehicle).",
                  read_only=True, parameter_type=Parameter.Type.STRING_ARRAY),
    ParameterSpec("manager_wait_seconds", 300.0,
                  "Longest wait for the managers in wait_for_managers to be active, s "
                  "(wall clock).",
                  minimum=0.0, maximum=3600.0),
)


def check_node_names(values: dict[str, Any]) -> str | None:
    """Pure validator: node_names must be distinct node names (fully qualified or relative);
    wait_for_managers must be node names too."""
    names = list(values.get("node_names") or ())
    if not names:
        return "node_names: give at least one lifecycle node name"
    for key in ("node_names", "wait_for_managers"):
        for name in values.get(key) or ():
            if not is_valid_node_name(name):
                return (f"{key}: {name!r} is not a node name like /auv/node (fully qualified) "
                        "or node (relative to the manager's namespace)")
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        return f"node_names: listed more than once: {duplicates}"
    return None


def _status(name: str, state: str, error: bool, message: str) -> DiagnosticStatus:
    """One manager_status entry."""
    return DiagnosticStatus(level=DiagnosticStatus.ERROR if error else DiagnosticStatus.OK,
                            name=name, hardware_id="", message=message,
                            values=[KeyValue(key="state", value=state)])


class TransitionError(Exception):
    """One managed node could not be moved; the message says which and why."""


TRANSITION_LABELS = {Transition.TRANSITION_CONFIGURE: "configure",
                     Transition.TRANSITION_ACTIVATE: "activate",
                     Transition.TRANSITION_DEACTIVATE: "deactivate",
                     Transition.TRANSITION_CLEANUP: "cleanup"}
TRANSITION_IDS = {label: transition_id for transition_id, label in TRANSITION_LABELS.items()}
LOCAL_BUSY_POLL_SECONDS = 0.002  # while an in-process node is inside another of its callbacks
MANAGER_POLL_SECONDS = 0.1  # while waiting for the managers of wait_for_managers
# rclpy's multi-threaded executor resumes a waiting coroutine only when it next wakes up; a
# future completed while the coroutine was still running in another thread can leave it asleep
# with nothing else due. A steady timer wakes the executor this often while a sequence runs.
SEQUENCE_WAKE_SECONDS = 0.1


@dataclasses.dataclass
class _Managed:
    name: str
    change_state: Any = None  # service clients, created at first use
    get_state: Any = None
    node: Any = None  # the node object when it lives in this process (use_local_nodes)
    state: str = "unknown"
    problem: str = ""


def _change_state_service(node):
    """The node's change_state service: the entity (and callback group) a local transition
    runs as, so it never overlaps the node's other callbacks of that group."""
    name = f"{node.get_fully_qualified_name()}/change_state"
    for service in node.services:
        if service.srv_name == name:
            return service
    raise ValueError(f"{node.get_fully_qualified_name()} has no lifecycle service {name}")


def _trigger(node, transition_id: int) -> bool:
    """One transition of an in-process lifecycle node; True on success."""
    trigger = {Transition.TRANSITION_CONFIGURE: node.trigger_configure,
               Transition.TRANSITION_ACTIVATE: node.trigger_activate,
               Transition.TRANSITION_DEACTIVATE: node.trigger_deactivate,
               Transition.TRANSITION_CLEANUP: node.trigger_cleanup}[transition_id]
    return trigger() == TransitionCallbackReturn.SUCCESS


class _NodeReach:
    """How the manager reaches a managed node: its lifecycle services (any process) or, for a
    node handed over with `use_local_nodes`, the node object itself. Mixed into
    LifecycleManager (uses its `_resources`, `_group`, `_steady`, `_timeout`, `_service_wait`)."""

    def _make_clients(self, managed: _Managed) -> None:
        """Both service clients, once (status and startup may run in parallel threads)."""
        with self._clients_lock:
            if managed.get_state is None:
                managed.change_state = self._resources.client(
                    ChangeState, f"{managed.name}/change_state", callback_group=self._group)
                managed.get_state = self._resources.client(
                    GetState, f"{managed.name}/get_state", callback_group=self._group)

    @staticmethod
    def _services_ready(managed: _Managed) -> bool:
        return managed.change_state.service_is_ready() and managed.get_state.service_is_ready()

    def _services_listed(self, managed: _Managed) -> bool:
        """Both lifecycle services listed in the ROS graph."""
        return all(service_listed(self, f"{managed.name}/{kind}")
                   for kind in ("change_state", "get_state"))

    async def _wait_for_services(self, managed: _Managed) -> None:
        """Until both clients are matched, or both services have been listed long enough
        without DDS calling them ready (ListedLongEnough: then they are used, `_report_fallback`);
        TransitionError after service_wait_seconds."""
        self._make_clients(managed)
        deadline = time.monotonic() + self._service_wait
        listed_long_enough = ListedLongEnough()
        while not self._services_ready(managed):
            now = time.monotonic()
            if listed_long_enough(self._services_listed(managed), now):
                self._report_fallback(managed)
                return
            if now >= deadline:
                managed.problem = "lifecycle services not available"
                raise TransitionError(
                    f"{managed.name}: lifecycle services {managed.name}/change_state and "
                    f"get_state did not appear within {self._service_wait:g} s (is the node "
                    "running, with that exact name and namespace?)")
            await self._sleep(0.05)

    def _same_name_count(self, managed: _Managed) -> int:
        """How many nodes of the graph carry the managed node's fully qualified name."""
        return sum(f"{namespace.rstrip('/')}/{name}" == managed.name
                   for name, namespace in self.get_node_names_and_namespaces())

    def _report_fallback(self, managed: _Managed) -> None:
        """Services listed but not yet matched: usual on a first start (DDS matches the clients a
        little later, a request lost meanwhile is retried), so a debug line; a warning only when
        the graph holds two nodes of that name (a dead one not yet gone, or a real duplicate)."""
        count = self._same_name_count(managed)
        if count > 1:
            self.get_logger().warning(
                f"{managed.name}: {count} nodes of that name are in the graph (a dead one not "
                "yet gone, or a duplicate) and DDS does not report its lifecycle services "
                "ready; using the listed ones", throttle_duration_sec=10.0)
            return
        self.get_logger().debug(f"{managed.name}: lifecycle services listed, DDS not yet "
                                "reporting them ready; using them (a lost request is retried)")

    async def _call_once(self, kind: str, request, what: str, managed: _Managed):
        """One `kind` ("change_state" or "get_state") call; its answer, or None when none came
        within the transition timeout (lost or late: the caller decides whether to retry)."""
        client = getattr(managed, kind)
        if client is None or not client.service_is_ready():
            await self._wait_for_services(managed)
            client = getattr(managed, kind)
        future = client.call_async(request)
        with self._steady_timer(self._timeout, future.cancel):
            try:
                result = await future
            except Exception as exc:
                managed.problem = f"{what} call failed: {exc}"
                raise TransitionError(f"{managed.name}: {managed.problem}") from None
        if future.cancelled() or result is None:
            client.remove_pending_request(future)
            return None
        return result

    def _no_answer(self, managed: _Managed, what: str, attempts: Attempts) -> TransitionError:
        managed.problem = (f"{what} got no answer within {self._timeout:g} s "
                           f"({attempts.count} attempts in {self._retry_deadline:g} s)")
        return TransitionError(f"{managed.name}: {managed.problem}")

    async def _pause_or_give_up(self, managed: _Managed, what: str, attempts: Attempts):
        pause = attempts.next_pause_s()
        if pause is None:
            raise self._no_answer(managed, what, attempts)
        await self._sleep(pause)

    async def _read_state(self, managed: _Managed, what: str = "get_state",
                          attempts: Attempts | None = None) -> str:
        """get_state, retried with backoff until the retry deadline (or that of `attempts`,
        the transition it is part of, reported as `what`)."""
        attempts = attempts or Attempts(self._retry_deadline)
        while True:
            attempts.attempted()
            result = await self._call_once("get_state", GetState.Request(), "get_state",
                                           managed)
            if result is not None:
                return STATE_LABELS.get(result.current_state.id,
                                        result.current_state.label or "unknown")
            await self._pause_or_give_up(managed, what, attempts)

    async def _refresh_state(self, managed: _Managed, required: bool = False,
                             what: str = "get_state", attempts: Attempts | None = None) -> str:
        if managed.node is not None:
            managed.state = lifecycle_state_label(managed.node)
            return managed.state
        try:
            managed.state = await self._read_state(managed, what, attempts)
        except TransitionError:
            managed.state = "unknown"
            if required:
                raise
        return managed.state

    async def _service_transition(self, managed: _Managed, transition_id: int, label: str,
                                  expected: str) -> bool:
        """change_state over the service; an answer that does not come is not a failure: the
        state is read again, and the transition sent again only if it did not happen."""
        before = managed.state
        request = ChangeState.Request(transition=Transition(id=transition_id))
        attempts = Attempts(self._retry_deadline)
        while True:
            attempts.attempted()
            result = await self._call_once("change_state", request, label, managed)
            if result is not None:
                return result.success
            state = await self._settled_state(managed, attempts, label)
            if state == expected:
                return True
            if state != before:
                return False  # it moved elsewhere (a failed transition): not retried
            self.get_logger().warning(f"{managed.name}: {label} got no answer within "
                                      f"{self._timeout:g} s; the node is still {state}: "
                                      "sending it again")
            await self._pause_or_give_up(managed, label, attempts)

    async def _settled_state(self, managed: _Managed, attempts: Attempts, what: str) -> str:
        """The node's state once it is out of any transition state (read again with backoff)."""
        while True:
            state = await self._refresh_state(managed, True, what, attempts)
            if state not in TRANSITION_STATES:
                return state
            await self._pause_or_give_up(managed, what, attempts)

    async def _local_transition(self, managed: _Managed, transition_id: int, label: str) -> bool:
        """Run the transition in this thread, as the node's change_state service would: inside
        that service's callback group (waiting while the node runs another callback of it)."""
        entity = _change_state_service(managed.node)
        group = entity.callback_group
        deadline = time.monotonic() + self._timeout
        while not group.beginning_execution(entity):
            if time.monotonic() >= deadline:
                managed.problem = f"{label}: the node stayed busy for {self._timeout:g} s"
                raise TransitionError(f"{managed.name}: {managed.problem}")
            await self._sleep(LOCAL_BUSY_POLL_SECONDS)
        started = time.monotonic()
        try:
            success = _trigger(managed.node, transition_id)
        except Exception as exc:  # rclpy refuses (e.g. not initialized): report, do not crash
            managed.problem = f"{label} call failed: {exc}"
            raise TransitionError(f"{managed.name}: {managed.problem}") from None
        finally:
            group.ending_execution(entity)
        took = time.monotonic() - started
        if took > self._timeout:  # held to the same limit as an answer over the service
            managed.problem = (f"{label} took {took:.1f} s, longer than the "
                               f"{self._timeout:g} s transition timeout")
            raise TransitionError(f"{managed.name}: {managed.problem}")
        return success

    async def _sleep(self, seconds: float) -> None:
        done = Future()
        with self._steady_timer(seconds, lambda: done.set_result(None)):
            await done

    @contextlib.contextmanager
    def _steady_timer(self, seconds: float, callback):
        """A wall-clock (steady) timer that lives for the `with` block."""
        timer = self.create_timer(seconds, callback, self._group, clock=self._steady)
        try:
            yield timer
        finally:
            if not getattr(self, "_destroyed", False):  # destroy_node took it already
                timer.cancel()
                self.destroy_timer(timer)


class _FollowManagers:
    """`wait_for_managers`: other managers whose groups must be active first. Mixed into
    LifecycleManager (uses its `_wait_for`, `_resources`, `_group`, `_sleep`)."""

    def _follow_managers(self) -> None:
        """Subscribe once to each `wait_for_managers` manager's transient-local manager_status
        (kept until destroy_node: destroying entities while a multi-threaded executor builds its
        wait set is not safe)."""
        self._followed = {resolve_node_name(name, self.get_namespace()): "no status yet"
                          for name in self._wait_for}
        qos = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL,
                         reliability=ReliabilityPolicy.RELIABLE)
        for name in self._followed:
            self._resources.subscription(
                DiagnosticArray, f"{name}/manager_status",
                lambda array, name=name: self._on_followed_status(name, array), qos,
                callback_group=self._group)

    def _on_followed_status(self, name: str, array: DiagnosticArray) -> None:
        manager = array.status[0]
        state = next((v.value for v in manager.values if v.key == "state"), "?")
        self._followed[name] = "active" if state == "active" else f"{state}: {manager.message}"

    async def _wait_for_managers(self) -> None:
        """Until every manager of `wait_for_managers` reports its group active, or
        manager_wait_seconds pass."""
        if not self._followed:
            return
        self.get_logger().info(f"waiting for {', '.join(self._followed)} to be active")
        deadline = time.monotonic() + self.get_parameter("manager_wait_seconds").value
        while any(state != "active" for state in self._followed.values()):
            if time.monotonic() >= deadline:
                late = "; ".join(f"{n} ({s})" for n, s in self._followed.items()
                                 if s != "active")
                raise TransitionError(f"managers not active in time: {late}")
            await self._sleep(MANAGER_POLL_SECONDS)


class LifecycleManager(_FollowManagers, _NodeReach, Node):
    """Configures/activates its managed nodes in order; rolls back on failure."""

    def __init__(self, node_name: str = "lifecycle_manager", **kwargs):
        super().__init__(node_name, **kwargs)
        self._group = ReentrantCallbackGroup()
        self._clients_lock = threading.Lock()
        self._steady = Clock(clock_type=ClockType.STEADY_TIME)
        values = declare_parameters(self, PARAMETERS, check_node_names)
        self._resources = NodeResources(self)  # released by destroy_node
        self._managed = [_Managed(resolve_node_name(name, self.get_namespace()))
                         for name in values["node_names"]]
        self._wait_for = tuple(values["wait_for_managers"] or ())  # read-only parameter
        self.manager_state = "idle"  # idle | starting | active | stopping | failed
        self.last_message = ""
        self._busy = False
        self._status_publisher = self._resources.track(self.create_publisher(
            DiagnosticArray, "~/manager_status",
            QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL,
                       reliability=ReliabilityPolicy.RELIABLE)))
        for service, handler in (("startup", self._on_startup), ("shutdown", self._on_shutdown),
                                 ("restart", self._on_restart), ("status", self._on_status)):
            self._resources.service(Trigger, f"~/{service}", handler, callback_group=self._group)
        self._follow_managers()
        self._publish_status()
        self._autostart_timer = None
        if values["autostart"]:
            self._autostart_timer = self.create_timer(0.0, self._autostart, self._group,
                                                      clock=self._steady)

    @property
    def node_names(self) -> list[str]:
        return [m.name for m in self._managed]

    def use_local_nodes(self, nodes) -> list[str]:
        """Drive the managed nodes found in `nodes` ({fully qualified name: lifecycle node of
        this process}) directly instead of through their services. Call it before the manager
        starts them. Returns the names it will drive in-process."""
        local = []
        for managed in self._managed:
            node = nodes.get(managed.name)
            if node is None:
                continue
            if node.get_fully_qualified_name() != managed.name:
                raise ValueError(f"{managed.name}: the node given is "
                                 f"{node.get_fully_qualified_name()}")
            _change_state_service(node)  # a lifecycle node with its services, or ValueError
            managed.node = node
            local.append(managed.name)
        return local

    def node_problems(self) -> list[tuple[str, str]]:
        """(node name, problem) for every managed node; problem is "" when it has none."""
        return [(m.name, m.problem) for m in self._managed]

    # Read at each use: a runtime `ros2 param set` takes effect for the next call.
    @property
    def _timeout(self) -> float:
        return self.get_parameter("transition_timeout_seconds").value

    @property
    def _service_wait(self) -> float:
        return self.get_parameter("service_wait_seconds").value

    @property
    def _retry_deadline(self) -> float:
        return self.get_parameter("retry_deadline_seconds").value

    # --- service handlers -------------------------------------------------------------------

    async def _autostart(self):
        self._autostart_timer.cancel()
        self.destroy_timer(self._autostart_timer)
        await self._run("startup", self.startup)

    async def _on_startup(self, request, response):
        return await self._respond(response, "startup", self.startup)

    async def _on_shutdown(self, request, response):
        return await self._respond(response, "shutdown", self.shutdown)

    async def _on_restart(self, request, response):
        async def restart():
            await self.shutdown()
            return await self.startup()
        return await self._respond(response, "restart", restart)

    async def _on_status(self, request, response):
        for managed in self._managed:  # one quick read each: a status never waits long
            if managed.node is None:
                self._make_clients(managed)
                if not (self._services_ready(managed) or self._services_listed(managed)):
                    managed.state = "unknown"
                    continue
            await self._refresh_state(managed, attempts=Attempts(0.0))
        self._publish_status()
        response.success = all(m.state == "active" for m in self._managed)
        lines = [f"manager {self.manager_state}"]
        lines += [f"{m.name}: {m.state}" + (f" ({m.problem})" if m.problem else "")
                  for m in self._managed]
        response.message = "; ".join(lines)
        return response

    async def _respond(self, response, what, action):
        response.success, response.message = await self._run(what, action)
        return response

    async def _run(self, what, action) -> tuple[bool, str]:
        if self._busy:
            message = f"{what} refused: a {self.manager_state} operation is in progress"
            self.get_logger().warning(message)
            return False, message
        self._busy = True
        try:
            with self._steady_timer(SEQUENCE_WAKE_SECONDS, lambda: None):
                return await action()
        except Exception as exc:  # a bug here must be reported, not kill the executor
            if self._stopping():
                return False, f"{what} interrupted: the process is stopping"
            self.manager_state = "failed"
            self.last_message = f"{what} failed unexpectedly: {exc!r}"
            self.get_logger().error(self.last_message)
            return False, self.last_message
        finally:
            self._busy = False
            self._publish_status()

    # --- the sequences ----------------------------------------------------------------------

    async def startup(self) -> tuple[bool, str]:
        """Configure all, then activate all; on failure roll back and explain."""
        self.manager_state = "starting"
        self._publish_status()
        changed: list[_Managed] = []  # nodes this startup moved, in the order it moved them
        try:
            await self._wait_for_managers()
            for managed in self._managed:
                managed.problem = ""
                if managed.node is None:
                    await self._wait_for_services(managed)
                await self._refresh_state(managed, required=True)
            # A node that failed or timed out mid-transition may still have moved: it is
            # rolled back too (from wherever it ended up).
            await self._drive(self._managed, UP, changed)
        except TransitionError as exc:
            return await self._startup_failed(str(exc), changed)
        self.manager_state = "active"
        self.last_message = f"startup: {len(self._managed)} nodes active"
        self.get_logger().info(f"{self.last_message}: {', '.join(self.node_names)}")
        return True, self.last_message

    async def _startup_failed(self, reason: str, changed: list[_Managed]) -> tuple[bool, str]:
        if self._stopping():
            return False, "startup interrupted: the process is stopping"
        self.get_logger().error(f"startup failed: {reason}; rolling back")
        rolled_back, problems = await self._roll_back(changed)
        self.manager_state = "failed"
        message = f"startup failed: {reason}"
        message += (f"; rolled back {', '.join(rolled_back)}" if rolled_back
                    else "; nothing to roll back")
        if problems:
            message += f"; roll-back problems: {'; '.join(problems)}"
        self.last_message = message
        return False, message

    async def _drive(self, nodes: list[_Managed], direction: str,
                     changed: list[_Managed] | None = None) -> None:
        """Move `nodes` (dependency order) all the way up or down, one transition at a time,
        each planned by `next_step` from the states known, the moved node's state read again
        just before its transition."""
        while True:
            plan = next_step([m.state for m in nodes], direction)
            if plan is None:
                return
            managed = nodes[plan.index]
            if isinstance(plan, Blocked):
                managed.problem = plan.reason
                raise TransitionError(f"{managed.name}: {plan.reason}")
            if isinstance(plan, Wait):
                await self._settled_state(managed, Attempts(self._retry_deadline),
                                          f"leaving state {plan.state}")
                continue
            before = managed.state
            if managed.node is None and await self._refresh_state(managed, True) != before:
                continue  # someone else moved it: plan again
            if changed is not None and managed not in changed:
                changed.append(managed)
            await self._transition(managed, TRANSITION_IDS[plan.transition], plan.expected)

    async def shutdown(self) -> tuple[bool, str]:
        """Deactivate then clean up every node, in reverse order; report what failed."""
        self.manager_state = "stopping"
        self._publish_status()
        problems = []
        for managed in reversed(self._managed):
            try:
                await self._bring_down(managed)
            except TransitionError as exc:
                problems.append(str(exc))
        if problems:
            self.manager_state = "failed"
            self.last_message = f"shutdown incomplete: {'; '.join(problems)}"
            self.get_logger().error(self.last_message)
            return False, self.last_message
        self.manager_state = "idle"
        self.last_message = f"shutdown: {len(self._managed)} nodes unconfigured"
        self.get_logger().info(self.last_message)
        return True, self.last_message

    async def _roll_back(self, changed: list[_Managed]) -> tuple[list[str], list[str]]:
        rolled_back, problems = [], []
        for managed in reversed(changed):
            problem = managed.problem  # keep the original failure reason for the report
            try:
                await self._refresh_state(managed, required=True)
                if await self._bring_down(managed):
                    rolled_back.append(managed.name)
            except TransitionError as exc:
                problems.append(str(exc))
            finally:
                managed.problem = problem or managed.problem
        return rolled_back, problems

    async def _bring_down(self, managed: _Managed) -> bool:
        """Deactivate and clean up as needed; True if the node had to be moved."""
        await self._refresh_state(managed, required=True)
        before = managed.state
        await self._drive([managed], DOWN)
        return managed.state != before

    # --- transitions -----------------------------------------------------------------------

    async def _transition(self, managed: _Managed, transition_id: int, expected: str) -> None:
        label = TRANSITION_LABELS[transition_id]
        before = managed.state
        self.get_logger().info(f"{label} {managed.name}")
        try:
            if managed.node is not None:
                success = await self._local_transition(managed, transition_id, label)
            else:
                success = await self._service_transition(managed, transition_id, label,
                                                         expected)
        finally:
            # Whatever happened, learn where the node ended up (rollback depends on it); not
            # when the process is going down (the coroutine may be being closed after
            # destroy_node: its clients are gone).
            if not self._stopping():
                await self._refresh_state(managed)
        if not success:
            managed.problem = (f"{label} failed (from {before}; the node is now {managed.state};"
                               " its log says why)")
            raise TransitionError(f"{managed.name}: {managed.problem}")
        if managed.state != expected:
            managed.problem = f"{label} left it {managed.state}, expected {expected}"
            raise TransitionError(f"{managed.name}: {managed.problem}")

    def _stopping(self) -> bool:
        """The process is going down (SIGINT): what is in flight ends quietly."""
        return getattr(self, "_destroyed", False) or not self.context.ok()

    def destroy_node(self):
        self._destroyed = True  # a pending startup coroutine must not touch a dead handle
        try:
            self._resources.release()
        finally:
            super().destroy_node()

    def _publish_status(self) -> None:
        if getattr(self, "_destroyed", False):
            return
        array = DiagnosticArray(status=[
            _status(self.get_fully_qualified_name(), self.manager_state,
                    self.manager_state == "failed", self.last_message or self.manager_state),
            *(_status(m.name, m.state, bool(m.problem), m.problem or m.state)
              for m in self._managed)])
        array.header.stamp = self.get_clock().now().to_msg()
        self._status_publisher.publish(array)


def main(args=None) -> int:
    return run_node(LifecycleManager, args)


if __name__ == "__main__":
    sys.exit(main())
