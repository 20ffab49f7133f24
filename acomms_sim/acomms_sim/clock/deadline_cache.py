"""Timer deadlines read again only where they can have changed (issue 30 item 3).

`TimerDeadlines` reads the next call time of every ROS-time timer of every node at every step: at
32 vehicles ~200 timers, most of them due minutes later, and the read was the largest cost of a
step outside the callbacks. `CachedTimerDeadlines` keeps each timer's absolute deadline (the time
its clock reads when it is read plus its time until the next call: right for a lazily set clock
too) and reads a timer again only when
- it is new (a node's timer count changed: that node's timers are looked at again),
- its deadline was at or before the step time (it was due: it ran, or is about to),
- it was reset, canceled, given a new period or destroyed: the timers it has seen become
  `TrackedTimer`s (an rclpy Timer whose methods note the change here).
Anything else that moves a timer's next call time goes through those methods or through the
timer firing (then it was due). `release()` makes them plain rclpy Timers again.

The deadlines also sit in a heap (an entry per read, older entries of a timer skipped), so
`due_and_next(nodes, now)` (what a step asks) finds the timers due and the earliest one after
them without looking at the others: a step costs what is due, not the number of timers.
"""

from __future__ import annotations

import heapq

from rclpy.timer import Timer

from acomms_sim.clock.executor_stepper import TimerDeadlines
from acomms_sim.clock.local_clocks import bring_up_to_date

_WATCHER = "_acomms_deadlines"


class TrackedTimer(Timer):
    """An rclpy Timer that tells its `CachedTimerDeadlines` when its next call time changes."""

    def _changed(self, gone: bool = False) -> None:
        watcher = getattr(self, _WATCHER, None)
        if watcher is not None:
            watcher.touch(self, gone)

    def reset(self) -> None:
        bring_up_to_date(self.clock)  # the new deadline counts from the clock's time
        super().reset()
        self._changed()

    def cancel(self) -> None:
        super().cancel()
        self._changed()

    def destroy(self) -> None:
        self._changed(gone=True)
        super().destroy()

    @property
    def timer_period_ns(self) -> int:
        return Timer.timer_period_ns.fget(self)

    @timer_period_ns.setter
    def timer_period_ns(self, value: int) -> None:
        Timer.timer_period_ns.fset(self, value)
        self._changed()


def _timer_list(node) -> list:
    """The node's timers as rclpy keeps them (its private `_timers` list; this is the one place
    that reads it): its length tells, at no cost, whether the node created or destroyed one."""
    timers = getattr(node, "_timers", None)
    return timers if isinstance(timers, list) else list(node.timers)


class CachedTimerDeadlines(TimerDeadlines):
    """`TimerDeadlines` that reads a timer again only where it can have changed (module
    docstring); same answers."""

    def __init__(self, driven=()):
        super().__init__(driven)
        self._cache: dict[int, list] = {}  # id(timer) -> [timer, node, deadline or None, seq]
        self._heap: list[tuple[int, int, int]] = []  # (deadline, seq, id(timer)); seq: newest
        self._seq = 0
        self._of_node: dict[int, list[int]] = {}  # id(node) -> ids of its timers in _cache
        self._nodes: list = []  # the nodes of the last pass
        self._lists: list[list] = []  # their timer lists (rclpy's own, changed in place)
        self._lengths: list[int] = []  # the lengths those lists had when last looked at
        self._dirty: dict[int, object] = {}  # id(timer) -> timer, to read again
        self._gone: list = []  # nodes that destroyed a timer since the last pass
        self.reads = 0  # deadlines read (a measure of the per-step cost)

    def touch(self, timer, gone: bool = False) -> None:
        """The timer's next call time may have changed: read it again; `gone` (destroyed):
        its node's timers are looked at again (another may have come meanwhile)."""
        self._dirty[id(timer)] = timer
        cached = self._cache.get(id(timer))
        if gone and cached is not None:
            self._gone.append(cached[1])

    def _look_at(self, node) -> None:
        """Take the node's timers as they are now (new ones to read, gone ones forgotten)."""
        timers = _timer_list(node)
        for key in self._of_node.get(id(node), ()):
            cached = self._cache.get(key)
            if cached is not None and not any(timer is cached[0] for timer in timers):
                del self._cache[key]
        for timer in timers:
            cached = self._cache.get(id(timer))
            if cached is None or cached[0] is not timer:
                if type(timer) is Timer:
                    timer.__class__ = TrackedTimer
                setattr(timer, _WATCHER, self)
                self._cache[id(timer)] = [timer, node, None, 0]
                self._dirty[id(timer)] = timer
        self._of_node[id(node)] = [id(timer) for timer in timers]

    def _follow(self, nodes) -> None:
        """Nodes that came, went, or whose number of timers changed are looked at again."""
        if nodes != self._nodes:  # list comparison: by identity first, in C
            self._nodes = list(nodes)
            self._lists = [_timer_list(node) for node in nodes]
            self._lengths = [-1] * len(nodes)
            live = {id(node) for node in nodes}
            self._cache = {key: cached for key, cached in self._cache.items()
                           if id(cached[1]) in live}
        gone, self._gone = self._gone, []
        for node in gone:
            self._look_at(node)
        lengths = [len(timers) for timers in self._lists]
        if lengths != self._lengths:
            for index, (now, before) in enumerate(zip(lengths, self._lengths, strict=True)):
                if now != before:
                    self._look_at(self._nodes[index])
            self._lengths = lengths

    def _store(self, cached: list, deadline: int | None) -> None:
        """A timer's deadline just read: cached, and in the heap (its older entries go stale)."""
        cached[2] = deadline
        self.reads += 1
        self._seq += 1
        cached[3] = self._seq  # canceled (None) too: its older entries are stale
        if deadline is not None:
            heapq.heappush(self._heap, (deadline, self._seq, id(cached[0])))

    def _live(self, entry: tuple[int, int, int]) -> list | None:
        """The cache entry a heap entry stands for, None when stale (read again since)."""
        cached = self._cache.get(entry[2])
        return cached if cached is not None and cached[3] == entry[1] else None

    def _refresh(self, nodes, now_ns: int) -> None:
        """Read again the new, touched and due timers (see the module docstring)."""
        self._follow(nodes)
        cache, nows, read = self._cache, {}, self.read
        for key in list(self._dirty):
            cached = cache.get(key)
            if cached is not None:
                self._store(cached, read(cached[0], now_ns, nows))
        self._dirty.clear()
        heap, due = self._heap, []
        while heap and heap[0][0] <= now_ns:  # due: it ran (or runs now), read it again
            cached = self._live(heapq.heappop(heap))
            if cached is not None:
                due.append(cached)
        self.first_due = None
        for cached in due:
            self._store(cached, read(cached[0], now_ns, nows))
            if self.first_due is None and cached[2] is not None and cached[2] <= now_ns:
                self.first_due = cached[1]
        if len(heap) > 2 * len(cache) + 64:  # drop the stale entries
            self._heap = [entry for entry in heap if self._live(entry) is not None]
            heapq.heapify(self._heap)

    def _earliest(self, after_ns: int) -> list[tuple[int, list]]:
        """(deadline, cache entry) of the live heap entries at or before after_ns and of those
        at the first deadline after it, in deadline order; the heap is left as it was."""
        heap, taken, found, first_after = self._heap, [], [], None
        while heap and (first_after is None or heap[0][0] == first_after):
            entry = heapq.heappop(heap)
            taken.append(entry)
            cached = self._live(entry)
            if cached is None:
                continue
            found.append((entry[0], cached))
            if entry[0] > after_ns:
                first_after = entry[0]
        for entry in taken:
            if self._live(entry) is not None:
                heapq.heappush(heap, entry)
        return found

    def due_and_next(self, nodes, now_ns: int) -> list[int]:
        """The deadlines at or before now_ns (timers due that have not run yet) and the earliest
        one after it: what a step needs of `deadlines_ns`, at a cost that does not grow with the
        number of timers."""
        self._refresh(nodes, now_ns)
        found = self._earliest(now_ns)
        self._by_node = [(deadline, cached[1]) for deadline, cached in found]
        return [deadline for deadline, _cached in found]

    def due_nodes(self, at_ns: int) -> list:
        """The nodes with a timer due at at_ns (each once), by the deadlines last read."""
        due = {id(cached[1]): cached[1] for deadline, cached in self._earliest(at_ns)
               if deadline <= at_ns}
        return list(due.values())

    def deadlines_ns(self, nodes, now_ns: int | None = None) -> list[int]:
        if now_ns is None:
            return super().deadlines_ns(nodes, now_ns)
        self._refresh(nodes, now_ns)
        live = [cached for cached in self._cache.values() if cached[2] is not None]
        self._by_node = [(cached[2], cached[1]) for cached in live]
        return [cached[2] for cached in live]

    def release(self) -> None:
        """The timers seen become plain rclpy Timers again."""
        for timer, *_rest in self._cache.values():
            if type(timer) is TrackedTimer:
                timer.__class__ = Timer
            if getattr(timer, _WATCHER, None) is self:
                delattr(timer, _WATCHER)
        self._cache, self._of_node, self._dirty, self._heap = {}, {}, {}, []
        self._nodes, self._lists, self._lengths = [], [], []
