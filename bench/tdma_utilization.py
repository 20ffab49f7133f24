"""Channel utilization of the TDMA MAC with saturated queues (sim time, in-process ROS).

Three vehicles share 6 slots (two active slots each). Every vehicle runs a tdma_node, a message
queue kept saturated, and a recording modem (a `queue_tx_packet` server). Sim time is stepped
deterministically; after a warm-up cycle the bench counts, per TDMA cycle:

- opportunities: packet starts the schedule allows (active slots x packets that fit a slot with
  the guard time), and packets actually sent;
- capacity: opportunities x the packet byte budget (miniframe + dataframe bytes at the rates);
- delivered: payload bytes the queue put into the sent packets (the packet codec's one-byte
  miniframe header is overhead, not payload; the last byte of a frame part may be partly padding);
- fill: payload bits / available bits of the sent packets (target >= 95 %);
- left: fewest messages still queued on any vehicle at the end (> 0: the queues stayed
  saturated).

Queue: `--queue real` (the default when installed) runs acomms_core.nodes.message_queue_node's
MessageQueueNode per vehicle, fed on its subscribe topics with position reports (~330 bits) and
depths (~22 bits) before the run, enough for every opportunity plus margin; `--queue synthetic`
uses a stand-in that packs whole 100-bit messages the way the ros packet codec does.
Packet lengths are the rate table's full-packet times rounded up to the 0.5 s decision period.
Takes about 2 minutes with the real queue (mostly feeding the queues).

    python bench/tdma_utilization.py [--cycles 3] [--queue auto|real|synthetic]
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import importlib.util
import math
import os
import sys
import tempfile
import time

os.environ.setdefault("ARMW_MIDDLEWARE", "native")

import rclpy  # noqa: E402
from builtin_interfaces.msg import Time  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from rosgraph_msgs.msg import Clock  # noqa: E402

from acomms_core.mac.tdma_schedule import frame_settings  # noqa: E402
from acomms_core.nodes.tdma_node import TdmaNode  # noqa: E402
from acomms_core.ros.testing import RosHarness  # noqa: E402
from acomms_interfaces.srv import GetNextPacketData, QueueTxPacket  # noqa: E402

NUM_SLOTS = 6
ACTIVE = {"/auv1": "0,3", "/auv2": "1,4", "/auv3": "2,5"}
TICK = 0.5  # MAC decision period and sim-time step, s
SIM_START = 1008.0
HEADER_BYTES = 1  # miniframe_header [0xac] of the codec config below

# Codec config for the real queue: a ~330-bit position report (NavSatFix with a 32-character
# frame_id) and a 14-bit depth (Float32), same priority, FIFO. The packet filler takes the oldest
# first (the reports), then tops the packet up with depths when no report fits any more.
CODEC_CONFIG = """
- codec_name: default
  match_src: []
  match_dest: []
  except_src: []
  except_dest: []
  packet_codec: ros
  miniframe_header: [0xac]
  dataframe_header: []
  remove_headers: true
  message_codecs:
    - id: 101
      message_codec: default
      subscribe_topic: "to_acomms/fix"
      publish_topic: "from_acomms/fix"
      ros_type: "sensor_msgs/NavSatFix"
      default_dest: 121
      queue_order: fifo
      queue_maxsize: 20000
      priority: 10
      fields:
        header:
          codec: msg
          fields:
            frame_id: {codec: string, max_length: 32}
        latitude: {codec: float, min_value: -90.0, max_value: 90.0, precision: 6}
        longitude: {codec: float, min_value: -180.0, max_value: 180.0, precision: 6}
        altitude: {codec: float, min_value: -100.0, max_value: 100.0, precision: 1}
    - id: 102
      message_codec: default
      subscribe_topic: "to_acomms/depth"
      publish_topic: "from_acomms/depth"
      ros_type: "std_msgs/Float32"
      default_dest: 121
      queue_order: fifo
      queue_maxsize: 20000
      priority: 10
      fields:
        data: {codec: linspace, min_value: 0.0, max_value: 1000.0, resolution: 0.1}
"""
REPORT_BITS_AT_LEAST = 250  # encoded position report, bits (an underestimate, to feed enough)
TOP_UPS_PER_PACKET = 25     # depths (~22 bits each) that can fill what reports leave


@dataclasses.dataclass(frozen=True)
class Scenario:
    name: str
    miniframe_rate: int
    dataframe_rate: int
    slot_duration_seconds: float
    guard_time_seconds: float


SCENARIOS = (
    Scenario("rate 1/1, 12 s slots", 1, 1, 12.0, 1.0),
    Scenario("rate 1/3, 12 s slots", 1, 3, 12.0, 1.0),
    Scenario("rate 1/5, 12 s slots", 1, 5, 12.0, 1.0),
    Scenario("rate 3/5, 30 s slots", 3, 5, 30.0, 2.0),
)


class SyntheticQueue:
    """Stand-in queue: an endless stream of fixed-size messages packed whole into the budget."""

    HEADER_BITS = 8 * HEADER_BYTES

    def __init__(self, ros, namespace: str, message_bits: int):
        self.message_bits = message_bits + 8  # + codec id
        self.node = ros.add(rclpy.create_node("bench_queue", namespace=namespace,
                                              context=ros.context))
        self.node.create_service(GetNextPacketData, "get_next_packet_data", self._serve)

    def _serve(self, request, response):
        available = (request.num_miniframe_bytes + request.num_dataframe_bytes) * 8
        messages = max(0, (available - self.HEADER_BITS) // self.message_bits)
        bits = self.HEADER_BITS + messages * self.message_bits
        mini_bits = min(bits, request.num_miniframe_bytes * 8)
        data_bits = bits - mini_bits
        response.dest = 121
        response.miniframe_bytes = bytes(math.ceil(mini_bits / 8))
        response.dataframe_bytes = bytes(math.ceil(data_bits / 8))
        response.num_miniframe_bytes = len(response.miniframe_bytes)
        response.num_dataframe_bytes = len(response.dataframe_bytes)
        response.num_messages = messages
        return response


class RealQueue:
    """The project's message_queue_node, kept saturated through its subscribe topics."""

    def __init__(self, ros, namespace: str, config_path: str):
        from sensor_msgs.msg import NavSatFix
        from std_msgs.msg import Float32

        from acomms_core.nodes.message_queue_node import MessageQueueNode
        from acomms_interfaces.msg import QueueStatus
        self.node = ros.add(MessageQueueNode(
            namespace=namespace, context=ros.context,
            parameter_overrides=[Parameter("codec_config_file", value=config_path),
                                 Parameter("update_rate", value=20.0)]))
        ros.configure_and_activate(self.node)
        self.reports = ros.helper.create_publisher(NavSatFix, f"{namespace}/to_acomms/fix", 1000)
        self.depths = ros.helper.create_publisher(Float32, f"{namespace}/to_acomms/depth", 1000)
        frame_id = "x" * 32  # the codec's max_length: every report has the same size

        def make_report(index):
            report = NavSatFix(latitude=41.5 + index * 1e-6, longitude=-70.6, altitude=-5.0)
            report.header.frame_id = frame_id
            return report

        self.make_report = make_report
        self.make_depth = lambda index: Float32(data=float(index % 1000))
        self.queued = 0
        self.expected = 0
        ros.helper.create_subscription(QueueStatus, f"{namespace}/queue_status",
                                       self._on_status, 10)

    def _on_status(self, status) -> None:
        self.queued = status.total_message_count

    def _publish(self, ros, publisher, make, count: int) -> None:
        # In chunks, each confirmed by queue_status: a DDS writer keeps only so many samples.
        for first in range(0, count, 500):
            chunk = range(first, min(count, first + 500))
            for index in chunk:
                publisher.publish(make(index))
            self.expected += len(chunk)
            if not ros.spin_until(lambda: self.queued >= self.expected, timeout=60.0):
                raise RuntimeError(f"queue holds {self.queued} of {self.expected} messages")

    def feed(self, ros, budget_bytes: int, packets: int) -> None:
        """Enough reports and top-up depths for `packets` full packets (saturated queue)."""
        reports = packets * (budget_bytes * 8 // REPORT_BITS_AT_LEAST + 1)
        self._publish(ros, self.reports, self.make_report, reports)
        self._publish(ros, self.depths, self.make_depth, packets * TOP_UPS_PER_PACKET)


class RecordingModem:
    def __init__(self, ros, namespace: str):
        self.sent = []  # (sim time, payload bytes)
        self.node = ros.add(rclpy.create_node(
            "bench_modem", namespace=namespace, context=ros.context,
            parameter_overrides=[Parameter("use_sim_time", value=True)]))
        self.node.create_service(QueueTxPacket, "queue_tx_packet", self._serve)

    def _serve(self, request, response):
        now = self.node.get_clock().now().nanoseconds / 1e9
        packet = request.packet
        filled = len(packet.miniframe_bytes) + len(packet.dataframe_bytes)
        self.sent.append((now, max(0, filled - HEADER_BYTES)))
        response.success = True
        return response


def opportunities_per_slot(slot: float, packet: float, guard: float) -> int:
    """Packet starts per slot when each start is a multiple of TICK after the slot start."""
    spacing = math.ceil((packet + guard) / TICK - 1e-9) * TICK
    return 1 + int((slot - (packet + guard)) // spacing)


def run(scenario: Scenario, cycles: int, queue_kind: str, config_path: str | None) -> dict:
    frames = frame_settings(scenario.miniframe_rate, scenario.dataframe_rate)
    packet = math.ceil(frames.packet_duration_s / TICK) * TICK
    cycle = NUM_SLOTS * scenario.slot_duration_seconds
    per_slot = opportunities_per_slot(scenario.slot_duration_seconds, packet,
                                      scenario.guard_time_seconds)
    opportunities = per_slot * 2 * len(ACTIVE)  # per cycle, all vehicles
    with RosHarness() as ros:
        clock_pub = ros.helper.create_publisher(Clock, "/clock", 10)
        macs, modems, queues = [], [], []
        start = math.ceil(SIM_START / cycle) * cycle - TICK  # first tick lands on slot 0
        for namespace, active in ACTIVE.items():
            if queue_kind == "real":
                queue = RealQueue(ros, namespace, config_path)
            else:
                queue = SyntheticQueue(ros, namespace, message_bits=92)
            queues.append(queue)
            modems.append(RecordingModem(ros, namespace))
            macs.append(ros.add(TdmaNode(
                namespace=namespace, context=ros.context, parameter_overrides=[
                    Parameter("use_sim_time", value=True),
                    Parameter("cycle_start_time", value="0"),
                    Parameter("num_slots", value=NUM_SLOTS),
                    Parameter("slot_duration_seconds", value=scenario.slot_duration_seconds),
                    Parameter("active_slots", value=active),
                    Parameter("guard_time_seconds", value=scenario.guard_time_seconds),
                    Parameter("packet_length_seconds", value=packet),
                    Parameter("miniframe_rate", value=scenario.miniframe_rate),
                    Parameter("dataframe_rate", value=scenario.dataframe_rate),
                    Parameter("tick_period_seconds", value=TICK)])))
        sim_nodes = macs + [m.node for m in modems]

        def publish(t):
            ns = round(t * 1e9)
            clock_pub.publish(Clock(clock=Time(sec=ns // 10**9, nanosec=ns % 10**9)))

        def wait(predicate, timeout=10.0):
            end = time.monotonic() + timeout
            while time.monotonic() < end:
                if predicate():
                    return True
                ros.executor.spin_once(timeout_sec=0.002)
            return predicate()

        def clocks_at(target):
            return all(n.get_clock().now().nanoseconds >= target for n in sim_nodes)

        def settled(target):  # every MAC decided for this instant and nothing is in flight
            return clocks_at(target) and all(
                m.idle and m.last_tick_time is not None
                and round(m.last_tick_time * 1e9) == target for m in macs)

        t = start
        for _ in range(40):
            publish(t)
            if wait(lambda: clocks_at(round(start * 1e9)), 0.25):
                break
        for mac in macs:
            ros.configure_and_activate(mac)
        if queue_kind == "real":
            packets = int(per_slot * 2 * (cycles + 1) * 1.2) + 1
            for queue in queues:
                queue.feed(ros, frames.budget_bytes, packets)
        end_time = start + TICK + (cycles + 1) * cycle  # one warm-up cycle
        wall_start = time.monotonic()
        while t + TICK <= end_time - TICK / 2:
            t += TICK
            target = round(t * 1e9)
            for _ in range(20):
                publish(t)
                if wait(functools.partial(settled, target), 0.25):
                    break
            else:
                raise RuntimeError(f"sim time {t} did not settle")
        wall = time.monotonic() - wall_start
        measured_from = start + TICK + cycle
        sent = [(ts, size) for modem in modems for ts, size in modem.sent if ts >= measured_from]
        if queue_kind == "real":
            ros.spin_for(0.2)  # a fresh queue_status
            left = min(queue.queued for queue in queues)
        else:
            left = None  # the synthetic queue never runs out
    packets = len(sent)
    payload = sum(size for _, size in sent)
    return dict(
        scenario=scenario.name, budget=frames.budget_bytes, packet_s=packet, per_slot=per_slot,
        opportunities=opportunities, packets_per_cycle=packets / cycles,
        capacity=opportunities * frames.budget_bytes, delivered=payload / cycles,
        fill=payload / (packets * frames.budget_bytes) if packets else 0.0,
        utilization=packets / (opportunities * cycles), left=left, wall=wall)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cycles", type=int, default=3, help="measured cycles per scenario")
    parser.add_argument("--queue", choices=("auto", "real", "synthetic"), default="auto")
    args = parser.parse_args(argv)
    real_available = importlib.util.find_spec("acomms_core.nodes.message_queue_node") is not None
    queue_kind = args.queue
    if queue_kind == "auto":
        queue_kind = "real" if real_available else "synthetic"
    if queue_kind == "real" and not real_available:
        print("acomms_core.nodes.message_queue_node is not installed; use --queue synthetic")
        return 2
    config_path = None
    if queue_kind == "real":
        handle = tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False)
        handle.write(CODEC_CONFIG)
        handle.close()
        config_path = handle.name
    print(f"TDMA channel utilization, saturated queues ({queue_kind} queue), 3 vehicles x 2 of "
          f"{NUM_SLOTS} slots, {args.cycles} measured cycles after one warm-up cycle")
    header = (f"{'scenario':<22} {'budget B':>8} {'pkt s':>5} {'pkt/slot':>8} "
              f"{'sent/opport.':>12} {'delivered B/cycle':>17} {'capacity B/cycle':>16} "
              f"{'fill %':>7} {'left':>5} {'wall s':>6}")
    print(header)
    print("-" * len(header))
    worst_fill = 1.0
    for scenario in SCENARIOS:
        row = run(scenario, args.cycles, queue_kind, config_path)
        worst_fill = min(worst_fill, row["fill"])
        print(f"{row['scenario']:<22} {row['budget']:>8} {row['packet_s']:>5.1f} "
              f"{row['per_slot']:>8} "
              f"{row['packets_per_cycle']:>5.1f}/{row['opportunities']:<6} "
              f"{row['delivered']:>17.0f} {row['capacity']:>16} {100 * row['fill']:>7.2f} "
              f"{'-' if row['left'] is None else row['left']:>5} {row['wall']:>6.1f}")
    print(f"worst fill ratio {100 * worst_fill:.2f} % (target >= 95 %): "
          f"{'PASS' if worst_fill >= 0.95 else 'FAIL'}")
    if config_path:
        os.unlink(config_path)
    return 0 if worst_fill >= 0.95 else 1


if __name__ == "__main__":
    sys.exit(main())
