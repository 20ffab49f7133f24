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
- `release()`: give the TimeSources their /clock subscriptions back (after the run).
The /clock topic itself is still published (sim_clock_node) for other processes and tools. A node
whose `use_sim_time` is switched off and on again during the run subscribes to /clock again and
then receives the same times from both paths.
"""

from __future__ import annotations

from rclpy.clock import ClockType
from rclpy.time import Time


def _time_source(node):
    """The node's rclpy TimeSource (rclpy keeps it in the private `_time_source`; this is the one
    place that reads it), or None."""
    return getattr(node, "_time_source", None)


class LocalClocks:
    """Sets the ROS-time clocks of in-process nodes directly (see the module docstring)."""

    def __init__(self, nodes):
        self._nodes = list(nodes)
        self._sources: list = []  # adopted TimeSources, in the nodes' order

    def adopt(self) -> int:
        """Take over every ROS-time-active TimeSource of the nodes; how many."""
        for node in self._nodes:
            source = _time_source(node)
            if source is None or not source.ros_time_is_active or source in self._sources:
                continue
            subscription, source._clock_sub = source._clock_sub, None
            if subscription is not None:
                node.destroy_subscription(subscription)
            self._sources.append(source)
        return len(self._sources)

    def set_ns(self, now_ns: int) -> None:
        """Every adopted clock to now_ns (ROS time), in the nodes' order."""
        now = Time(nanoseconds=now_ns, clock_type=ClockType.ROS_TIME)
        for source in self._sources:
            source._last_time_set = now
            for clock in source._associated_clocks:
                clock.set_ros_time_override(now)

    def clock_ids(self) -> set[int]:
        """The ids of the clocks this object sets (a stepper need not ask them the time)."""
        return {id(clock) for source in self._sources for clock in source._associated_clocks}

    def release(self) -> None:
        """Give every adopted TimeSource its /clock subscription back (if still ROS time)."""
        sources, self._sources = self._sources, []
        for source in sources:
            if source.ros_time_is_active and source._get_node() is not None:
                try:
                    source._subscribe_to_clock_topic()
                except Exception:  # the node was destroyed meanwhile: nothing to give back
                    continue
