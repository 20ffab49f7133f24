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

The node is split by concern: how a managed node is reached (lifecycle_manager_reach), waiting
for other managers (lifecycle_manager_follow), and this module: parameters, services, status and
the startup / shutdown / roll-back sequences.
"""

from __future__ import annotations

import sys
import threading
from typing import Any

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.clock import Clock, ClockType
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from std_srvs.srv import Trigger

from acomms_bringup.description.bringup_policy import (
    DOWN,
    UP,
    Attempts,
    Blocked,
    Wait,
    is_valid_node_name,
    next_step,
    resolve_node_name,
)
from acomms_bringup.nodes.lifecycle_manager_follow import MANAGER_POLL_SECONDS, _FollowManagers
from acomms_bringup.nodes.lifecycle_manager_reach import (
    LOCAL_BUSY_POLL_SECONDS,
    STATE_LABELS,
    TRANSITION_IDS,
    TRANSITION_LABELS,
    TransitionError,
    _change_state_service,
    _Managed,
    _NodeReach,
)
from acomms_core.ros.ros_support import (
    NodeResources,
    OptionalParameterEvents,
    ParameterSpec,
    declare_parameters,
    run_node,
)

# The names that moved to lifecycle_manager_reach / _follow, importable from here as before.
__all__ = ["LOCAL_BUSY_POLL_SECONDS", "MANAGER_POLL_SECONDS", "PARAMETERS", "STATE_LABELS",
           "TRANSITION_IDS", "TRANSITION_LABELS", "LifecycleManager", "TransitionError",
           "check_node_names", "main"]


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


def _serve(manager, restart: bool) -> None:
    """The manager's Trigger services; `restart` only if asked (not in lean runs:
    `compose.lean_options`)."""
    handlers = {"startup": manager._on_startup, "shutdown": manager._on_shutdown,
                "restart": manager._on_restart if restart else None,
                "status": manager._on_status}
    for service, handler in handlers.items():
        if handler is not None:
            manager._resources.service(Trigger, f"~/{service}", handler,
                                       callback_group=manager._group)


# rclpy's multi-threaded executor resumes a waiting coroutine only when it next wakes up; a
# future completed while the coroutine was still running in another thread can leave it asleep
# with nothing else due. A steady timer wakes the executor this often while a sequence runs.
SEQUENCE_WAKE_SECONDS = 0.1


class LifecycleManager(_FollowManagers, _NodeReach, OptionalParameterEvents, Node):
    """Configures/activates its managed nodes in order; rolls back on failure."""

    def __init__(self, node_name: str = "lifecycle_manager", restart_service: bool = True,
                 **kwargs):  # restart_service=False: without ~/restart (`_serve`)
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
        _serve(self, restart_service)
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
        if self._take_autostart():
            await self._run("startup", self.startup)

    def _take_autostart(self) -> bool:
        """Cancel the pending autostart; False when there was none (taken already)."""
        timer, self._autostart_timer = self._autostart_timer, None
        if timer is None:
            return False
        timer.cancel()
        self.destroy_timer(timer)
        return True

    def claim_autostart(self):
        """For a process that drives this manager's nodes in-process and has not handed the
        manager to an executor yet (the embedded runner's start-up): the autostart sequence as
        a coroutine for the caller to run (`run_until_suspended`), or None without autostart.
        Run in the caller's thread, the transitions do not compete with an executor's threads
        (with 64 vehicles those spent a third of the start-up rebuilding wait sets)."""
        if not self._take_autostart():
            return None
        return self._run("startup", self.startup)

    async def _on_startup(self, request, response):
        return await self._respond(response, "startup", self.startup)

    async def _on_shutdown(self, request, response):
        return await self._respond(response, "shutdown", self.shutdown)

    async def shutdown_in_process(self) -> tuple[bool, str]:
        """What the shutdown service runs, for a caller in this process (a task of the
        executor spinning this node: `acomms_bringup.run.shutdown`)."""
        return await self._run("shutdown", self.shutdown)

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
