"""Issue 26: in a deterministic run no wall-clock timeout decides anything. A MAC's
get_next_packet_data reply that comes late in wall time (here: answered from another thread
1 wall s later, with service_timeout_seconds 0.2), that rmw could not send at first (the
discovery race: the server's writer had not matched the MAC's reader yet), or whose request
never reached the queue (the race the other way round) holds simulated time until it is in,
so the MAC sends at its first slot, exactly as when the queue answers at once.

The run is driven like acomms_run's deterministic clock (SteppedRun): LocalClocks set the nodes'
clocks, the stepper drains each instant and time jumps to the next timer deadline."""

import threading
import warnings

import pytest
from rclpy.node import Node
from rclpy.parameter import Parameter

from acomms_core.nodes.tdma_node import TdmaNode
from acomms_core.ros.deferred_service import DeferredService
from acomms_core.ros.ros_support import NodeResources
from acomms_core.ros.service_calls import AWAITED, LOST_REPLY_WARNING
from acomms_core.ros.testing import private_context, tear_down
from acomms_interfaces.srv import GetNextPacketData, QueueTxPacket
from acomms_sim.clock.events_stepper import (
    EventsStepper,
    events_executor_available,
    make_executor,
)
from acomms_sim.clock.executor_stepper import ExecutorStepper, unready_local_clients
from acomms_sim.clock.local_clocks import LocalClocks
from acomms_sim.clock.stepping import NS_PER_S, next_step_ns

START_NS = 1_735_689_600 * NS_PER_S  # clock.start_time's default, 2025-01-01T00:00:00Z
SLOT_S, NUM_SLOTS = 10.0, 2  # slot 0 starts at START (cycle_start_time 0: epoch-aligned)
RUN_S = 12.0  # the first slot and a bit of the second
SIM_TIME = [Parameter("use_sim_time", value=True)]
EXECUTORS = ["single"] + (["events"] if events_executor_available() else [])


class Queue:
    """get_next_packet_data in /v: 100 bytes per request. `delays_s[i]`: the i-th reply is sent
    that many wall seconds later from another thread (0 or missing: at once); the first
    `unmatched` send attempts fail as rmw's do while the client's reader is not matched; the
    first `dropped` requests vanish on the way (as when the server's reader had not matched the
    client's writer)."""

    def __init__(self, context, delays_s=(), unmatched: int = 0, dropped: int = 0):
        self.node = Node("test_queue", namespace="/v", context=context)
        self.delays_s, self.requests = list(delays_s), 0
        self.deferred = DeferredService(NodeResources(self.node), GetNextPacketData,
                                        "get_next_packet_data", self._on_request)
        self.replies = self.deferred.service.acomms_replies  # NodeResources made it reliable
        send, attempts = self.replies.send_once, [0]

        def racing_send(response, header):
            attempts[0] += 1
            if attempts[0] <= unmatched:
                warnings.warn(f"{LOST_REPLY_WARNING}: client will not receive response",
                              RuntimeWarning, stacklevel=1)
                return
            send(response, header)

        self.replies.send_once = racing_send
        service, drops = self.deferred.service, [dropped]
        handle = service.callback  # counts the requests the server took (HANDLED)

        def lossy_delivery(request, response):
            if drops[0] > 0:  # this request never reaches the server: no answer, not taken
                drops[0] -= 1
                return self.deferred.defer(response)
            return handle(request, response)

        service.callback = lossy_delivery

    def _on_request(self, request, response):
        delay = self.delays_s[self.requests] if self.requests < len(self.delays_s) else 0.0
        self.requests += 1
        response.dataframe_bytes = bytes(100)
        response.num_dataframe_bytes, response.num_messages = 100, 1
        response.queued_message_ids = [self.requests]
        if not delay:
            return response
        threading.Timer(delay, self.deferred.complete, (response,)).start()
        return self.deferred.defer(response)


class Modem:
    """queue_tx_packet in /v: records the node-clock (simulated) time of every packet."""

    def __init__(self, context):
        self.node = Node("test_modem", namespace="/v", context=context,
                         parameter_overrides=SIM_TIME)
        self.starts_ns = []
        self.node.create_service(QueueTxPacket, "queue_tx_packet", self._on_tx)

    def _on_tx(self, request, response):
        self.starts_ns.append(self.node.get_clock().now().nanoseconds)
        response.success = True
        return response


def make_mac(context) -> TdmaNode:
    values = dict(num_slots=NUM_SLOTS, slot_duration_seconds=SLOT_S, active_slots=0,
                  cycle_start_time="0", guard_time_seconds=0.5, packet_length_seconds=2.0,
                  tick_period_seconds=0.5, status_period_seconds=1.0,
                  service_timeout_seconds=0.2)
    return TdmaNode(namespace="/v", context=context, parameter_overrides=SIM_TIME + [
        Parameter(k, value=v) for k, v in values.items()])


def stepped_run(kind: str, **queue_options) -> tuple[list[float], dict, Queue]:
    """Run the MAC, queue and modem for RUN_S simulated seconds; the packets' start times
    (seconds after START), the MAC's counters and the queue."""
    context = private_context()
    executor = make_executor(context, kind)
    queue, modem, mac = Queue(context, **queue_options), Modem(context), make_mac(context)
    nodes = [mac, modem.node, queue.node]
    stepper = None
    try:
        for node in nodes:
            executor.add_node(node)
        stepper = (EventsStepper(executor, context, step_timeout_s=20.0) if kind == "events"
                   else ExecutorStepper(executor, step_timeout_s=20.0))
        clocks = LocalClocks(nodes)
        clocks.adopt()
        clocks.set_ns(START_NS)
        stepper.driven = clocks.clock_ids()
        mac.trigger_configure()
        mac.trigger_activate()
        for _ in range(2000):  # as SteppedRun: the MAC sees its servers before time moves
            stepper.drain(0.0, now_ns=START_NS)
            if not unready_local_clients(nodes):
                break
        assert not unready_local_clients(nodes)
        now, end = START_NS, START_NS + int(RUN_S * NS_PER_S)
        with AWAITED.stepping():
            while True:
                stepper.drain((now - START_NS) / NS_PER_S, now_ns=now)
                if now >= end:
                    break
                now = next_step_ns(now, stepper.next_deadline_ns(), end)
                clocks.set_ns(now)
        clocks.release()
        return ([(t - START_NS) / NS_PER_S for t in modem.starts_ns], dict(mac.counters), queue)
    finally:
        if stepper is not None:
            stepper.close()
        tear_down(context, executor, nodes)


@pytest.mark.parametrize("kind", EXECUTORS)
def test_a_reply_late_in_wall_time_holds_simulated_time_and_the_mac_sends_at_its_first_slot(
        kind):
    reference, _, _ = stepped_run(kind)
    assert reference and reference[0] < SLOT_S  # the undisturbed MAC sends in slot 0
    starts, counters, queue = stepped_run(kind, delays_s=[1.0])
    assert starts == reference
    assert queue.requests == len(starts)  # every answer went on the air, none was dropped
    for key in ("service_timeouts", "late_responses", "held_packets"):
        assert counters.get(key, 0) == 0, (key, counters)
    assert counters["packets_sent"] == len(reference)


@pytest.mark.parametrize("kind", EXECUTORS)
def test_a_reply_lost_to_the_discovery_race_is_sent_again_and_the_mac_sends_at_its_first_slot(
        kind):
    reference, _, _ = stepped_run(kind)
    starts, counters, queue = stepped_run(kind, unmatched=3)
    assert starts == reference and reference[0] < SLOT_S
    assert (queue.replies.resent, queue.replies.lost) == (1, 0)
    assert counters.get("service_timeouts", 0) == 0


@pytest.mark.parametrize("kind", EXECUTORS)
def test_a_request_lost_on_the_way_is_sent_again_and_the_mac_sends_at_its_first_slot(kind):
    reference, _, _ = stepped_run(kind)
    resent = AWAITED.resent
    starts, counters, queue = stepped_run(kind, dropped=1)
    assert starts == reference and reference[0] < SLOT_S
    assert AWAITED.resent == resent + 1
    assert queue.requests == len(starts)  # the lost request was not taken: nothing lost
    assert counters.get("service_timeouts", 0) == 0
