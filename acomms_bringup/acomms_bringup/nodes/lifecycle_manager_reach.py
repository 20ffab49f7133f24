"""How lifecycle_manager (acomms_bringup.nodes.lifecycle_manager) reaches one managed node: its
standard lifecycle services `<node>/change_state` and `<node>/get_state` (any process), a call
whose answer does not come retried with backoff, or, for a node handed over with
`use_local_nodes`, the node object itself (its transition run inside its change_state service's
callback group). A mixin of LifecycleManager; not a node of its own."""

from __future__ import annotations

import contextlib
import dataclasses
import time
from typing import Any

from lifecycle_msgs.msg import State, Transition
from lifecycle_msgs.srv import ChangeState, GetState
from rclpy.lifecycle import TransitionCallbackReturn
from rclpy.task import Future

from acomms_bringup.description.bringup_policy import TRANSITION_STATES, Attempts
from acomms_core.ros.ros_support import ListedLongEnough, lifecycle_state_label, service_listed

STATE_LABELS = {
    State.PRIMARY_STATE_UNKNOWN: "unknown",
    State.PRIMARY_STATE_UNCONFIGURED: "unconfigured",
    State.PRIMARY_STATE_INACTIVE: "inactive",
    State.PRIMARY_STATE_ACTIVE: "active",
    State.PRIMARY_STATE_FINALIZED: "finalized",
}


class TransitionError(Exception):
    """One managed node could not be moved; the message says which and why."""


TRANSITION_LABELS = {Transition.TRANSITION_CONFIGURE: "configure",
                     Transition.TRANSITION_ACTIVATE: "activate",
                     Transition.TRANSITION_DEACTIVATE: "deactivate",
                     Transition.TRANSITION_CLEANUP: "cleanup"}
TRANSITION_IDS = {label: transition_id for transition_id, label in TRANSITION_LABELS.items()}
LOCAL_BUSY_POLL_SECONDS = 0.002  # while an in-process node is inside another of its callbacks


@dataclasses.dataclass
class _Managed:
    name: str
    change_state: Any = None  # service clients, created at first use
    get_state: Any = None
    node: Any = None  # the node object when it lives in this process (use_local_nodes)
    state: str = "unknown"
    problem: str = ""


class _LocalTransitions:
    """Stands for the change_state service of a lifecycle node made without its services (lean
    mode, `enable_communication_interface=False`): a member of the node's default callback
    group, the group rclpy gives the lifecycle services."""


def _change_state_service(node):
    """The node's change_state service: the entity (and callback group) a local transition
    runs as, so it never overlaps the node's other callbacks of that group. A lifecycle node
    without its services gets a stand-in in the group they would have used."""
    name = f"{node.get_fully_qualified_name()}/change_state"
    for service in node.services:
        if service.srv_name == name:
            return service
    if not hasattr(node, "trigger_configure"):
        raise ValueError(f"{node.get_fully_qualified_name()} has no lifecycle service {name}")
    entity = getattr(node, "_acomms_local_transitions", None)
    if entity is None:
        entity = _LocalTransitions()
        entity.callback_group = node.default_callback_group
        entity.callback_group.add_entity(entity)
        node._acomms_local_transitions = entity
    return entity


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
