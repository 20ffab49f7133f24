"""LocalClocks: a stepped run sets its nodes' ROS clocks itself, in the order it is given, so
timers due at one simulated time run in that order on the EventsExecutor (the /clock delivery
order, which came from discovery, made the order and so results change from run to run)."""

import random

import pytest
from rclpy.node import Node
from rclpy.parameter import Parameter

from acomms_core.ros.testing import private_context, tear_down
from acomms_sim.clock.deadline_cache import CachedTimerDeadlines
from acomms_sim.clock.events_stepper import (
    EventsStepper,
    events_executor_available,
    make_events_executor,
)
from acomms_sim.clock.executor_stepper import TimerDeadlines, ros_timer_deadlines_ns
from acomms_sim.clock.local_clocks import LocalClocks

S = 1_000_000_000
pytestmark = pytest.mark.skipif(not events_executor_available(), reason="no EventsExecutor")


def clock_subscriptions(node) -> int:
    return sum(1 for sub in node.subscriptions if sub.topic_name == "/clock")


def appender(ran: list, name: str):
    """A timer callback without parameters (rclpy would pass TimerInfo to one with any)."""
    return lambda: ran.append(name)


@pytest.fixture
def ros():
    context = private_context()
    executor = make_events_executor(context)
    stepper = EventsStepper(executor, context, step_timeout_s=10.0)
    nodes, ran = [], []
    for name in "abcd":
        node = Node(f"local_clock_{name}", context=context, parameter_overrides=[
            Parameter("use_sim_time", value=True)])
        node.create_timer(1.0, appender(ran, name))
        executor.add_node(node)
        nodes.append(node)
    stepper.drain(0.0, now_ns=0)  # the executor takes the timers in (at time 0: none due)
    assert ran == []
    yield stepper, nodes, ran
    stepper.close()
    tear_down(context, executor, nodes)


def step(stepper, clocks, now_ns: int) -> None:
    clocks.set_ns(now_ns)
    stepper.drain(now_ns / S, now_ns=now_ns)


def test_timers_due_together_run_in_the_order_the_clocks_are_set(ros):
    stepper, nodes, ran = ros
    a, b, c, d = nodes
    clocks = LocalClocks([c, a, d, b])
    assert clocks.adopt() == 4
    assert [clock_subscriptions(n) for n in nodes] == [0, 0, 0, 0]
    assert all(n.get_parameter("use_sim_time").value for n in nodes)  # still sim time
    stepper.driven = clocks.clock_ids()
    step(stepper, clocks, 1 * S)
    assert ran == ["c", "a", "d", "b"]
    assert all(n.get_clock().now().nanoseconds == 1 * S for n in nodes)
    assert sorted(stepper.next_deadline_ns()) == [2 * S] * 4
    clocks.release()
    assert [clock_subscriptions(n) for n in nodes] == [1, 1, 1, 1]

    ran.clear()
    clocks = LocalClocks([b, d, a, c])
    clocks.adopt()
    step(stepper, clocks, 2 * S)
    assert ran == ["b", "d", "a", "c"]
    clocks.release()


def test_deadlines_of_driven_clocks_are_read_at_the_step_time(ros):
    stepper, nodes, _ran = ros
    clocks = LocalClocks(nodes)
    clocks.adopt()
    clocks.set_ns(5 * S)  # every timer is due (deadline 1 s): they keep their deadline
    assert ros_timer_deadlines_ns(nodes) == [1 * S] * 4
    assert ros_timer_deadlines_ns(nodes, clocks.clock_ids(), 5 * S) == [1 * S] * 4
    clocks.release()


@pytest.mark.parametrize("kind", [TimerDeadlines, CachedTimerDeadlines])
def test_timer_deadlines_follow_period_changes_cancels_and_new_timers(ros, kind):
    """TimerDeadlines looks each timer's clock up once, but reads every deadline afresh (the
    cached kind: where it can have changed): a period change (wake_timer_at), a cancel, a
    timer created later and one destroyed all show at once."""
    _stepper, nodes, _ran = ros
    clocks = LocalClocks(nodes)
    clocks.adopt()
    clocks.set_ns(0)
    deadlines = kind(clocks.clock_ids())
    assert deadlines.deadlines_ns(nodes, 0) == [1 * S] * 4 and deadlines.first_due is None
    a, b, c, _d = nodes
    a_timer = next(iter(a.timers))
    a_timer.timer_period_ns = 3 * S
    a_timer.reset()
    next(iter(b.timers)).cancel()
    c.create_timer(0.25, lambda: None)
    assert sorted(deadlines.deadlines_ns(nodes, 0)) == [S // 4, 1 * S, 1 * S, 3 * S]
    clocks.set_ns(1 * S)
    assert sorted(deadlines.deadlines_ns(nodes, 1 * S)) == [S // 4, 1 * S, 1 * S, 3 * S]
    assert deadlines.first_due is c  # the first node in order with a timer due (none has run)
    extra = c.create_timer(7.0, lambda: None)
    assert sorted(deadlines.deadlines_ns(nodes, 1 * S)) == [S // 4, 1 * S, 1 * S, 3 * S, 8 * S]
    c.destroy_timer(extra)
    next(iter(b.timers)).reset()
    assert sorted(deadlines.deadlines_ns(nodes, 1 * S)) == [S // 4, 1 * S, 1 * S, 2 * S, 3 * S]
    clocks.release()
    if kind is CachedTimerDeadlines:
        assert deadlines.reads < 20  # not every timer at every call
        deadlines.release()
        assert {type(t).__name__ for n in nodes for t in n.timers} == {"Timer"}


def test_lazy_clocks_set_only_the_due_nodes_and_the_others_on_first_read(ros):
    """Issue 30 item 3: a lazy LocalClocks sets, per step, only the clocks of the nodes with a
    timer due (in its order); any other clock reads the step time anyway (its now(), or before
    a callback of its node), and its timers' deadlines stay right."""
    stepper, nodes, ran = ros
    a, b, c, d = nodes
    next(iter(b.timers)).timer_period_ns = 3 * S  # b: next due at 3 s, the others at 1 s
    next(iter(b.timers)).reset()
    clocks = LocalClocks([d, c, b, a], lazy=True)
    clocks.adopt()
    clocks.set_ns(0)
    stepper.use_clocks(clocks)
    stepper.drain(0.0, now_ns=0)
    # a step asks for the earliest deadlines only (a heap of them: b's 3 s is not looked at)
    assert sorted(stepper.next_deadline_ns()) == [1 * S, 1 * S, 1 * S]
    due = stepper.due_nodes(1 * S)
    assert sorted(n.get_name() for n in due) == ["local_clock_a", "local_clock_c",
                                                 "local_clock_d"]
    sets = clocks.sets
    clocks.set_ns(1 * S, due)
    assert clocks.sets - sets == 3  # b's clock was not set...
    assert clocks.clock_ns(b.get_clock()) == 0
    stepper.drain(1.0, now_ns=1 * S)
    assert ran == ["d", "c", "a"]  # LocalClocks order, not the order `due` came in
    # ...its deadline is still read right, and it reads the step time once asked
    assert sorted(stepper.next_deadline_ns()) == [2 * S, 2 * S, 2 * S]
    assert sorted(stepper._timers.deadlines_ns(nodes, 1 * S)) == [2 * S, 2 * S, 2 * S, 3 * S]
    assert b.get_clock().now().nanoseconds == 1 * S
    assert clocks.clock_ns(b.get_clock()) == 1 * S
    clocks.set_ns(2 * S, stepper.due_nodes(2 * S))
    assert clocks.clock_ns(b.get_clock()) == 1 * S
    clocks.sync_node(b)  # what the stepper does before a callback of b
    assert clocks.clock_ns(b.get_clock()) == 2 * S
    stepper.drain(2.0, now_ns=2 * S)
    clocks.set_ns(3 * S, stepper.due_nodes(3 * S))
    stepper.drain(3.0, now_ns=3 * S)
    assert ran == ["d", "c", "a", "d", "c", "a", "d", "c", "b", "a"]
    clocks.release()  # every clock at the last time, plain ROS clocks again
    assert all(n.get_clock().now().nanoseconds == 3 * S for n in nodes)
    assert all(type(n.get_clock()).__name__ == "ROSClock" for n in nodes)


def test_a_lazy_clock_answers_now_as_rcl_would_without_asking_it(ros):
    """A lazy clock's now() is the step time, the same as rcl's answer, without a call into rcl
    once it is at the step; with ROS time switched off it is rcl's (system) time again."""
    from rclpy.clock import ROSClock

    _stepper, nodes, _ran = ros
    a = nodes[0]
    clocks = LocalClocks(nodes, lazy=True)
    clocks.adopt()
    clocks.set_ns(5 * S, due=[])
    clock = a.get_clock()
    first = clock.now()  # brings the clock to the step first
    assert first.nanoseconds == 5 * S == ROSClock.now(clock).nanoseconds
    assert first.clock_type == ROSClock.now(clock).clock_type
    asked = []
    real_handle = type(clock).handle
    type(clock).handle = property(lambda self: asked.append(1) or real_handle.fget(self))
    try:
        assert clock.now().nanoseconds == 5 * S and not asked  # not asked: at the step
    finally:
        type(clock).handle = real_handle
    a.set_parameters([Parameter("use_sim_time", value=False)])
    assert abs(clock.now().nanoseconds - ROSClock.now(clock).nanoseconds) < 10 * S
    assert clock.now().nanoseconds > 1_000_000 * S  # the system clock: rcl asked again
    clocks.release(resubscribe=False)


def test_a_lazy_clock_reads_the_step_time_in_its_nodes_callbacks(ros):
    """A node with nothing due is not set at the step, yet in its callbacks (here: a message
    from a node whose timer is due) its clock is already at the step time, before anything
    asks it: rcl-level uses (a timer created or reset there) count from the right time."""
    from std_msgs.msg import UInt64

    stepper, nodes, ran = ros
    executor = stepper.executor
    talker = Node("local_clock_talker", context=nodes[0].context, parameter_overrides=[
        Parameter("use_sim_time", value=True)])
    listener = Node("local_clock_listener", context=nodes[0].context, parameter_overrides=[
        Parameter("use_sim_time", value=True)])
    publisher = talker.create_publisher(UInt64, "/local_clock_lazy", 10)
    talker.create_timer(1.5, lambda: publisher.publish(UInt64(data=1)))
    seen = []
    clocks = LocalClocks([*nodes, talker, listener], lazy=True)

    def on_message(_msg):
        seen.append(clocks.clock_ns(listener.get_clock()))  # not asked: what was set on it
        seen.append(listener.get_clock().now().nanoseconds)

    listener.create_subscription(UInt64, "/local_clock_lazy", on_message, 10)
    for node in (talker, listener):
        executor.add_node(node)
    try:
        clocks.adopt()
        clocks.set_ns(0)
        stepper.use_clocks(clocks)
        stepper.drain(0.0, now_ns=0)
        now_ns = 0
        while now_ns < 3 * S:
            now_ns = min(d for d in stepper.next_deadline_ns() if d > now_ns)
            clocks.set_ns(now_ns, stepper.due_nodes(now_ns))
            stepper.drain(now_ns / S, now_ns=now_ns)
        assert seen == [S * 3 // 2, S * 3 // 2, 3 * S, 3 * S]
        assert len(ran) == 12  # a..d at 1, 2 and 3 s
        clocks.release()
    finally:
        for node in (talker, listener):
            executor.remove_node(node)
            node.destroy_node()


def test_nodes_made_without_clock_subscriptions_are_adopted_and_given_one_back():
    from acomms_sim.clock.local_clocks import without_clock_subscriptions

    context = private_context()
    made = []
    try:
        with without_clock_subscriptions():
            made.append(Node("no_clock_sub", context=context, parameter_overrides=[
                Parameter("use_sim_time", value=True)]))
        made.append(Node("clock_sub", context=context, parameter_overrides=[
            Parameter("use_sim_time", value=True)]))  # after the block: as rclpy makes it
        deferred, usual = made
        assert clock_subscriptions(deferred) == 0 and clock_subscriptions(usual) == 1
        assert deferred.get_clock().ros_time_is_active  # ROS time all the same
        clocks = LocalClocks(made)
        assert clocks.adopt() == 2
        clocks.set_ns(7 * S)
        assert deferred.get_clock().now().nanoseconds == 7 * S
        clocks.release()
        assert [clock_subscriptions(node) for node in made] == [1, 1]
    finally:
        for node in made:
            node.destroy_node()
        context.shutdown()


def test_release_without_resubscribing_leaves_no_clock_subscription_and_adopts_again(ros):
    """The end of a run: the nodes keep the last time, no /clock reader is created for nodes
    about to be destroyed; a later run adopts them again and steps on."""
    stepper, nodes, ran = ros
    clocks = LocalClocks(nodes, lazy=True)
    clocks.adopt()
    stepper.driven = clocks.clock_ids()
    step(stepper, clocks, 1 * S)
    clocks.release(resubscribe=False)
    assert [clock_subscriptions(n) for n in nodes] == [0, 0, 0, 0]
    assert all(n.get_clock().now().nanoseconds == 1 * S for n in nodes)
    assert all(type(n.get_clock()).__name__ == "ROSClock" for n in nodes)
    clocks = LocalClocks(nodes)
    assert clocks.adopt() == 4
    ran.clear()
    step(stepper, clocks, 2 * S)
    assert sorted(ran) == ["a", "b", "c", "d"]
    clocks.release()
    assert [clock_subscriptions(n) for n in nodes] == [1, 1, 1, 1]


def test_the_deadline_heap_answers_what_reading_every_timer_answers(ros):
    """Issue 30: a step asks `due_and_next` (a heap: the due timers and the earliest after
    them) instead of every timer's deadline; through period changes, cancels, resets, new and
    destroyed timers and time moving on, it says what reading every timer says."""
    _stepper, nodes, _ran = ros
    clocks = LocalClocks(nodes)
    clocks.adopt()
    clocks.set_ns(0)
    cached = CachedTimerDeadlines(clocks.clock_ids())
    rng = random.Random(30)
    extra = []
    for now_ns in range(0, 12 * S, S // 2):
        clocks.set_ns(now_ns)
        node = rng.choice(nodes)
        action = rng.randrange(5)
        if action == 0 and node.timers:
            timer = rng.choice(list(node.timers))
            timer.timer_period_ns = rng.choice([S // 4, S, 3 * S])
            timer.reset()
        elif action == 1 and node.timers:
            rng.choice(list(node.timers)).cancel()
        elif action == 2:
            extra.append((node, node.create_timer(rng.choice([0.5, 2.0]), lambda: None)))
        elif action == 3 and extra:
            owner, timer = extra.pop(rng.randrange(len(extra)))
            owner.destroy_timer(timer)
        every = TimerDeadlines(clocks.clock_ids()).deadlines_ns(nodes, now_ns)
        later = [d for d in every if d > now_ns]
        expected = sorted(d for d in every if d <= now_ns or d == min(later, default=None))
        assert sorted(cached.due_and_next(nodes, now_ns)) == expected
        at_ns = min(later, default=now_ns)
        assert ({id(n) for n in cached.due_nodes(at_ns)}
                == {id(n) for n, t in ((n, t) for n in nodes for t in n.timers)
                    if t.time_until_next_call() is not None
                    and now_ns + t.time_until_next_call() <= at_ns})
    assert cached.reads < 4 * len(range(0, 12 * S, S // 2))  # not every timer at every step
    clocks.release()
    cached.release()
