"""ROS-free deterministic stepping: next step, warp throttle, watchdog, Tock rounds, time grid."""

import pytest

from acomms_core.time_grid import TimeGrid, grid_deadline_ns
from acomms_sim.clock.stepping import (
    TockRound,
    WarpThrottle,
    Watchdog,
    next_step_ns,
    parse_warp,
    split_ns,
    stamp_ns,
)


def test_next_step_jumps_to_the_earliest_future_deadline_capped_at_the_end():
    assert next_step_ns(100, [300, None, 200, 50, 100], 1000) == 200
    assert next_step_ns(100, [], 1000) == 1000
    assert next_step_ns(100, [5000], 1000) == 1000
    assert next_step_ns(1000, [1500], 1000) == 1000


def test_warp_throttle_never_runs_ahead_and_max_never_waits():
    assert WarpThrottle(10.0).wait_s(100.0, 4.0) == pytest.approx(6.0)
    assert WarpThrottle(10.0).wait_s(100.0, 12.0) == 0.0
    assert WarpThrottle(None).wait_s(1e6, 0.0) == 0.0
    assert parse_warp("max") is None and parse_warp("2.5") == 2.5
    with pytest.raises(ValueError):
        parse_warp("0")


def test_watchdog_names_what_it_waited_for():
    dog = Watchdog(2.0)
    dog.arm("participant x", 10.0)
    assert not dog.expired(11.9) and dog.expired(12.1)
    assert dog.message(3.5) == ("participant x did not finish within 2 wall s "
                                "at simulated time 3.500 s")
    dog.disarm()
    assert not dog.expired(100.0)


def test_tock_round_is_settled_only_when_everyone_answered_without_work():
    tock_round = TockRound(4, frozenset({"a", "b"}))
    assert not tock_round.answer("a", 3, 10, 0)  # an old step
    assert not tock_round.answer("ghost", 4, 10, 0)  # not registered
    assert tock_round.answer("a", 4, 700, 2)
    assert tock_round.missing() == ["b"] and not tock_round.complete
    tock_round.answer("b", 4, None, 0)
    assert tock_round.complete and not tock_round.quiet
    tock_round.answer("a", 4, 700, 0)  # a repeated answer does not hide the work done
    assert not tock_round.quiet
    quiet = TockRound(5, frozenset({"a", "b"}))
    quiet.answer("a", 5, 700, 0), quiet.answer("b", 5, None, 0)
    assert quiet.quiet and sorted(quiet.next_event_ns(), key=str) == [700, None]


def test_time_stamps_are_exact_nanoseconds():
    class Stamp:
        sec, nanosec = 12, 345

    assert stamp_ns(Stamp) == 12_000_000_345
    assert split_ns(12_000_000_345) == {"sec": 12, "nanosec": 345}


def test_grid_wakes_at_the_poll_time_a_periodic_timer_would_use():
    assert grid_deadline_ns(1_030, 1_000, 0, 50) == 1_050
    assert grid_deadline_ns(1_050, 1_000, 0, 50) == 1_050
    assert grid_deadline_ns(900, 1_000, 0, 50) == 1_050  # overdue: the next poll after now
    assert grid_deadline_ns(-120, -200, 10, 50) == -90  # before the anchor (clock jumped back)
    grid = TimeGrid(anchor_ns=500_000_000, period_ns=200_000_000)
    assert grid.next_after(700_000_000) == 900_000_000
    assert grid.wake_for(1.3, 700_000_000) == 1_300_000_000  # on the grid despite rounding
    assert grid.wake_for(None, 700_000_000) == 900_000_000
    assert grid.latest_at_or_before(1_250_000_000) == 1_100_000_000


def _conductor(ros, participants, timeout_s=5.0):
    from rclpy.parameter import Parameter

    from acomms_sim.nodes.sim_clock_node import SimClockNode

    return ros.add(SimClockNode(context=ros.context, parameter_overrides=[
        Parameter("mode", value="conductor"), Parameter("participants", value=participants),
        Parameter("tock_timeout_s", value=timeout_s), Parameter("max_step_s", value=10.0),
        Parameter("publish_period_s", value=0.01)]))


def test_conductor_settles_each_step_then_jumps_to_the_reported_next_event():
    """A participant that did work at a step gets the same time again; once quiet, the clock
    jumps to the earliest next_event."""
    from builtin_interfaces.msg import Time
    from rclpy.qos import QoSDurabilityPolicy, QoSProfile

    from acomms_core.ros.testing import RosHarness
    from acomms_interfaces.msg import Tick, Tock

    with RosHarness() as ros:
        clock = _conductor(ros, ["p1"])
        tock_pub = ros.helper.create_publisher(
            Tock, "/tock", QoSProfile(depth=10, durability=QoSDurabilityPolicy.TRANSIENT_LOCAL))
        seen = []

        def answer(tick):
            stamp = stamp_ns(tick.header.stamp)
            first = not seen or seen[-1] != stamp
            seen.append(stamp)
            tock_pub.publish(Tock(step_id=tick.step_id, node_name="p1", has_next_event=True,
                                  next_event=Time(**split_ns(stamp + 2_500_000_000)),
                                  work=1 if first else 0))

        ros.helper.create_subscription(Tick, "/tick", answer, 10)
        ros.configure_and_activate(clock)
        assert ros.spin_until(lambda: len(set(seen)) >= 4, timeout=10.0), seen
        assert sorted(set(seen))[:4] == [0, 2_500_000_000, 5_000_000_000, 7_500_000_000]
        assert seen.count(2_500_000_000) == 2  # worked, then quiet: the step is settled


def test_conductor_stops_on_a_silent_participant_naming_it():
    from acomms_core.ros.testing import RosHarness

    with RosHarness() as ros:
        clock = _conductor(ros, ["silent"], timeout_s=0.3)
        ros.configure_and_activate(clock)
        assert ros.spin_until(lambda: clock.stopped_reason is not None, timeout=5.0)
        assert clock.stopped_reason == ("participant silent did not answer Tick 0 within 0.3 "
                                        "wall s at simulated time 0.000 s")


def test_a_tock_sent_before_discovery_matched_still_reaches_the_conductor():
    """A second process can answer the (latched) Tick before its Tock publisher has matched the
    conductor's subscription; the Tock must not be lost (it once stalled a two-process run)."""
    from rclpy.qos import QoSDurabilityPolicy, QoSProfile

    from acomms_core.ros.testing import RosHarness
    from acomms_interfaces.msg import Tock

    with RosHarness() as ros, RosHarness() as other_process:
        clock = _conductor(ros, ["late"], timeout_s=20.0)
        ros.configure_and_activate(clock)
        assert clock.round is not None and clock.round.step_id == 0
        publisher = other_process.helper.create_publisher(
            Tock, "/tock", QoSProfile(depth=10, durability=QoSDurabilityPolicy.TRANSIENT_LOCAL))
        publisher.publish(Tock(step_id=0, node_name="late", work=0))  # before any matching
        assert ros.spin_until(lambda: clock.round.step_id > 0, timeout=15.0), (
            clock.stopped_reason or "the Tock never arrived")


def test_stepped_clock_publishes_each_step_only_while_someone_subscribes():
    """`set_time_ns` publishes /clock for other processes and tools; with no subscriber (a
    one-process run sets its nodes' clocks directly) it only counts the step."""
    from rclpy.parameter import Parameter
    from rosgraph_msgs.msg import Clock

    from acomms_core.ros.testing import RosHarness
    from acomms_sim.nodes.sim_clock_node import SimClockNode

    with RosHarness() as ros:
        clock = ros.add(SimClockNode(context=ros.context, parameter_overrides=[
            Parameter("mode", value="stepped")]))
        ros.configure_and_activate(clock)
        clock.set_time_ns(1_000_000_000)
        assert clock.steps == 1 and clock.clock_pub.get_subscription_count() == 0
        heard = []
        ros.helper.create_subscription(Clock, "/clock", lambda m: heard.append(
            stamp_ns(m.clock)), 10)
        assert ros.spin_until(lambda: clock.clock_pub.get_subscription_count() == 1, timeout=10.0)
        clock.set_time_ns(2_000_000_000)
        assert ros.spin_until(lambda: heard, timeout=10.0)
        assert heard == [2_000_000_000] and clock.steps == 2
