"""Deterministic stepping of one rclpy executor (the thin ROS part of `acomms_sim.clock`).

With rclpy + Fast DDS, nodes of one process share intraprocess delivery: a published message or
a service request is in the reader's queue when publish / call_async returns. So running every
ready callback until the wait set is empty twice in a row (`drain`) reaches quiescence without any
wall-clock wait; then the next step goes to the earliest ROS-time timer deadline of the
executor's nodes (`next_deadline_ns`). Service requests to servers in *another* process are the
exception: `drain` keeps waiting (bounded) while such a request has no reply yet; so it does for
a `call_awaited` call of one of its nodes (acomms_core.ros.service_calls), wherever its server.
"""

from __future__ import annotations

import time
from collections.abc import Collection

from rclpy.clock import ClockType
from rclpy.executors import ShutdownException, TimeoutException
from rclpy.service import Service

from acomms_core.ros.service_calls import AWAITED, resolved_name, server_ready
from acomms_sim.clock.crossing import CrossingCounts
from acomms_sim.clock.local_clocks import SET_NS
from acomms_sim.clock.stepping import DEFAULT_STEP_TIMEOUT_S, StepTimeout, Watchdog

REMOTE_REPLY_POLL_S = 0.001  # wall wait between polls while a remote service reply is pending


class CallbackFailed(RuntimeError):
    """A node callback raised; `node` names the node, the message says what."""

    def __init__(self, node: str, error: BaseException):
        super().__init__(f"a callback of {node} raised {type(error).__name__}: {error}")
        self.node, self.error = node, error


def node_name(node) -> str:
    try:
        return node.get_fully_qualified_name()
    except Exception:  # destroyed node
        return "<destroyed node>"


def pending_requests(client) -> int:
    """Requests of an rclpy Client still waiting for their reply (rclpy keeps them in the private
    `_pending_requests`; this is the one place that reads it)."""
    return len(getattr(client, "_pending_requests", ()))


def remote_clients(nodes) -> list[tuple[str, object]]:
    """(node name, client) of every client calling a service that none of `nodes` serves."""
    local = {resolved_name(service) for node in nodes for service in node.services}
    return [(node_name(node), client) for node in nodes for client in node.clients
            if resolved_name(client) not in local]


def unready_local_clients(nodes) -> list[str]:
    """'<node> (its <service> client has not discovered the server yet)' for every client of
    `nodes` whose service one of `nodes` serves but which does not see it ready yet."""
    local = {resolved_name(service) for node in nodes for service in node.services} - {None}
    unready = []
    for node in nodes:
        for client in node.clients:
            name = resolved_name(client)
            try:
                if name in local and not server_ready(client):
                    unready.append(f"{node_name(node)} (its {name} client has not discovered "
                                   "the server yet)")
            except Exception:  # destroyed meanwhile
                continue
    return unready


def awaited_calls(stepper) -> list[str]:
    """The `call_awaited` service calls of the stepper's nodes still waiting for their reply
    (cheap when none is outstanding in the process: the nodes are not even listed); one whose
    request was lost on the way to its server in this process is sent again here."""
    if not len(AWAITED):
        return []
    nodes = stepper.nodes
    waiting = AWAITED.pending(nodes)  # forgets the answered calls first
    if waiting and AWAITED.resend_lost():
        return AWAITED.pending(nodes)
    return waiting


def ros_timer_deadlines_ns(nodes, driven: Collection[int] = (), now_ns: int | None = None
                           ) -> list[int]:
    """The next call time (ns) of every live ROS-time timer of the nodes (steady and system
    timers are wall-clock timers: they never hold simulated time). `driven`: ids of clocks known
    to read `now_ns` (set by the stepper itself), which are then not asked (a clock's `now()`
    costs more than the rest of this together); other clocks are asked once each."""
    return TimerDeadlines(driven).deadlines_ns(nodes, now_ns)


_SKIP, _DRIVEN, _ASK = 0, 1, 2  # a timer's clock: not ROS time / set by the stepper / ask it


class TimerDeadlines:
    """`ros_timer_deadlines_ns`, asked every step: what each timer's clock is gets looked up
    once per timer (a stepped run asks this for ~100 timers per step), deadlines read from the
    timers' rcl handles. A driven clock reads what `LocalClocks` last set on it (a lazy one
    may still be at an earlier step), else `now_ns`. `due_nodes(t)`: the nodes with a timer
    due at t, by the last deadlines read."""

    def __init__(self, driven: Collection[int] = ()):
        self.driven = frozenset(driven)
        self._known: dict[int, tuple] = {}  # id(timer) -> (timer, kind, rcl handle, clock)
        self.first_due = None  # the node of the first timer found due by the last deadlines_ns
        self._by_node: list[tuple[int, object]] = []  # (deadline, node) of the last read

    def _entry(self, timer) -> tuple:
        clock = timer.clock
        if clock.clock_type != ClockType.ROS_TIME:
            kind = _SKIP
        else:
            kind = _DRIVEN if id(clock) in self.driven else _ASK
        entry = self._known[id(timer)] = (timer, kind, timer.handle, clock)
        return entry

    def read(self, timer, now_ns: int | None, nows: dict) -> int | None:
        """One timer's next call time (ns; None: canceled, destroyed or not ROS time). `nows`
        caches the clocks asked (id -> ns) within one pass."""
        entry = self._known.get(id(timer))
        if entry is None or entry[0] is not timer:
            try:
                entry = self._entry(timer)
            except Exception:  # destroyed meanwhile
                return None
        kind = entry[1]
        if kind == _SKIP:
            return None
        try:
            until = entry[2].time_until_next_call()  # None: canceled
            if until is None:
                return None
            now = getattr(entry[3], SET_NS, now_ns) if kind == _DRIVEN else None
            if now is None:
                clock = entry[3]
                now = nows.get(id(clock))
                if now is None:
                    now = nows[id(clock)] = clock.now().nanoseconds
        except Exception:  # destroyed meanwhile
            return None
        return now + until

    def deadlines_ns(self, nodes, now_ns: int | None = None) -> list[int]:
        deadlines, nows, seen = [], {}, 0
        by_node = self._by_node = []
        self.first_due = None
        for node in nodes:
            for timer in node.timers:
                seen += 1
                deadline = self.read(timer, now_ns, nows)
                if deadline is None:
                    continue
                deadlines.append(deadline)
                by_node.append((deadline, node))
                if self.first_due is None and now_ns is not None and deadline <= now_ns:
                    self.first_due = node
        if len(self._known) > 2 * seen + 64:  # forget destroyed timers
            live = {id(t) for node in nodes for t in node.timers}
            self._known = {key: entry for key, entry in self._known.items() if key in live}
        return deadlines

    def release(self) -> None:
        """Nothing to undo (`CachedTimerDeadlines` gives the timers back)."""

    def due_nodes(self, at_ns: int) -> list:
        """The nodes with a timer due at at_ns by the last `deadlines_ns` (each once)."""
        due = {id(node): node for deadline, node in self._by_node if deadline <= at_ns}
        return list(due.values())


class DrivenClocks:
    """A stepper's `driven` clocks (ids of clocks the caller sets to the step time itself) and
    the timer deadlines read with them; `use_clocks(local_clocks)` drives those of a
    `LocalClocks` (a lazy one is brought up to date before each callback of a node, where the
    stepper wraps callbacks)."""

    _timers: TimerDeadlines
    _deadlines_class = TimerDeadlines
    local_clocks = None

    @property
    def driven(self) -> frozenset[int]:
        return self._timers.driven

    @driven.setter
    def driven(self, clock_ids) -> None:
        self._timers.release()
        self._timers = self._deadlines_class(clock_ids)

    def use_clocks(self, local_clocks) -> None:
        self.driven = local_clocks.clock_ids()
        self.local_clocks = local_clocks

    def due_nodes(self, at_ns: int) -> list:
        """The nodes with a ROS-time timer due at at_ns (by the last deadlines read)."""
        return self._timers.due_nodes(at_ns)


class ExecutorStepper(DrivenClocks):
    """Drains a single-threaded executor to quiescence and finds its next ROS-time deadline."""

    def __init__(self, executor, step_timeout_s: float = DEFAULT_STEP_TIMEOUT_S,
                 clock=time.monotonic, bookkeeping=(), count_crossing: bool = True):
        """count_crossing: as `EventsStepper`'s."""
        self.executor = executor
        self.bookkeeping = set(bookkeeping)  # nodes whose callbacks are not "work" (Tick/Tock)
        self.watchdog = Watchdog(step_timeout_s)
        self._clock = clock
        self.callbacks = 0
        self._timers = TimerDeadlines()
        self._now_ns: int | None = None
        self.crossing = CrossingCounts(count_crossing)  # deliveries to and from other processes
        self._watched = -1  # entities when `crossing` last looked

    @property
    def nodes(self) -> list:
        return self.executor.get_nodes()

    def remote_pending(self) -> list[str]:
        """Nodes with a request to a service that no node of this executor serves."""
        return [f"{name} (waiting for a service reply from another process)"
                for name, client in remote_clients(self.nodes) if pending_requests(client)]

    def drain(self, sim_s: float = 0.0, now_ns: int | None = None) -> int:
        """Run ready callbacks until quiescence; the number run (bookkeeping nodes' callbacks
        not counted). `now_ns` is for the EventsStepper's interface (a wait set sees due timers
        itself). CallbackFailed when one raises, StepTimeout (naming the node) when
        quiescence is not reached within the step timeout."""
        ran, empty, last = 0, 0, "the executor"
        self._now_ns = now_ns
        self._watch()
        self.watchdog.arm("draining", self._clock())
        while True:
            try:
                handler, entity, node = self.executor.wait_for_ready_callbacks(timeout_sec=0)
            except TimeoutException:
                empty += 1
                if empty >= 2:
                    remote = self.remote_pending()
                    self.crossing.services += bool(remote)  # a request crossed processes
                    waiting = remote or awaited_calls(self)
                    if not waiting:
                        break
                    last = waiting[0]
                    time.sleep(REMOTE_REPLY_POLL_S)
                    empty = 0
                self._check(last, sim_s)
                continue
            except ShutdownException:
                break
            empty, last = 0, node_name(node) if node is not None else "the executor"
            self.crossing.services += isinstance(entity, Service)
            handler()
            ran += node not in self.bookkeeping
            error = handler.exception()
            if error is not None:
                raise CallbackFailed(last, error)
            self._check(last, sim_s)
        self.watchdog.disarm()
        self.callbacks += ran
        return ran

    def _check(self, last: str, sim_s: float) -> None:
        if self.watchdog.expired(self._clock()):
            self.watchdog.what = f"{last}: step"
            raise StepTimeout(self.watchdog.message(sim_s))

    def _watch(self) -> None:
        """Let `crossing` wrap new publishers and subscriptions (when the entities changed)."""
        if not self.crossing.enabled:
            return
        nodes = self.nodes
        count = sum(1 for node in nodes for kind in (node.publishers, node.subscriptions)
                    for _ in kind)
        if count != self._watched:
            self._watched = count
            self.crossing.watch(nodes, subscriptions=True)

    def next_deadline_ns(self) -> list[int]:
        return self._timers.deadlines_ns(self.nodes, self._now_ns)

    def close(self) -> None:
        """Give the publishers and subscriptions back (the EventsStepper's counterpart also
        removes its fence node)."""
        self.crossing.release()
