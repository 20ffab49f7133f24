"""Start-up of the embedded runner: create every described node, bring every group to active.

Where the time went before (bench/startup_scale.py; 32 vehicles, 166 nodes: 106 s):
- Each lifecycle manager reached its nodes only through their `change_state`/`get_state`
  services: per node a wait for service discovery, then get_state, change_state, get_state for
  each of configure and activate, each round trip several executor iterations, and one rclpy
  executor iteration rebuilds its wait set over every entity of the process (about 2,300
  services at 32 vehicles). The groups came up one after another, so this was paid for every
  node in sequence, at a cost growing with the size of the process.
- Creating a DDS endpoint costs time proportional to the endpoints already in the participant
  (Fast DDS pairs it with every local endpoint, and rmw republishes the participant's entity
  list): creation is quadratic. Each node brings 12 services (6 parameter, 5 lifecycle, type
  description) and each manager brought 2 service clients per managed node. Merely creating
  166 bare rclpy lifecycle nodes takes about 10 s on 2 shared cores, in one participant or
  spread over several.
- Each queue and dispatch node parsed the codec config with the pure-Python YAML parser.

What this module does instead:
- Stages (`StackDescription.stages()`): simulation services, then every vehicle, then the clock.
  The groups of one stage are created, handed to the executor together, and their managers
  (autostart) bring them up concurrently; the next stage starts when this one is active.
- In process, each manager gets its group's node objects (`LifecycleManager.use_local_nodes`)
  and drives them directly, inside each node's own callback group, with no service discovery
  or round trips; its service clients are then never created. Its autostart sequence runs in
  the caller's thread (`LifecycleManager.claim_autostart`, `run_until_suspended`) before the
  manager joins the executor; a sequence that has to wait (the clock's manager waits for the
  others' status) is resumed by the executor. Every node still serves its
  lifecycle and parameter services, and the managers keep their services, for `ros2 lifecycle`,
  `ros2 param` and `ros2 service call .../status`; in lean mode (`lean`, `compose.lean_options`)
  only the managers' own services and the MACs' parameter services remain.
- Waiting: start-up never sleeps on its own; it waits through a `spin_until(predicate,
  timeout_s) -> bool` the caller provides, so it works whether the executor is spun by a
  background thread (`poll_until`) or by the caller's thread (`spin_executor_until(executor)`).
  acomms_run and acomms_participant spin it in the caller's thread, and only while waiting: an
  executor spun meanwhile by another thread rebuilds its wait set over every entity of its
  nodes for each entity created, competing with the transitions for the GIL (64 vehicles lean:
  about 2 CPU s).
- Endpoints: creating one costs time proportional to those of the other kind already in the
  process (a reader is checked against every writer, a writer against every reader), so each
  one left out counts: with `local_clocks` (a run that sets the nodes' clocks itself) the nodes
  get no /clock subscription (`local_clocks.without_clock_subscriptions`); lean nodes have no
  /rosout publisher (`compose.lean_options`).

A group that fails stops the start-up with `GroupFailed` (the group and its manager, whose
`last_message` and `node_problems()` say which node and why; the manager has already rolled the
group back). Groups already handed to the executor are in `Startup.managers` either way, so the
caller can bring down what is up.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Callable
from typing import Any

from acomms_bringup.description.stack import NodeGroup, StackDescription
from acomms_bringup.run.compose import ComposeError, create_node
from acomms_sim.clock.local_clocks import without_clock_subscriptions

SpinUntil = Callable[[Callable[[], bool], float], bool]
SETTLED_STATES = ("active", "failed")
POLL_PERIOD_S = 0.005


class StartupError(RuntimeError):
    """Start-up cannot go on; the message names the group and says why."""


class GroupFailed(StartupError):
    """A group's manager reported failure (it has rolled the group back)."""

    def __init__(self, group: NodeGroup, manager: Any):
        super().__init__(f"group {group.name}: {manager.last_message}")
        self.group = group
        self.manager = manager


ENDPOINT_KINDS = ("publishers", "subscriptions", "services", "clients")


def count_endpoints(querier, fully_qualified_names) -> dict:
    """DDS endpoints of the named nodes, as the ROS graph `querier` (a node of the same process)
    sees them: a publisher or subscription is one, a service or client two (request and reply).
    The graph lists what rclpy keeps out of `node.publishers`/`services` too (/rosout, the
    lifecycle transition_event publisher, the type-description service). Fast DDS pairs each
    new endpoint with every existing one of the process: start-up grows with the square of the
    total."""
    by_node = {"publishers": querier.get_publisher_names_and_types_by_node,
               "subscriptions": querier.get_subscriber_names_and_types_by_node,
               "services": querier.get_service_names_and_types_by_node,
               "clients": querier.get_client_names_and_types_by_node}
    counts = dict.fromkeys(ENDPOINT_KINDS, 0)
    for name in fully_qualified_names:
        namespace, _, node_name = name.rpartition("/")
        for kind in ENDPOINT_KINDS:
            counts[kind] += len(by_node[kind](node_name, namespace or "/"))
    counts["total"] = (counts["publishers"] + counts["subscriptions"]
                       + 2 * (counts["services"] + counts["clients"]))
    return counts


def poll_until(predicate: Callable[[], bool], timeout_s: float,
               period_s: float = POLL_PERIOD_S) -> bool:
    """For an executor spun by another thread: True once predicate() holds, False at timeout."""
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() >= deadline:
            return predicate()
        time.sleep(period_s)
    return True


def spin_executor_until(executor, slice_s: float = 0.1) -> SpinUntil:
    """For an executor this thread drives: spin it until predicate() holds or timeout."""

    def spin_until(predicate: Callable[[], bool], timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        while not predicate():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return predicate()
            executor.spin_once(timeout_sec=min(slice_s, remaining))
        return True

    return spin_until


def start_in_thread(coroutine):
    """Run `coroutine` in this thread until it ends or first waits for something: (True, what
    it returned) or (False, the started coroutine, for an executor to resume: rclpy's Task
    resumes a started one)."""
    try:
        coroutine.send(None)
    except StopIteration as stop:
        return True, stop.value
    return False, coroutine


def run_until_suspended(coroutine):
    """Run a coroutine in this thread until it ends (then None) or first waits for something
    (then the coroutine, for an executor to resume)."""
    if coroutine is None:
        return None
    finished, started = start_in_thread(coroutine)
    return None if finished else started


@dataclasses.dataclass
class Startup:
    """Brings a stack up in one process: `run(stack)`; RunError-ready exceptions on failure.

    `nodes` (fully qualified name -> node object) receives every node as it is created, so the
    caller can destroy them whatever happens; `managers` lists (group, manager) for every group
    handed to the executor; `phases` sums wall seconds spent creating nodes (`create_s`) and
    bringing them up (`activate_s`: of which the autostart sequences run in this thread,
    `transitions_s`, and the waits for the stage's managers, `wait_s`).
    """

    context: Any
    executor: Any
    spin_until: SpinUntil
    group_timeout_s: float
    lean: bool = False  # compose.lean_options: nodes without the services only others need
    # the run sets the nodes' clocks itself (acomms_sim.clock.local_clocks.LocalClocks): they
    # are created without /clock subscriptions
    local_clocks: bool = False
    error_sink: Any = None  # lean nodes' ERROR lines (compose.ErrorLines): (logger, line)
    created: Any = None  # called (fully qualified name, node) for every node made, before use
    nodes: dict[str, Any] = dataclasses.field(default_factory=dict)
    managers: list[tuple[NodeGroup, Any]] = dataclasses.field(default_factory=list)
    phases: dict[str, float] = dataclasses.field(
        default_factory=lambda: {"create_s": 0.0, "activate_s": 0.0, "transitions_s": 0.0,
                                 "wait_s": 0.0})

    def run(self, stack: StackDescription) -> None:
        with without_clock_subscriptions() if self.local_clocks else contextlib.nullcontext():
            self._run_stages(stack)

    def _run_stages(self, stack: StackDescription) -> None:
        for stage in stack.stages():
            started = time.monotonic()
            stage_managers = [(group, self._create_group(group, stack.sim_start_s))
                              for group in stage]
            self.phases["create_s"] += time.monotonic() - started
            started = time.monotonic()
            self._bring_up(stage_managers)
            self.phases["activate_s"] += time.monotonic() - started

    def _create_group(self, group: NodeGroup, sim_start_s: float | None = None):
        """The group's nodes, then its manager, which is told to drive them in-process."""
        local = {}
        try:
            for description in (*group.nodes, group.manager):
                node = create_node(description, self.context, sim_start_s, self.lean,
                                   self.error_sink)
                self.nodes[description.fully_qualified_name] = node
                local[description.fully_qualified_name] = node
                if self.created is not None:
                    self.created(description.fully_qualified_name, node)
        except ComposeError as exc:
            raise StartupError(f"group {group.name}: cannot create node {exc}") from None
        manager = local.pop(group.manager.fully_qualified_name)
        manager.use_local_nodes(local)
        return manager

    def _bring_up(self, stage_managers: list[tuple[NodeGroup, Any]]) -> None:
        """Hand the stage's managers to the executor (they autostart) and wait until every
        group is active or failed, then its nodes; the first failure (in start-up order) is
        raised. The managed nodes join the executor once their transitions are done: every
        entity a node creates while it is in an executor wakes that executor, which then
        rebuilds its wait set over every entity of the process."""
        for group, manager in stage_managers:
            started = time.monotonic()
            unfinished = run_until_suspended(manager.claim_autostart())
            self.phases["transitions_s"] += time.monotonic() - started
            self.executor.add_node(manager)
            self.managers.append((group, manager))
            if unfinished is not None:  # it awaits something (another manager): the executor
                self.executor.create_task(unfinished)  # resumes it
        started = time.monotonic()
        self.spin_until(lambda: all(m.manager_state in SETTLED_STATES
                                    for _, m in stage_managers), self.group_timeout_s)
        self.phases["wait_s"] += time.monotonic() - started
        for group, _manager in stage_managers:
            for description in group.nodes:
                self.executor.add_node(self.nodes[description.fully_qualified_name])
        for group, manager in stage_managers:
            if manager.manager_state == "failed":
                raise GroupFailed(group, manager)
        for group, manager in stage_managers:
            if manager.manager_state != "active":
                raise StartupError(f"group {group.name}: not active after "
                                   f"{self.group_timeout_s:g} s (manager state "
                                   f"{manager.manager_state})")
