"""In-process ROS test harness: a private Context and executor per test, bounded waits.

Used by the tests of every acomms package. Nothing here is needed at run time.

    with RosHarness() as ros:
        node = ros.add(MessageQueueNode(context=ros.context, parameter_overrides=[...]))
        ros.configure_and_activate(node)
        assert ros.spin_until(lambda: received, timeout=5.0)
"""

from __future__ import annotations

import gc
import os
import time
from collections.abc import Callable

import rclpy
from lifecycle_msgs.msg import State
from rclpy.context import Context
from rclpy.executors import MultiThreadedExecutor
from rclpy.lifecycle import TransitionCallbackReturn

from acomms_core.ros.ros_support import (
    ListedLongEnough,
    lifecycle_state_label,
    service_listed,
)

LABELS = {State.PRIMARY_STATE_INACTIVE: "inactive", State.PRIMARY_STATE_ACTIVE: "active"}


def private_context(domain_id: int | None = None, args=None) -> Context:
    """A Context of its own, initialised on domain_id (default: ROS_DOMAIN_ID, else 0)."""
    context = Context()
    if domain_id is None:
        domain_id = int(os.environ.get("ROS_DOMAIN_ID", "0"))
    rclpy.init(args=args, context=context, domain_id=domain_id)
    return context


FINALIZE_WAIT_S = 10.0  # wall clock: how long tear_down waits for a busy node to be finalized


def tear_down(context: Context, executor, nodes: list) -> None:
    """Every node removed from the executor and destroyed (newest first), then the executor and
    the context shut down (the end of a RosHarness, or of a test's or bench's own set-up).

    A node whose handle a callback still holds is finalized only when that callback ends. Until
    then its name keeps its /rosout registration, and a later node of the same name that
    registers meanwhile loses its /rosout when the old one goes: so wait for it (bounded)."""
    handles = [node.handle for node in nodes]
    for node in reversed(nodes):
        executor.remove_node(node)
        node.destroy_node()
    nodes.clear()
    executor.shutdown(timeout_sec=2.0)
    end = time.monotonic() + FINALIZE_WAIT_S
    while any(handle.pointer for handle in handles) and time.monotonic() < end:
        time.sleep(0.01)
    gc.collect()  # entities left in reference cycles hold their node's rcl handle until then
    if context.ok():
        rclpy.shutdown(context=context)


class RosHarness:
    """Owns a Context, an executor and the nodes added to it; tears all down on exit."""

    def __init__(self, num_threads: int = 4, domain_id: int | None = None, args=None):
        """args: command-line arguments of the Context (e.g. a `--ros-args --params-file`)."""
        self.context = private_context(domain_id, args)
        self.executor = MultiThreadedExecutor(num_threads=num_threads, context=self.context)
        self.nodes = []
        self.helper = self.add(rclpy.create_node("test_helper", context=self.context))

    def __enter__(self) -> RosHarness:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def add(self, node):
        self.nodes.append(node)
        self.executor.add_node(node)
        return node

    def close(self) -> None:
        tear_down(self.context, self.executor, self.nodes)

    def spin_for(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            self.executor.spin_once(timeout_sec=min(0.05, max(0.0, end - time.monotonic())))

    def spin_until(self, predicate: Callable[[], bool], timeout: float = 10.0) -> bool:
        """Spin until predicate() is true; False on timeout (never hangs)."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if predicate():
                return True
            self.executor.spin_once(timeout_sec=0.05)
        return predicate()

    def wait_for_service(self, client, timeout: float) -> bool:
        """client.wait_for_service, but a service listed in the graph long enough counts as
        there (ros_support.ListedLongEnough: an earlier test's same-named server lingers)."""
        name = self.helper.resolve_service_name(client.srv_name)
        end, listed_long_enough = time.monotonic() + timeout, ListedLongEnough()
        while time.monotonic() < end:
            if client.service_is_ready() or listed_long_enough(
                    service_listed(self.helper, name), time.monotonic()):
                return True
            self.spin_for(0.05)
        return client.service_is_ready()

    def call(self, client, request, timeout: float = 10.0):
        """Call a service and wait for the response; raises TimeoutError."""
        if not self.wait_for_service(client, timeout):
            raise TimeoutError(f"service {client.srv_name} not available")
        if not getattr(client, "_acomms_called", False):
            # wait_for_service sees the server's request reader; the server's response writer
            # may not have matched this client yet, and a response sent before it does is lost
            # (a known DDS race): give discovery a moment before a client's first request.
            client._acomms_called = True
            self.spin_for(0.2)
        future = client.call_async(request)
        if not self.spin_until(future.done, timeout):
            raise TimeoutError(f"service {client.srv_name} did not answer in {timeout} s; "
                               f"executor tasks pending: {self.pending_tasks() or 'none'}")
        return future.result()

    def pending_tasks(self) -> str:
        """Where each unfinished executor task waits (coroutine frames), for a timeout's
        message: a service that never answers shows what its handler is awaiting."""
        with self.executor._tasks_lock:
            tasks = list(self.executor._tasks)
        described = []
        for task, entity, _node in tasks:
            if task.done():
                continue
            frames, awaited = [], getattr(task, "_handler", None)
            while awaited is not None:
                frame = getattr(awaited, "cr_frame", None) or getattr(awaited, "gi_frame", None)
                if frame is not None:
                    frames.append(f"{frame.f_code.co_name}:{frame.f_lineno}")
                awaited = getattr(awaited, "cr_await", None) or getattr(awaited, "gi_yieldfrom",
                                                                          None)
            name = getattr(entity, "srv_name", None) or type(entity).__name__
            described.append(f"[{name}{' executing' if task.executing() else ''}: "
                             f"{' > '.join(frames) or '?'}]")
        return " ".join(described)

    def configure_and_activate(self, node) -> None:
        """Drive a lifecycle node to active; raises with the state it got stuck in."""
        for trigger, expected in ((node.trigger_configure, State.PRIMARY_STATE_INACTIVE),
                                  (node.trigger_activate, State.PRIMARY_STATE_ACTIVE)):
            result = trigger()
            if result != TransitionCallbackReturn.SUCCESS:
                raise AssertionError(f"{node.get_name()}: {trigger.__name__} returned {result}")
            label = lifecycle_state_label(node)
            if label != LABELS[expected]:
                raise AssertionError(f"{node.get_name()}: {trigger.__name__} left it {label}")
