"""RosHarness.call: a timeout names what the unanswered handler waits on; a service the graph
lists but DDS never calls ready (a dead same-named server lingering) is still called."""

import time

import pytest
from rclpy.task import Future
from std_srvs.srv import Trigger

from acomms_core.ros.ros_support import ListedLongEnough
from acomms_core.ros.testing import RosHarness


def test_a_service_that_never_answers_is_reported_with_where_it_waits():
    with RosHarness() as ros:
        never = Future()

        async def wait_for_nothing(request, response):
            await never
            return response

        ros.helper.create_service(Trigger, "stuck_service", wait_for_nothing)
        client = ros.helper.create_client(Trigger, "stuck_service")
        with pytest.raises(TimeoutError) as raised:
            ros.call(client, Trigger.Request(), timeout=1.0)
        message = str(raised.value)
        assert "stuck_service did not answer in 1.0 s" in message
        assert "wait_for_nothing" in message and "__await__" in message
        never.set_result(None)


def test_a_service_listed_but_never_reported_ready_is_called_anyway():
    """What Fast DDS does while half of a dead same-named server lingers in its graph."""
    with RosHarness() as ros:
        ros.helper.create_service(Trigger, "/listed_service",
                                  lambda request, response: Trigger.Response(success=True))
        client = ros.helper.create_client(Trigger, "/listed_service")
        client.service_is_ready = lambda: False
        started = time.monotonic()
        assert ros.call(client, Trigger.Request(), timeout=10.0).success
        assert time.monotonic() - started < 5.0


def test_a_service_nobody_serves_is_still_not_available():
    with RosHarness() as ros:
        client = ros.helper.create_client(Trigger, "/nobody_serves_this")
        with pytest.raises(TimeoutError, match="not available"):
            ros.call(client, Trigger.Request(), timeout=1.0)


def test_listed_long_enough_counts_only_an_unbroken_listing():
    listed_long_enough = ListedLongEnough(after_s=1.0)
    assert not listed_long_enough(True, 10.0)
    assert not listed_long_enough(True, 10.9)
    assert not listed_long_enough(False, 11.0)  # gone from the graph: start again
    assert not listed_long_enough(True, 11.5)
    assert listed_long_enough(True, 12.5)
