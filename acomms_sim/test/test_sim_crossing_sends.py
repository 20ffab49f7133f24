"""Publications count as sent to other processes only when a subscription elsewhere hears them."""

import time

from std_msgs.msg import UInt64

from acomms_core.ros.testing import RosHarness
from acomms_sim.clock.crossing import CrossingSends
from acomms_sim.clock.events_stepper import EventsStepper, make_events_executor


def _until(predicate, timeout_s: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def test_only_publications_heard_in_another_context_count():
    with RosHarness() as here, RosHarness() as elsewhere:
        node = here.helper
        heard = []
        node.create_subscription(UInt64, "/crossing_local", heard.append, 10)
        local = node.create_publisher(UInt64, "/crossing_local", 10)
        remote = node.create_publisher(UInt64, "/crossing_remote", 10)
        tick = node.create_publisher(UInt64, "/tick", 10)  # a stepping topic never counts
        elsewhere.helper.create_subscription(UInt64, "/crossing_remote", lambda _m: None, 10)
        elsewhere.helper.create_subscription(UInt64, "/tick", lambda _m: None, 10)
        assert _until(lambda: local.get_subscription_count() == 1
                      and remote.get_subscription_count() == 1
                      and tick.get_subscription_count() == 1)
        crossing = CrossingSends()
        crossing.watch([node])
        crossing.watch([node])  # a second scan does not wrap twice
        local.publish(UInt64(data=1))
        tick.publish(UInt64(data=1))
        assert crossing.sent == 0
        remote.publish(UInt64(data=2))
        remote.publish(UInt64(data=3))
        assert crossing.sent == 2
        crossing.release()
        remote.publish(UInt64(data=4))
        assert crossing.sent == 2  # the publisher's own publish again


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
            assert stepper.sent == 0
            elsewhere.helper.create_subscription(UInt64, "/crossing_out", lambda _m: None, 10)
            assert _until(lambda: relay.get_subscription_count() == 1)
            assert relayed(2)
            assert stepper.sent == 1
        finally:
            stepper.close()
            executor.remove_node(node)
            here.executor.add_node(node)
            executor.shutdown()
