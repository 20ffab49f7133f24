"""Periodic status that costs nothing while nobody listens.

Queue status, MAC status and diagnostics are published every period (ros_acomms: queue status at
`update_rate`). Nobody subscribes to them in most simulation runs, yet a 1 Hz timer on every node
of every vehicle sets a step of the deterministic clock each simulated second. A `StatusCadence`
keeps the plain periodic timer's grid (anchored at `start`, then every period) but arms its timer
only:
- while one of its watched publishers has a subscriber (publisher "matched" events say when that
  changes, e.g. `ros2 topic echo` or a bag recorder starting): every grid time, as before;
- else at the first grid time at or after the node's next housekeeping deadline
  (`next_housekeeping_s`: a queued message's TTL, a fragment session's expiry), so the work
  happens at exactly the grid time a plain timer would have done it;
- else not at all.
The callback does the housekeeping and publishes to the publishers that are `listened` (a later
subscriber gets the next one: the status topics are volatile). Without watched publishers it is a
housekeeping timer that runs only when something can be due (packet_dispatch_node's look for
stalled fragment sessions).
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from rclpy.event_handler import PublisherEventCallbacks

from acomms_core.ros.ros_support import listened, wake_timer_at
from acomms_core.time_grid import TimeGrid, seconds_to_ns


class StatusCadence:
    """The status timer of one node (see the module docstring)."""

    def __init__(self, node, callback: Callable[[], None],
                 next_housekeeping_s: Callable[[], float | None] | None = None):
        self._node = node
        self._callback = callback
        self._next_housekeeping_s = next_housekeeping_s
        self._publishers: list = []
        self._timer = None
        self._grid: TimeGrid | None = None
        self._lock = threading.Lock()

    def publisher(self, resources, msg_type, topic: str, qos=10):
        """A status publisher made through `resources` (e.g. the node's `configured`) whose
        subscribers count as listeners: one coming or going re-arms the timer."""
        publisher = resources.publisher(msg_type, topic, qos, event_callbacks=(
            PublisherEventCallbacks(matched=lambda _info: self.rearm())))
        self._publishers.append(publisher)
        return publisher

    @property
    def timer(self):
        """The rclpy timer while started (armed or cancelled), else None."""
        return self._timer

    def forget_publishers(self) -> None:
        self._publishers = []

    def start(self, resources, period_s: float, **timer_kwargs) -> None:
        """Create the timer (through `resources`, e.g. the node's `activated`), its grid
        anchored now."""
        self._timer = resources.timer(period_s, self._fire, **timer_kwargs)
        self.set_period(period_s)

    def set_period(self, period_s: float) -> None:
        """A new period; the grid is anchored now (as a plain timer's reset would)."""
        now_ns = self._node.get_clock().now().nanoseconds
        self._grid = TimeGrid(now_ns, seconds_to_ns(period_s))
        self.rearm()

    def stop(self) -> None:
        """Forget the timer (its resources destroy it)."""
        with self._lock:
            self._timer = self._grid = None

    def release(self) -> None:
        """Forget the timer and the publishers (cleanup: their resources destroy them)."""
        self.stop()
        self.forget_publishers()

    def listened(self) -> bool:
        return any(listened(publisher) for publisher in self._publishers)

    def rearm(self) -> None:
        """Arm the timer for the next grid time anything is due (module docstring). Cheap when
        that does not change (it is called for every queued message): the timer is only
        touched when its next call is not already that time."""
        with self._lock:
            timer, grid = self._timer, self._grid
            if timer is None or grid is None:
                return
            now_ns = self._node.get_clock().now().nanoseconds
            if self.listened():
                wake_ns = grid.next_after(now_ns)
            else:
                due_s = None if self._next_housekeeping_s is None else self._next_housekeeping_s()
                wake_ns = None if due_s is None else grid.wake_for(due_s, now_ns)
            try:
                until_ns = timer.time_until_next_call()  # None: cancelled
                if wake_ns is None:
                    if until_ns is not None:
                        timer.cancel()
                    return
            except Exception:  # destroyed meanwhile (deactivated in another thread)
                self._timer = None
                return
            if until_ns is not None and now_ns + until_ns == wake_ns:
                return  # already armed for that time
            if not wake_timer_at(timer, wake_ns, now_ns):
                self._timer = None

    def _fire(self) -> None:
        try:
            self._callback()
        finally:
            self.rearm()
