"""private_context and tear_down: the set-up and the end of a RosHarness, shared with the tests
and benches that build their own executor."""

import os
import threading
import time

import rclpy
from rclpy.executors import SingleThreadedExecutor

from acomms_core.ros.testing import private_context, tear_down


def test_a_private_context_is_on_the_environment_s_domain_unless_told():
    context = private_context()
    try:
        assert context.ok()
        assert context.get_domain_id() == int(os.environ.get("ROS_DOMAIN_ID", "0"))
    finally:
        rclpy.shutdown(context=context)


def test_tear_down_destroys_the_nodes_newest_first_then_shuts_everything_down():
    context = private_context()
    executor = SingleThreadedExecutor(context=context)
    destroyed, nodes = [], []
    for index in range(3):
        node = rclpy.create_node(f"tear_down_{index}", context=context)
        destroy = node.destroy_node
        node.destroy_node = lambda destroy=destroy, index=index: (destroyed.append(index),
                                                                  destroy())
        executor.add_node(node)
        nodes.append(node)
    tear_down(context, executor, nodes)
    assert destroyed == [2, 1, 0]
    assert nodes == [] and executor.get_nodes() == []
    assert not context.ok()
    tear_down(context, executor, nodes)  # twice (a close after a failure): nothing left to do


def test_tear_down_returns_only_when_a_node_a_callback_still_held_is_finalized():
    """Else that node, finalized later, would take a newer same-named node's /rosout with it."""
    context = private_context()
    executor = SingleThreadedExecutor(context=context)
    node = rclpy.create_node("held_by_a_callback", context=context)
    handle, holding = node.handle, threading.Event()

    def callback_in_flight():
        with handle:
            holding.set()
            time.sleep(0.5)

    thread = threading.Thread(target=callback_in_flight)
    thread.start()
    holding.wait(5.0)
    tear_down(context, executor, [node])
    try:
        assert handle.pointer == 0, "tear_down returned with the node not yet finalized"
    finally:
        thread.join()
