"""The deterministic clock sets the ROS time of this process's nodes itself, in a fixed order.

With `use_sim_time`, every rclpy node has a TimeSource that subscribes to /clock and, for each
message, sets the node's clock (`set_ros_time_override`; rcl then fires the clock's jump callbacks,
which is how executors learn that ROS-time timers are due). In a stepped run that costs one
/clock delivery and one executor event per node and per step, and the order in which the nodes'
clocks move is the order in which the middleware hands the message to the subscriptions (the
order in which they were matched: discovery timing, not the same from run to run). With the
EventsExecutor that order becomes the order of the timers due at the same simulated time, and a
different order can give a different result (a message published by one timer before or after
another node's timer looks for it).

`LocalClocks` instead, for the nodes handed to it (in the order given):
- `adopt()`: for every node whose TimeSource has ROS time active, destroy the TimeSource's /clock
  subscription (the node keeps `use_sim_time` true and its clock keeps ROS time active);
- `set_ns(t)`: set every adopted clock to t, node after node (the TimeSource's cached time too,
  so a clock attached later starts there), firing the same jump callbacks /clock would;
- `release()`: give the TimeSources their /clock subscriptions back (after the run;
  `release(resubscribe=False)` leaves them without, for nodes about to be destroyed).

Lazy (`LocalClocks(nodes, lazy=True)`, issue 30 item 3: a step costs what is due, not the node
count): `set_ns(t, due)` sets only the clocks of the nodes in `due` (those with a ROS-time timer
due at t; in the nodes' order, so timers due together still run in that order) and every other
clock is brought to t when first used in the step: its `now()`, or any other use of its rcl
handle such as a timer created on it (the adopted clocks become `SteppedClock`s), a reset of one
of its timers (`bring_up_to_date`, by `deadline_cache.TrackedTimer`), and before any callback of
its node (`sync_node`, called by the EventsStepper's callback wrapper). `clock_ns(clock)` says
what a clock reads without asking it (a timer's deadline is that plus its time until the next
call). `release()` first brings every clock to the last time set.
The /clock topic itself is still published (sim_clock_node) for other processes and tools. A node
whose `use_sim_time` is switched off and on again during the run subscribes to /clock again and
then receives the same times from both paths.

`without_clock_subscriptions()` (issue 30: start-up): the nodes created in the calling thread
meanwhile get no /clock subscription at all, for a process whose `LocalClocks` will set their
clocks anyway (`adopt` would destroy it at the start of the run): a subscription fewer per node
is a DDS endpoint fewer to create and match, and to destroy again. `release()` subscribes them.
"""

from __future__ import annotations

import contextlib
import threading

from rclpy.clock import ClockType, ROSClock
from rclpy.time import Time
from rclpy.time_source import TimeSource

SET_NS = "_acomms_set_ns"  # attribute of an adopted clock: the ROS time (ns) last set on it


def time_source(node):
    """The node's rclpy TimeSource (rclpy keeps it in the private `_time_source`; this is the one
    place that reads it), or None."""
    return getattr(node, "_time_source", None)


class SteppedClock(ROSClock):
    """An adopted ROS clock of a lazy `LocalClocks`: brought to the step time on first use of
    its rcl handle (what `now()`, a timer created on it and any other rclpy use go through)."""

    _acomms_owner: LocalClocks | None = None

    @property
    def handle(self):
        owner = self._acomms_owner
        if owner is not None and getattr(self, SET_NS, None) != owner.now_ns:
            owner.sync_clock(self)
        return ROSClock.handle.fget(self)

    def now(self) -> Time:
        """What rcl would answer (the step time, while its TimeSource has ROS time on), without
        asking it: every callback of a step reads its node's clock, often more than once."""
        owner = self._acomms_owner
        if owner is not None and owner.now_ns is not None and owner.ros_time_on(self):
            if getattr(self, SET_NS, None) != owner.now_ns:
                owner.sync_clock(self)
            if getattr(self, SET_NS, None) == owner.now_ns:
                return owner.now_time
        return ROSClock.now(self)


_DEFERRING = threading.local()  # .active: this thread creates nodes without /clock subscriptions
_SUBSCRIBE = TimeSource._subscribe_to_clock_topic  # rclpy's


def _subscribe_unless_deferred(source) -> None:
    """TimeSource._subscribe_to_clock_topic while `without_clock_subscriptions` is in use."""
    if not getattr(_DEFERRING, "active", False):
        _SUBSCRIBE(source)


@contextlib.contextmanager
def without_clock_subscriptions():
    """The TimeSources that turn ROS time on in this thread meanwhile (nodes created with
    `use_sim_time`) do not subscribe to /clock: for nodes a `LocalClocks` adopts (see the module
    docstring); their clocks read what they are set to (`compose.start_sim_clock`)."""
    TimeSource._subscribe_to_clock_topic = _subscribe_unless_deferred  # idempotent
    before = getattr(_DEFERRING, "active", False)
    _DEFERRING.active = True
    try:
        yield
    finally:
        _DEFERRING.active = before


def bring_up_to_date(clock) -> None:
    """A lazily set clock at the step time now (its timer is about to be reset); else nothing."""
    if type(clock) is SteppedClock:
        clock.handle  # noqa: B018 - the property brings it up to date


class LocalClocks:
    """Sets the ROS-time clocks of in-process nodes directly (see the module docstring)."""

    def __init__(self, nodes, lazy: bool = False):
        self._nodes = list(nodes)
        self.lazy = lazy
        self._sources: list = []  # adopted TimeSources, in the nodes' order
        self._source_of: dict[int, object] = {}  # id(node) and id(clock) -> its TimeSource
        self._order: dict[int, int] = {}  # id(TimeSource) -> its place in _sources
        self.now_ns: int | None = None
        self._now: Time | None = None
        self.sets = 0  # clocks set (a measure of the per-step cost)

    def adopt(self) -> int:
        """Take over every ROS-time-active TimeSource of the nodes; how many."""
        for node in self._nodes:
            source = time_source(node)
            if source is None or not source.ros_time_is_active or source in self._sources:
                continue
            subscription, source._clock_sub = source._clock_sub, None
            if subscription is not None:
                node.destroy_subscription(subscription)
            self._order[id(source)] = len(self._sources)
            self._sources.append(source)
            self._source_of[id(node)] = source
            for clock in source._associated_clocks:
                self._source_of[id(clock)] = source
                if self.lazy and type(clock) is ROSClock:
                    clock.__class__ = SteppedClock
                    clock._acomms_owner = self
        return len(self._sources)

    def set_ns(self, now_ns: int, due=None) -> None:
        """Every adopted clock to now_ns (ROS time), in the nodes' order; lazy with `due` (the
        nodes with a timer due at now_ns): only theirs now, the others when first read."""
        self.now_ns = now_ns
        self._now = Time(nanoseconds=now_ns, clock_type=ClockType.ROS_TIME)
        sources = self._sources
        if self.lazy and due is not None:
            order, source_of = self._order, self._source_of
            chosen = {id(source): source for node in due
                      if (source := source_of.get(id(node))) is not None}
            sources = [chosen[key] for key in sorted(chosen, key=order.__getitem__)]
        for source in sources:
            self._set_source(source)

    def _set_source(self, source) -> None:
        now, now_ns = self._now, self.now_ns
        source._last_time_set = now
        for clock in source._associated_clocks:
            if getattr(clock, SET_NS, None) != now_ns:
                setattr(clock, SET_NS, now_ns)  # first: set_ros_time_override uses the handle
                ROSClock.set_ros_time_override(clock, now)
                self.sets += 1

    @property
    def now_time(self) -> Time | None:
        """The last time set, as one shared rclpy Time (immutable)."""
        return self._now

    def ros_time_on(self, clock) -> bool:
        """Whether an adopted clock's TimeSource has ROS time active (a Python attribute: rclpy
        turns it off there first when use_sim_time is switched off)."""
        source = self._source_of.get(id(clock))
        return source is not None and source.ros_time_is_active

    def sync_clock(self, clock) -> None:
        """Bring an adopted clock (all of its TimeSource's) to the last time set."""
        source = self._source_of.get(id(clock))
        if source is not None and self._now is not None:
            self._set_source(source)

    def sync_node(self, node) -> None:
        """Bring the node's clock to the last time set (before one of its callbacks runs);
        nothing to do when its TimeSource was set this step (a clock attached to it since
        starts at the TimeSource's time)."""
        source = self._source_of.get(id(node))
        if source is not None and self._now is not None and source._last_time_set is not self._now:
            self._set_source(source)

    def clock_ns(self, clock) -> int | None:
        """The ROS time (ns) an adopted clock reads now, without asking it; None: not known."""
        return getattr(clock, SET_NS, None)

    def clock_ids(self) -> set[int]:
        """The ids of the clocks this object sets (a stepper need not ask them the time)."""
        return {id(clock) for source in self._sources for clock in source._associated_clocks}

    def release(self, resubscribe: bool = True) -> None:
        """Every clock to the last time set; give every adopted TimeSource its /clock
        subscription back (if still ROS time). `resubscribe=False`: not (a run that ends: its
        nodes are about to be destroyed, and creating one DDS reader per node then costs what
        the nodes' whole run did at 100+ vehicles; a later `adopt()` works either way)."""
        if self._now is not None:
            for source in self._sources:
                self._set_source(source)
        sources, self._sources = self._sources, []
        self._source_of, self._order = {}, {}
        for source in sources:
            for clock in source._associated_clocks:
                if type(clock) is SteppedClock:
                    clock.__class__ = ROSClock
                    del clock._acomms_owner
                if hasattr(clock, SET_NS):
                    delattr(clock, SET_NS)
            if resubscribe and source.ros_time_is_active and source._get_node() is not None:
                try:
                    source._subscribe_to_clock_topic()
                except Exception:  # the node was destroyed meanwhile: nothing to give back
                    continue
