"""Simulation speed: 10 simulated modems exchanging packets, real-time factor per TL model.

Runs in one process: 10 ModemSimNode (spread on a 1 km-radius circle, 30 m deep) + a
SimClockNode in lockstep mode, stepped as fast as it will go by Ticks (0.5 s sim per step, each
answered by a Tock) from this script, with all nodes spun by one executor in a background thread.
A round-robin TDMA driver (use_sim_time timer) makes modem k transmit a 72 + 192 byte rate-1 FDP
packet in slot k of a 7 s slot cycle, so every modem hears 9 others. Real-time factor =
simulated seconds / wall seconds. Receptions are counted so a run that "went fast" by dropping
work would show.

    source env.sh && python bench/sim_speed.py                      # spreading 1 h, Bellhop 10 min
    python bench/sim_speed.py --spreading-hours 1 --bellhop-minutes 10
"""

from __future__ import annotations

import argparse
import math
import os
import threading
import time

import rclpy
from builtin_interfaces.msg import Duration
from rclpy.context import Context
from rclpy.executors import SingleThreadedExecutor
from rclpy.parameter import Parameter
from rclpy.qos import QoSDurabilityPolicy, QoSProfile

from acomms_interfaces.msg import Packet, ReceivedPacket, Tick, Tock
from acomms_interfaces.srv import QueueTxPacket
from acomms_sim.nodes.modem_sim_node import ModemSimNode
from acomms_sim.nodes.sim_clock_node import SimClockNode
from acomms_sim.physics.geodesy import offset_position

MODEMS = 10
STEP_S = 0.5
SLOT_S = 7.0
ORIGIN = (41.5, -70.7)


def run(model: str, sim_seconds: float) -> dict:
    context = Context()
    rclpy.init(context=context, domain_id=int(os.environ.get("ROS_DOMAIN_ID", "0")))
    executor = SingleThreadedExecutor(context=context)
    nodes = []
    received = [0]
    extra = ({"transmission_loss_model": "bellhop", "water_depth_m": 200.0}
             if model == "bellhop" else {"transmission_loss_model": "spreading"})
    for k in range(MODEMS):
        angle = 2 * math.pi * k / MODEMS
        lat, lon = offset_position(*ORIGIN, 1000 * math.cos(angle), 1000 * math.sin(angle))
        params = {"SRC": k + 1, "latitude": lat, "longitude": lon, "depth": 30.0,
                  "event_period_s": STEP_S, "ambient_noise_model": "wenz", "seed": 1, **extra}
        node = ModemSimNode(context=context, namespace=f"m{k + 1}", parameter_overrides=[
            Parameter("use_sim_time", value=True)] + [Parameter(n, value=v)
                                                      for n, v in params.items()])
        nodes.append(node)
    clock = SimClockNode(context=context, parameter_overrides=[
        Parameter("mode", value="lockstep")])
    driver = rclpy.create_node("bench_driver", context=context,
                               parameter_overrides=[Parameter("use_sim_time", value=True)])
    clients = [driver.create_client(QueueTxPacket, f"/m{k + 1}/queue_tx_packet")
               for k in range(MODEMS)]
    for k in range(MODEMS):
        driver.create_subscription(ReceivedPacket, f"/m{k + 1}/packet_rx",
                                   lambda _msg: received.__setitem__(0, received[0] + 1), 100)
    tocks = []
    tock_event = threading.Event()

    def on_tock(msg):
        tocks.append(msg.step_id)
        tock_event.set()

    latched = QoSProfile(depth=10, durability=QoSDurabilityPolicy.TRANSIENT_LOCAL)
    driver.create_subscription(Tock, "/tock", on_tock, latched)
    tick_pub = driver.create_publisher(Tick, "/tick", 10)

    def on_slot():
        now = driver.get_clock().now().nanoseconds * 1e-9
        k = int(round(now / SLOT_S)) % MODEMS
        packet = Packet(dest=(k + 1) % MODEMS + 1, packet_type=Packet.PACKET_TYPE_FDP,
                        miniframe_rate=1, dataframe_rate=1, miniframe_bytes=bytes(72),
                        dataframe_bytes=bytes(192))
        clients[k].call_async(QueueTxPacket.Request(queue=1, packet=packet))

    for node in (*nodes, clock, driver):
        executor.add_node(node)
    for node in (*nodes, clock):
        node.trigger_configure()
        node.trigger_activate()
    driver.create_timer(SLOT_S, on_slot)
    spinner = threading.Thread(target=executor.spin, daemon=True)
    spinner.start()
    while tick_pub.get_subscription_count() == 0 or not all(c.service_is_ready()
                                                            for c in clients):
        time.sleep(0.05)
    steps = int(sim_seconds / STEP_S)
    nanos = int(STEP_S * 1e9)
    wall_start = time.perf_counter()
    for step in range(1, steps + 1):
        tock_event.clear()
        tick_pub.publish(Tick(step_id=step, duration=Duration(sec=nanos // 10**9,
                                                              nanosec=nanos % 10**9)))
        if not tock_event.wait(timeout=10.0):
            raise RuntimeError(f"no tock for step {step}")
        target = step * nanos
        deadline = time.monotonic() + 10.0
        while (any(n.get_clock().now().nanoseconds < target for n in nodes)
               and time.monotonic() < deadline):
            time.sleep(0.0002)
    wall = time.perf_counter() - wall_start
    time.sleep(0.5)
    counters = {}
    for node in nodes:
        for key, value in node.counters.items():
            counters[key] = counters.get(key, 0) + value
    bellhop_runs = sum(getattr(n.channel.propagation.model, "runs", 0) for n in nodes)
    executor.shutdown(timeout_sec=2.0)
    spinner.join(timeout=5.0)
    for node in (*nodes, clock, driver):
        node.destroy_node()
    rclpy.shutdown(context=context)
    return {"model": model, "sim_s": steps * STEP_S, "wall_s": wall,
            "rtf": steps * STEP_S / wall,
            "transmitted": counters.get("transmitted", 0),
            "rx_evaluated": sum(v for k, v in counters.items()
                                if k in ("rx_received", "rx_half_duplex", "rx_undetected")),
            "packet_rx": received[0], "bellhop_runs": bellhop_runs}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spreading-hours", type=float, default=1.0)
    parser.add_argument("--bellhop-minutes", type=float, default=10.0)
    args = parser.parse_args()
    results = [run("spreading", args.spreading_hours * 3600.0)]
    if args.bellhop_minutes > 0:
        results.append(run("bellhop", args.bellhop_minutes * 60.0))
    print(f"\n{MODEMS} modems, {STEP_S} s lockstep ticks, rate-1 FDP packets every {SLOT_S} s")
    header = (f"{'model':10} {'sim s':>8} {'wall s':>8} {'RTF':>7} {'1 h wall s':>10} "
              f"{'tx':>5} {'rx eval':>7} {'packet_rx':>9} {'bellhop runs':>12}")
    print(header)
    print("-" * len(header))
    for r in results:
        print(f"{r['model']:10} {r['sim_s']:8.0f} {r['wall_s']:8.1f} {r['rtf']:7.1f} "
              f"{3600 / r['rtf']:10.1f} {r['transmitted']:5d} {r['rx_evaluated']:7d} "
              f"{r['packet_rx']:9d} {r['bellhop_runs']:12d}")
    print("'1 h wall s' is the wall time one simulated hour takes at that rate (Bellhop: scaled "
          "from the shorter run).")


if __name__ == "__main__":
    main()
