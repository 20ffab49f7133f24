"""Deterministic stepping on rclpy's EventsExecutor (C++ event queue, no wait-set rebuild).

The stock Python executors rebuild a wait set over every entity of every node for each wait; with
~60 nodes (each with its parameter and lifecycle services) that costs milliseconds per wait and
dominates a stepped run. The EventsExecutor queues one event per ready entity instead, so a step
costs what its callbacks cost. It has no "is anything ready" query, so quiescence is found with a
fence: publish a message on a private topic and spin until its callback runs. Events are queued in
order (intraprocess delivery enqueues during `publish`), so everything queued before the fence has
run by then. A round is quiet when the fence was the only event and no entity callback ran: then
nothing published, requested or answered in this process is left (each is enqueued by the call
that made it), and a quiet round ends the drain unless a ROS-time timer is due (the executor's
timer thread readies those), a reply from another process is pending, or a node of this executor
still waits for the reply to a `call_awaited` service call (acomms_core.ros.service_calls: a
reply that comes late in wall time, or is sent again after the discovery race, holds the step
instead of letting simulated time run past the caller).

Entity callbacks are wrapped once to count them and to name the node whose callback raised.
Where rclpy has no EventsExecutor (`events_executor_available`), runs use `ExecutorStepper`.
"""

from __future__ import annotations

import faulthandler
import functools
import inspect
import io
import os
import sys
import time

from rclpy.node import Node
from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy
from rclpy.task import Future
from std_msgs.msg import UInt64

from acomms_sim.clock.crossing import CrossingCounts, counted_topic
from acomms_sim.clock.deadline_cache import CachedTimerDeadlines
from acomms_sim.clock.executor_stepper import (
    CallbackFailed,
    DrivenClocks,
    awaited_calls,
    node_name,
    pending_requests,
    remote_clients,
)
from acomms_sim.clock.local_clocks import time_source
from acomms_sim.clock.stepping import DEFAULT_STEP_TIMEOUT_S, StepTimeout, Watchdog

FENCE_SPIN_TIMEOUT_S = 0.05  # a spin that finds the queue empty waits at most this (wall)
ENTITY_SCAN_EVERY = 32  # drains between scans for new entities to wrap (events are seen anyway)
TIMER_WAIT_S = 0.05  # a step to a timer's deadline first waits (wall) for that timer's event
WAIT_SPIN_S = 0.001  # wall wait for an event due from another thread (a timer, a remote reply)
QUIET_ROUNDS = 1  # a fence alone in the queue: nothing this thread enqueued is left
_WRAPPED = "_acomms_counted"


EXECUTOR_EVENTS, EXECUTOR_SINGLE = "events", "single"
STEP_EXECUTORS = (EXECUTOR_EVENTS, EXECUTOR_SINGLE)


def events_executor_available() -> bool:
    try:
        from rclpy.experimental.events_executor import EventsExecutor  # noqa: F401
    except ImportError:
        return False
    return True


def default_step_executor() -> str:
    return EXECUTOR_EVENTS if events_executor_available() else EXECUTOR_SINGLE


def make_executor(context, kind: str | None = None):
    """The executor a stepped run (or a recording thread) spins: `kind` 'events' or 'single'
    (default: events where rclpy has it)."""
    if (kind or default_step_executor()) == EXECUTOR_EVENTS:
        return make_events_executor(context)
    from rclpy.executors import SingleThreadedExecutor

    return SingleThreadedExecutor(context=context)


def make_events_executor(context):
    """rclpy's EventsExecutor. Its factory enables faulthandler on sys.stderr, which fails when
    stderr has no file descriptor (captured output, e.g. under pytest): then on the process's
    own stderr."""
    from rclpy.experimental.events_executor import EventsExecutor

    try:
        return EventsExecutor(context=context)
    except io.UnsupportedOperation:
        enable = faulthandler.enable
        faulthandler.enable = lambda *args, **kwargs: enable(file=sys.__stderr__)
        try:
            return EventsExecutor(context=context)
        finally:
            faulthandler.enable = enable


def _entity_count(node) -> int:
    """The node's subscriptions, services, timers, clients and publishers (rclpy keeps them in
    private lists; this is the one place that counts them there: no generator per kind)."""
    try:
        return (len(node._subscriptions) + len(node._services) + len(node._timers)
                + len(node._clients) + len(node._publishers))
    except (AttributeError, TypeError):
        return sum(1 for kind in (node.subscriptions, node.services, node.timers, node.clients,
                                  node.publishers) for _ in kind)


def _counting(callback, owner, stepper: EventsStepper, bookkeeping: bool, service: bool = False,
              taken: bool = False):
    """`callback` of node `owner` counted, naming the node when it raises, its clock brought to
    the step time first (lazy `LocalClocks`); same signature and coroutine-ness (rclpy passes
    TimerInfo only if asked and awaits coroutine functions). For `crossing`: a service
    callback's reply may go to another process (`service`), a subscription's message may have
    come from one (`taken`)."""
    node = node_name(owner)
    crossing = stepper.crossing

    def note() -> None:
        stepper.callbacks_seen += 1
        stepper.bookkeeping_seen += bookkeeping
        crossing.services += service
        crossing.taken += taken
        clocks = stepper.local_clocks
        if clocks is not None:
            clocks.sync_node(owner)

    if inspect.iscoroutinefunction(callback):
        @functools.wraps(callback)
        async def counted(*args):
            note()
            try:
                return await callback(*args)
            except BaseException:
                stepper.failed_node = node
                raise
    else:
        @functools.wraps(callback)
        def counted(*args):
            note()
            try:
                return callback(*args)
            except BaseException:
                stepper.failed_node = node
                raise

    setattr(counted, _WRAPPED, True)
    # rclpy inspects a timer callback's signature at every call: answer from here, once
    counted.__signature__ = inspect.signature(callback)
    return counted


class EventsStepper(DrivenClocks):
    """Drains an EventsExecutor to quiescence and finds its next ROS-time deadline (timer
    deadlines read again only where they can have changed: `CachedTimerDeadlines`)."""

    _deadlines_class = CachedTimerDeadlines

    def __init__(self, executor, context, step_timeout_s: float = DEFAULT_STEP_TIMEOUT_S,
                 clock=time.monotonic, bookkeeping=(), count_crossing: bool = True):
        """count_crossing: count the messages to and from other processes (`crossing`; a
        one-process run has none to settle)."""
        self.executor = executor
        self.bookkeeping = set(bookkeeping)
        self.watchdog = Watchdog(step_timeout_s)
        self._clock = clock
        self.callbacks = 0  # work callbacks run (bookkeeping nodes' not counted)
        self.callbacks_seen = 0  # every wrapped callback, bookkeeping included
        self.bookkeeping_seen = 0
        self.failed_node = None  # whose callback raised last (the executor does not say)
        self._fence_sent = self._fence_seen = 0
        self._entity_count = -1
        self._node_count = -1
        self._drains = 0
        self._final_deadlines: list[int] | None = None  # timer deadlines at the end of a drain
        self._earliest_deadline_ns: int | None = None  # of the deadlines last handed out
        self._remote_clients: list = []
        self._timers = CachedTimerDeadlines()
        self._undriven: tuple | None = None  # (the TimerDeadlines, [(node, clock, TimeSource)])
        self._nodes_of: list = []  # the executor's node list that `_nodes` was made from
        self._nodes: list = []
        self._now_ns: int | None = None
        self._wrapped: list = []  # (entity, original callback), restored by close()
        self.crossing = CrossingCounts(count_crossing)  # deliveries to and from other processes
        self.fence_node = Node(f"acomms_step_fence_{os.getpid()}", context=context,
                               start_parameter_services=False, enable_rosout=False)
        qos = QoSProfile(depth=1, history=HistoryPolicy.KEEP_LAST,
                         reliability=ReliabilityPolicy.RELIABLE)
        topic = f"/_acomms_step_fence_{os.getpid()}"
        self._fence_pub = self.fence_node.create_publisher(UInt64, topic, qos)
        self._fence_sub = self.fence_node.create_subscription(UInt64, topic, self._on_fence, qos)
        executor.add_node(self.fence_node)

    @property
    def nodes(self) -> list:
        """The executor's nodes but the fence (kept while the executor's list is the same: the
        stepper asks for it at every drain)."""
        current = self.executor.get_nodes()
        if current != self._nodes_of:  # the same nodes in the same order: identity, in C
            self._nodes_of = current
            self._nodes = [n for n in current if n is not self.fence_node]
        return self._nodes

    def _on_fence(self, message: UInt64) -> None:
        self._fence_seen = message.data

    def _wrap_new_entities(self) -> None:
        """Wrap the callbacks of entities created since the last drain, and note which clients
        call services served in another process (cheap when nothing was created)."""
        self._drains += 1
        node_count = len(self.executor.get_nodes())
        if (self._drains % ENTITY_SCAN_EVERY and self._entity_count >= 0
                and node_count == self._node_count):
            return
        self._node_count = node_count  # a node added: its entities are wrapped at once
        nodes = self.nodes
        count = sum(map(_entity_count, nodes))
        if count == self._entity_count:
            return
        self._entity_count = count
        for node in nodes:
            bookkeeping = node in self.bookkeeping
            subscriptions, services = list(node.subscriptions), list(node.services)
            for entity in (*subscriptions, *services, *node.timers):
                callback = getattr(entity, "callback", None)
                if callback is not None and not getattr(callback, _WRAPPED, False):
                    entity.callback = _counting(
                        callback, node, self, bookkeeping, service=entity in services,
                        taken=(self.crossing.enabled and entity in subscriptions
                               and counted_topic(entity)))
                    self._wrapped.append((entity, callback))
        self.crossing.watch(nodes)
        self._remote_clients = remote_clients(nodes)
        self._undriven = None

    def remote_pending(self) -> list[str]:
        """Nodes with a request to a service that no node of this executor serves."""
        return [f"{name} (waiting for a service reply from another process)"
                for name, client in self._remote_clients if pending_requests(client)]

    def drain(self, sim_s: float = 0.0, now_ns: int | None = None) -> int:
        """Run queued events until quiescence; the number of work callbacks run. With `now_ns`,
        quiescence also needs every sim-time node's clock at now_ns and no ROS-time timer due
        (the executor readies timers from its own thread, so a fence can overtake one).
        CallbackFailed when a callback raises, StepTimeout when quiescence is not reached
        within the step timeout."""
        self._wrap_new_entities()
        start_seen, start_bookkeeping = self.callbacks_seen, self.bookkeeping_seen
        quiet, last = 0, "the executor"
        self.watchdog.arm("draining", self._clock())
        if now_ns is not None and now_ns == self._earliest_deadline_ns:
            # a timer is due: let the executor's timer thread ready it; once per step time (the
            # drains that settle Tick/Tock rounds at the same time find no timer left to wait for)
            self._earliest_deadline_ns = None
            self._spin(TIMER_WAIT_S)
        while True:
            self._run_queued(sim_s)
            before = self.callbacks_seen
            spins = self._fence_round(sim_s)
            if spins != 1 or self.callbacks_seen != before:
                quiet = 0
                self._check(last, sim_s)
                continue
            quiet += 1
            if quiet < QUIET_ROUNDS:
                continue
            remote = self.remote_pending()
            self.crossing.services += bool(remote)  # a request (its reply) crossed processes
            waiting = remote or awaited_calls(self) or self._lagging(now_ns)
            if not waiting:
                break
            last, quiet = waiting[0], 0
            self._spin(WAIT_SPIN_S)  # the awaited event (timer, reply) arrives from another thread
            self._check(last, sim_s)
        self.watchdog.disarm()
        ran = (self.callbacks_seen - start_seen) - (self.bookkeeping_seen - start_bookkeeping)
        self.callbacks += ran
        return ran

    def _lagging(self, now_ns: int | None) -> list[str]:
        """Nodes whose sim-time clock has not reached now_ns yet, or with a timer due; when
        none, the timer deadlines are kept for `next_deadline_ns` (nothing ran since). Clocks
        in `driven` (set by the caller to now_ns before the drain) are not asked."""
        self._final_deadlines = None
        if now_ns is None:
            return []
        self._now_ns = now_ns
        nodes = self.nodes
        if self._undriven is None or self._undriven[0] is not self._timers:
            driven = self.driven
            self._undriven = (self._timers, [(n, n.get_clock(), time_source(n)) for n in nodes
                                             if id(n.get_clock()) not in driven])
        for node, clock, source in self._undriven[1]:
            # a clock attached to its node's TimeSource has ROS time active when the source has
            # (rclpy sets it only from there): a Python attribute, not a call into rcl
            active = source.ros_time_is_active if source is not None else clock.ros_time_is_active
            if active and clock.now().nanoseconds < now_ns:
                return [f"{node_name(node)} (its clock has not reached the step yet)"]
        deadlines = self._pending_deadlines(nodes, now_ns)
        if any(deadline <= now_ns for deadline in deadlines):
            due = self._timers.first_due
            if due is not None and self.local_clocks is not None:
                self.local_clocks.sync_node(due)  # a lazy clock not yet at the step: it is now
            return [f"{node_name(due) if due else 'a node'} (a timer due now has not run yet)"]
        self._final_deadlines = deadlines
        return []

    def _run_queued(self, sim_s: float) -> None:
        """Run what is queued, and what that queues, in one call into the executor: a task
        queued behind it (a fence without a message) queues itself again while the events
        before it ran entity callbacks, and stops the spin once they ran none (or the step
        timed out). Cheaper per event than a spin_once each; quiescence is still decided by
        a `_fence_round` after it (this cannot see client replies or tasks)."""
        stop = Future()  # no executor: the spin's stop runs right when the result is set
        seen = [self.callbacks_seen]

        def fence() -> None:
            if self.callbacks_seen != seen[0] and not self.watchdog.expired(self._clock()):
                seen[0] = self.callbacks_seen
                self.executor.create_task(fence)
            else:
                stop.set_result(True)

        self.executor.create_task(fence)
        while not stop.done():
            try:
                self.executor.spin_until_future_complete(stop, timeout_sec=FENCE_SPIN_TIMEOUT_S)
            except Exception as error:  # a node callback raised
                raise CallbackFailed(self.failed_node or "a node", error) from None
            self._check("the executor", sim_s)

    def _fence_round(self, sim_s: float) -> int:
        """Publish a fence and spin until its callback ran; the number of spins it took."""
        self._fence_sent += 1
        self._fence_pub.publish(UInt64(data=self._fence_sent))
        spins = 0
        while self._fence_seen != self._fence_sent:
            spins += 1
            self._spin(FENCE_SPIN_TIMEOUT_S)
            self._check("the executor", sim_s)
        return spins

    def _spin(self, timeout_s: float) -> None:
        """One event (or none within timeout_s); CallbackFailed naming the node if it raised."""
        try:
            self.executor.spin_once(timeout_sec=timeout_s)
        except Exception as error:  # a node callback raised
            raise CallbackFailed(self.failed_node or "a node", error) from None

    def _check(self, last: str, sim_s: float) -> None:
        if self.watchdog.expired(self._clock()):
            self.watchdog.what = f"{last}: step"
            raise StepTimeout(self.watchdog.message(sim_s))

    def _pending_deadlines(self, nodes, now_ns: int | None) -> list[int]:
        """The timer deadlines a step needs: due ones and the earliest after now_ns (the
        `CachedTimerDeadlines` heap), or every one (plain `TimerDeadlines`, no now_ns)."""
        due_and_next = getattr(self._timers, "due_and_next", None)
        if due_and_next is None or now_ns is None:
            return self._timers.deadlines_ns(nodes, now_ns)
        return due_and_next(nodes, now_ns)

    def wait_event(self, timeout_s: float) -> None:
        """Run the next event (a Tock, a message from another process) or none in timeout_s."""
        self._spin(timeout_s)

    def next_deadline_ns(self) -> list[int]:
        deadlines, self._final_deadlines = self._final_deadlines, None
        if deadlines is None:
            deadlines = self._pending_deadlines(self.nodes, self._now_ns)
        future = [d for d in deadlines if self._now_ns is None or d > self._now_ns]
        self._earliest_deadline_ns = min(future, default=None)
        return deadlines

    def close(self) -> None:
        """Restore the entities' own callbacks and timers; remove and destroy the fence node."""
        for entity, callback in self._wrapped:
            entity.callback = callback
        self._wrapped.clear()
        self.crossing.release()
        self._timers.release()
        try:
            self.executor.remove_node(self.fence_node)
        finally:
            self.fence_node.destroy_node()

