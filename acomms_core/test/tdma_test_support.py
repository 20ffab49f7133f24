"""Test-only nodes and a sim-time stepper for the TDMA MAC tests (not part of the package).

- TestQueue serves `get_next_packet_data` in a vehicle namespace: while it has packets left it
  answers with exactly the requested number of bytes and records each request.
- TestModem serves `queue_tx_packet` (and `ping_modem`, `ping_transponders`) and records every
  transmission with its node-clock start time into a log shared by all vehicles: the channel.
- SimClock publishes /clock and steps it; after each step it spins until every sim-time node has
  seen the new time, every MAC has made its decision for it and no service call is in flight, so a
  run is deterministic however slow the machine is.
"""

from __future__ import annotations

import dataclasses
import time

import rclpy
from builtin_interfaces.msg import Time
from rclpy.parameter import Parameter
from rosgraph_msgs.msg import Clock

from acomms_interfaces.srv import GetNextPacketData, PingModem, PingTransponders, QueueTxPacket

SIM_TIME = [Parameter("use_sim_time", value=True)]


@dataclasses.dataclass
class Transmission:
    namespace: str
    start: float
    packet: object


class TestModem:
    __test__ = False

    def __init__(self, ros, namespace: str, channel: list):
        self.namespace = namespace
        self.channel = channel
        self.pings: list = []
        self.transponder_pings: list = []
        self.accept = True
        self.node = ros.add(rclpy.create_node(
            "test_modem", namespace=namespace, context=ros.context, parameter_overrides=SIM_TIME))
        self.node.create_service(QueueTxPacket, "queue_tx_packet", self._on_tx)
        self.node.create_service(PingModem, "ping_modem", self._on_ping)
        self.node.create_service(PingTransponders, "ping_transponders", self._on_transponders)

    def now(self) -> float:
        return self.node.get_clock().now().nanoseconds / 1e9

    def _on_tx(self, request, response):
        self.channel.append(Transmission(self.namespace, self.now(), request.packet))
        response.success = self.accept
        response.position_in_queue = 0
        return response

    def _on_ping(self, request, response):
        self.pings.append((self.now(), request))
        response.timed_out = False
        response.one_way_travel_time = 0.5
        return response

    def _on_transponders(self, request, response):
        self.transponder_pings.append((self.now(), request))
        response.travel_times = [0.1, 0.2, -1.0, -1.0]
        return response


class TestQueue:
    __test__ = False

    def __init__(self, ros, namespace: str, packets: int | None = None):
        self.packets_left = packets  # None: never runs out
        self.requests: list = []
        self.node = ros.add(rclpy.create_node(
            "test_queue", namespace=namespace, context=ros.context))
        self.node.create_service(GetNextPacketData, "get_next_packet_data", self._on_request)

    def _on_request(self, request, response):
        self.requests.append(request)
        if self.packets_left is not None:
            if self.packets_left <= 0:
                return response
            self.packets_left -= 1
        response.dest = 7
        response.miniframe_bytes = bytes([0xAC] * request.num_miniframe_bytes)
        response.dataframe_bytes = bytes([0x5A] * request.num_dataframe_bytes)
        response.num_miniframe_bytes = request.num_miniframe_bytes
        response.num_dataframe_bytes = request.num_dataframe_bytes
        response.queued_message_ids = [len(self.requests)]
        response.num_messages = 1
        return response


class SimClock:
    """Owns /clock; step() advances it and waits until the MACs are done with that instant."""

    def __init__(self, ros, start: float):
        self.ros = ros
        self.now = start
        self.publisher = ros.helper.create_publisher(Clock, "/clock", 10)
        self.sim_nodes: list = []
        self.macs: list = []

    def watch(self, node, mac: bool = False):
        self.sim_nodes.append(node)
        if mac:
            self.macs.append(node)
        return node

    def _publish(self) -> None:
        nanoseconds = round(self.now * 1e9)
        self.publisher.publish(Clock(clock=Time(sec=nanoseconds // 10**9,
                                                nanosec=nanoseconds % 10**9)))

    def _settled(self, nanoseconds: int) -> bool:
        if any(n.get_clock().now().nanoseconds < nanoseconds for n in self.sim_nodes):
            return False
        for mac in self.macs:
            if not mac.idle or mac.last_tick_time is None:
                return False
            if round(mac.last_tick_time * 1e9) != nanoseconds:
                return False
        return True

    def _spin_until(self, predicate, timeout: float) -> bool:
        # Short executor waits: with the harness' 50 ms wait per spin_once, idle waits between
        # the callbacks of one step (clock, timer, two service calls) would dominate the run.
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if predicate():
                return True
            self.ros.executor.spin_once(timeout_sec=0.002)
        return predicate()

    def set(self, t: float, timeout: float = 5.0) -> None:
        self.now = t
        target = round(t * 1e9)
        # Re-publish while waiting: a subscription may still be matching at the start of a test.
        for _attempt in range(int(timeout / 0.25) + 1):
            self._publish()
            if self._spin_until(lambda: self._settled(target), timeout=0.25):
                return
        behind = [n.get_fully_qualified_name() for n in self.sim_nodes
                  if n.get_clock().now().nanoseconds < target]
        macs = [(m.get_fully_qualified_name(), m.idle, m.last_tick_time) for m in self.macs]
        raise AssertionError(f"sim time {t:.3f} not settled after {timeout} s: clocks behind "
                             f"{behind}; MACs (idle, last tick) {macs}")

    def jump(self, t: float, timeout: float = 5.0) -> None:
        """Set the clock without waiting for a MAC tick (timers restart one period after a
        backward jump)."""
        self.now = t
        target = round(t * 1e9)
        for _attempt in range(int(timeout / 0.25) + 1):
            self._publish()
            if self._spin_until(lambda: all(n.get_clock().now().nanoseconds == target
                                            for n in self.sim_nodes), timeout=0.25):
                return
        raise AssertionError(f"sim time {t:.3f} not received after {timeout} s")

    def step(self, dt: float) -> None:
        self.set(self.now + dt)

    def run_until(self, t: float, dt: float) -> None:
        while self.now + dt <= t + 1e-9:
            self.step(dt)

    def start(self) -> None:
        """Publish the start time until every sim-time node has it (before activating MACs)."""
        target = round(self.now * 1e9)
        for _attempt in range(40):
            self._publish()
            if self.ros.spin_until(
                    lambda: all(n.get_clock().now().nanoseconds >= target
                                for n in self.sim_nodes), timeout=0.25):
                return
        raise AssertionError("sim-time nodes never received /clock")


def param_client(ros, node_name: str):
    from rclpy.parameter_client import AsyncParameterClient
    client = AsyncParameterClient(ros.helper, node_name)
    assert client.wait_for_services(timeout_sec=5.0)
    return client


def set_parameters(ros, client, **values):
    """What `ros2 param set` does: the remote set_parameters service. Returns the results."""
    future = client.set_parameters([Parameter(k, value=v) for k, v in values.items()])
    assert ros.spin_until(future.done, timeout=5.0)
    return future.result().results


def get_parameters(ros, client, *names):
    from rclpy.parameter import parameter_value_to_python
    future = client.get_parameters(list(names))
    assert ros.spin_until(future.done, timeout=5.0)
    return [parameter_value_to_python(v) for v in future.result().values]
