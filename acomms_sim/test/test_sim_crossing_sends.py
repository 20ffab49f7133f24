"""Deliveries count as sent to other processes only when a subscription elsewhere (not an
observer) hears them, and as received only when they came from another process."""

import time

import rclpy
from std_msgs.msg import UInt64

from acomms_core.ros.testing import RosHarness
from acomms_sim.clock.crossing import UNKNOWN_NODE, CrossingCounts
from acomms_sim.clock.events_stepper import EventsStepper, make_events_executor


def _until(predicate, timeout_s: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def test_sent_counts_deliveries_to_other_processes_but_not_to_observers():
    with RosHarness() as here, RosHarness() as elsewhere:
        node = here.helper
        node.create_subscription(UInt64, "/crossing_local", lambda _m: None, 10)
        local = node.create_publisher(UInt64, "/crossing_local", 10)
        remote = node.create_publisher(UInt64, "/crossing_remote", 10)
        tick = node.create_publisher(UInt64, "/tick", 10)  # a stepping topic never counts
        for _ in range(2):  # two subscriptions elsewhere: two deliveries per publication
            elsewhere.helper.create_subscription(UInt64, "/crossing_remote", lambda _m: None, 10)
        elsewhere.helper.create_subscription(UInt64, "/tick", lambda _m: None, 10)
        recording = rclpy.create_node("acomms_run_recording", context=elsewhere.context)
        recording.create_subscription(UInt64, "/crossing_remote", lambda _m: None, 10)
        try:
            assert _until(lambda: local.get_subscription_count() == 1
                          and remote.get_subscription_count() == 3
                          and tick.get_subscription_count() == 1
                          and len(node.get_subscriptions_info_by_topic("/crossing_remote")) == 3)
            crossing = CrossingCounts()
            crossing.watch([node])
            remote.publish(UInt64(data=0))  # the graph may not name the nodes yet: not cached
            assert _until(lambda: all(info.node_name != UNKNOWN_NODE for info in
                                      node.get_subscriptions_info_by_topic("/crossing_remote")))
            crossing.release()
            crossing = CrossingCounts()
            crossing.watch([node])
            crossing.watch([node])  # a second scan does not wrap twice
            local.publish(UInt64(data=1))
            tick.publish(UInt64(data=1))
            assert (crossing.sent, crossing.self_delivered) == (0, 1)
            remote.publish(UInt64(data=2))
            remote.publish(UInt64(data=3))
            assert crossing.sent == 4  # the recording is an observer, not part of the run
            assert crossing.work == 4
            crossing.release()
            remote.publish(UInt64(data=4))
            assert crossing.sent == 4  # the publisher's own publish again
        finally:
            recording.destroy_node()


def test_received_counts_only_what_came_from_another_process():
    with RosHarness() as here, RosHarness() as elsewhere:
        node = here.helper
        here.executor.remove_node(node)  # spun by hand below
        heard = []
        node.create_subscription(UInt64, "/crossing_in", heard.append, 10)
        mine = node.create_publisher(UInt64, "/crossing_in", 10)
        theirs = elsewhere.helper.create_publisher(UInt64, "/crossing_in", 10)
        assert _until(lambda: mine.get_subscription_count() == 1
                      and theirs.get_subscription_count() == 1)
        crossing = CrossingCounts()
        crossing.watch([node], subscriptions=True)
        mine.publish(UInt64(data=1))
        theirs.publish(UInt64(data=2))
        executor = rclpy.executors.SingleThreadedExecutor(context=here.context)
        executor.add_node(node)
        try:
            assert _until(lambda: executor.spin_once(timeout_sec=0.01) or len(heard) == 2)
        finally:
            executor.remove_node(node)
            executor.shutdown()
        assert (crossing.taken, crossing.self_delivered, crossing.received) == (2, 1, 1)
        assert crossing.sent == 0  # its own publication reached only this process
        crossing.release()


def test_events_stepper_counts_what_crossed_not_what_ran():
    with RosHarness() as here, RosHarness() as elsewhere:
        executor = make_events_executor(here.context)
        node = here.helper
        here.executor.remove_node(node)
        executor.add_node(node)
        relay = node.create_publisher(UInt64, "/crossing_out", 10)
        node.create_subscription(UInt64, "/crossing_in", lambda m: relay.publish(m), 10)
        trigger = node.create_publisher(UInt64, "/crossing_in", 10)
        stepper = EventsStepper(executor, here.context, step_timeout_s=10.0)

        def relayed(data: int) -> bool:
            trigger.publish(UInt64(data=data))
            return _until(lambda: stepper.drain() >= 1)

        try:
            assert _until(lambda: trigger.get_subscription_count() == 1)
            stepper.drain()  # wraps the entities
            assert relayed(1)  # the relay ran, but nobody elsewhere hears /crossing_out
            assert (stepper.crossing.sent, stepper.crossing.received) == (0, 0)
            elsewhere.helper.create_subscription(UInt64, "/crossing_out", lambda _m: None, 10)
            assert _until(lambda: relay.get_subscription_count() == 1)
            assert relayed(2)
            assert (stepper.crossing.sent, stepper.crossing.received) == (1, 0)
        finally:
            stepper.close()
            executor.remove_node(node)
            here.executor.add_node(node)
            executor.shutdown()
