"""RosHarness.call's timeout names what the unanswered service's handler is waiting on."""

import pytest
from rclpy.task import Future
from std_srvs.srv import Trigger

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
