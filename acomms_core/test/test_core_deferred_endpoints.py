"""DeferredEndpoints (the end of a run): endpoints a node releases while it is open leave their
node as rclpy's destroy does, and are destroyed only by `destroy()` (after the context)."""

from __future__ import annotations

import os

import pytest
import rclpy
from rclpy.context import Context
from rclpy.node import Node
from std_msgs.msg import String

from acomms_core.ros.deferred_endpoints import DeferredEndpoints, deferring
from acomms_core.ros.ros_support import destroy_entities


@pytest.fixture
def node():
    context = Context()
    rclpy.init(context=context, domain_id=int(os.environ.get("ROS_DOMAIN_ID", "0")))
    node = Node("deferred_endpoints_probe", context=context, start_parameter_services=False)
    yield node
    node.destroy_node()
    rclpy.shutdown(context=context)


def test_endpoints_leave_the_node_at_once_and_are_destroyed_later(node):
    publisher = node.create_publisher(String, "deferred_probe", 1)
    subscription = node.create_subscription(String, "deferred_probe", lambda _m: None, 1)
    timer = node.create_timer(10.0, lambda: None)
    deferred = DeferredEndpoints()
    with deferred:
        assert deferring() is deferred
        destroy_entities(node, [publisher, subscription, timer])
    assert deferring() is None
    assert publisher not in node.publishers and subscription not in node.subscriptions
    assert timer not in node.timers
    assert deferred.kept == [publisher, subscription]  # the timer went at once
    publisher.publish(String(data="still there"))  # its endpoint is not destroyed yet
    assert "destroy" not in vars(publisher)  # rclpy's own destroy() again
    assert deferred.destroy() == 2
    with pytest.raises(Exception):  # noqa: B017 - rclpy's InvalidHandle: destroyed now
        publisher.publish(String(data="gone"))
    assert deferred.kept == []


def test_without_deferring_endpoints_are_destroyed_at_once(node):
    publisher = node.create_publisher(String, "deferred_probe", 1)
    destroy_entities(node, [publisher])
    with pytest.raises(Exception):  # noqa: B017 - rclpy's InvalidHandle
        publisher.publish(String(data="gone"))


def test_only_one_is_open_at_a_time():
    with DeferredEndpoints(), pytest.raises(RuntimeError), DeferredEndpoints():
        pass
    assert deferring() is None
