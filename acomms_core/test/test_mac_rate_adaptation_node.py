"""Rate adaptation through a MAC node's topics and parameters, on deterministic sim time.

A CST report (the modem heard vehicle 7 at a high SNR) makes the TDMA node ask the queue for
vehicle 7's messages at the fast rate and shows the chosen rate in tdma_status; a destination
the queue has nothing for falls back to any message at the robust rate; `ros2 param set`
switches the policy at run time and refuses a bad value with the reason.
"""

import rclpy
from rclpy.parameter import Parameter
from tdma_test_support import SIM_TIME, SimClock, TestModem, param_client, set_parameters

from acomms_core.nodes.tdma_node import TdmaNode
from acomms_core.ros.testing import RosHarness
from acomms_interfaces.msg import CST, TdmaStatus
from acomms_interfaces.srv import GetNextPacketData

START = 1000.0


class DestQueue:
    """Always has messages for vehicle 7 only; records every request."""

    def __init__(self, ros, namespace):
        self.requests = []
        self.node = ros.add(rclpy.create_node("dest_queue", namespace=namespace,
                                              context=ros.context))
        self.node.create_service(GetNextPacketData, "get_next_packet_data", self._on_request)

    def _on_request(self, request, response):
        self.requests.append(request)
        if request.match_dest and request.dest != 7:
            return response
        response.dest = 7
        response.dataframe_bytes = bytes(request.num_dataframe_bytes)
        response.num_dataframe_bytes = request.num_dataframe_bytes
        response.queued_message_ids = [len(self.requests)]
        response.num_messages = 1
        return response


def make_mac(ros, clock):
    values = dict(cycle_start_time="0", guard_time_seconds=0.5, num_slots=1,
                  slot_duration_seconds=10.0, active_slots=0, tick_period_seconds=0.5,
                  status_period_seconds=1.0, rate_policy="adaptive", rate_margin_db=1.0)
    mac = ros.add(TdmaNode(namespace="/a", context=ros.context, parameter_overrides=SIM_TIME + [
        Parameter(k, value=v) for k, v in values.items()]))
    clock.watch(mac, mac=True)
    return mac


def step_until(clock, predicate, steps=20):
    """Sim time moves on (the status timer runs on it) until predicate() holds."""
    for _ in range(steps):
        if predicate():
            return True
        clock.step(0.5)
    return predicate()


def test_cst_snr_sets_the_rate_per_destination_and_the_policy_switches_at_run_time():
    channel, statuses = [], []
    with RosHarness() as ros:
        clock = SimClock(ros, START)
        queue = DestQueue(ros, "/a")
        clock.watch(TestModem(ros, "/a", channel).node)
        mac = make_mac(ros, clock)
        cst = ros.helper.create_publisher(CST, "/a/cst", 10)
        ros.helper.create_subscription(TdmaStatus, "/a/tdma_status", statuses.append, 10)
        clock.start()
        ros.configure_and_activate(mac)
        clock.run_until(START + 10.0, dt=0.5)
        unknown = list(channel)
        assert unknown and {tx.packet.dataframe_rate for tx in unknown} == {1}  # fallback
        assert not any(r.match_dest for r in queue.requests)

        assert step_until(clock, lambda: statuses)
        assert statuses[-1].rate_policy == "adaptive" and list(statuses[-1].rate_dests) == []
        for _ in range(3):  # published until the node has it (discovery)
            cst.publish(CST(src=7, dest=1, mode=0, snr_in=20.0))
            if ros.spin_until(lambda: mac.counters["link_reports"] > 0, 1.0):
                break
        assert mac.counters["link_reports"] > 0
        del channel[:]
        clock.run_until(clock.now + 10.0, dt=0.5)
        assert channel and {tx.packet.dataframe_rate for tx in channel} == {5}
        assert all(len(tx.packet.dataframe_bytes) == 2048 for tx in channel)
        assert queue.requests[-1].match_dest and queue.requests[-1].dest == 7
        statuses.clear()
        assert step_until(clock, lambda: statuses and list(statuses[-1].rate_dests) == [7])
        assert list(statuses[-1].rate_dest_rates) == [5] and statuses[-1].rate_fallback == 1
        assert abs(statuses[-1].rate_dest_snr_db[0] - 20.0) < 1e-3

        # vehicle 9 is heard as well, but the queue has nothing for it: any message, robust rate
        cst.publish(CST(src=9, dest=1, mode=0, snr_in=20.0))
        assert ros.spin_until(lambda: mac.counters["link_reports"] > 1, 5.0)
        del channel[:]
        clock.run_until(clock.now + 20.0, dt=0.5)
        assert mac.counters["rate_fallback_requests"] > 0
        assert {tx.packet.dataframe_rate for tx in channel} == {1, 5}

        client = param_client(ros, "/a/tdma_node")
        refused = set_parameters(ros, client, rate_policy="fastest")
        assert not refused[0].successful and "rate_policy" in refused[0].reason
        assert set_parameters(ros, client, rate_policy="fixed")[0].successful
        del channel[:]
        requests_before = len(queue.requests)
        clock.run_until(clock.now + 10.0, dt=0.5)
        assert channel and {tx.packet.dataframe_rate for tx in channel} == {5}  # dataframe_rate
        assert not any(r.match_dest for r in queue.requests[requests_before:])
        statuses.clear()
        assert step_until(clock, lambda: statuses and statuses[-1].rate_policy == "fixed")
        assert list(statuses[-1].rate_dests) == []
