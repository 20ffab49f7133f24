"""get_next_packet_data latency with 50 topics x 100 queued messages.

A MessageQueueNode (the real node, on its main's executor) runs in its own process
with 50 queues (mixed priorities, fifo and lifo, std_msgs/Header with a tuned codec); a publisher
fills each with 100 messages; then a client process (the MAC's role) calls
get_next_packet_data repeatedly and times each call end to end (request -> response through DDS).
Two budgets: a 32-byte miniframe (a few messages per packet, the queues stay nearly full) and a
rate-1 FDP packet (72-byte miniframe + 192-byte dataframe). The in-process time of the packet
filler alone (MessageQueues.next_packet) is reported too. Target: p99 < 20 ms. Run:

    source env.sh && python bench/get_next_packet_latency.py
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time

TOPICS = 50
PER_TOPIC = 100


def _config_text() -> str:
    lines = ["- codec_name: latency", "  miniframe_header: [0xac]", "  message_codecs:"]
    for i in range(TOPICS):
        lines += [
            f"    - id: {i + 1}",
            "      ros_type: std_msgs/Header",
            f"      subscribe_topic: bench/topic_{i}",
            f"      queue_order: {'lifo' if i % 2 else 'fifo'}",
            f"      priority: {10 + i % 5}",
            f"      queue_maxsize: {PER_TOPIC}",
            "      fields:",
            "        stamp: {codec: time, precision: 1}",
            "        frame_id: {codec: string, max_length: 8, bits_per_char: 6}",
        ]
    return "\n".join(lines) + "\n"


def _percentile(values, fraction):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(fraction * (len(ordered) - 1))))]


def role_queue(config: str) -> None:
    import rclpy
    from rclpy.parameter import Parameter

    from acomms_core.nodes.message_queue_node import MessageQueueNode, make_executor

    rclpy.init()
    node = MessageQueueNode(parameter_overrides=[Parameter("codec_config_file", value=config)])
    node.trigger_configure()
    node.trigger_activate()
    executor = make_executor()
    executor.add_node(node)
    threading.Thread(target=executor.spin, daemon=True).start()
    # Report when full, then serve until the benchmark closes stdin.
    deadline = time.monotonic() + 120
    while node.queues.counts.messages_queued < TOPICS * PER_TOPIC and time.monotonic() < deadline:
        time.sleep(0.05)
    print(json.dumps({"queued": node.queues.counts.messages_queued}), flush=True)
    sys.stdin.read()
    print(json.dumps({"left": node.queues.status(0.0)["total_message_count"]}), flush=True)


def role_fill_and_call(calls: int) -> None:
    import rclpy
    from builtin_interfaces.msg import Time
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from std_msgs.msg import Header

    from acomms_interfaces.srv import GetNextPacketData

    rclpy.init()
    node = rclpy.create_node("bench_mac")
    qos = QoSProfile(depth=PER_TOPIC, reliability=ReliabilityPolicy.RELIABLE)
    publishers = [node.create_publisher(Header, f"bench/topic_{i}", qos) for i in range(TOPICS)]
    while any(p.get_subscription_count() < 1 for p in publishers):
        time.sleep(0.05)
    time.sleep(0.5)
    for n in range(PER_TOPIC):
        for publisher in publishers:
            publisher.publish(Header(stamp=Time(sec=1_763_700_000 + n), frame_id="auv1"))
    print(json.dumps({"published": TOPICS * PER_TOPIC}), flush=True)
    sys.stdin.readline()  # the queue node reported it is full
    client = node.create_client(GetNextPacketData, "get_next_packet_data")
    client.wait_for_service(timeout_sec=10.0)
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    results = {}
    for label, mini, data, count in (("32 B miniframe", 32, 0, calls),
                                     ("rate 1: 72 B + 192 B", 72, 192, calls // 4)):
        latencies, packed = [], []
        for _ in range(count):
            request = GetNextPacketData.Request(num_miniframe_bytes=mini,
                                                num_dataframe_bytes=data)
            start = time.perf_counter()
            future = client.call_async(request)
            executor.spin_until_future_complete(future, timeout_sec=5.0)
            latencies.append((time.perf_counter() - start) * 1000)
            packed.append(future.result().num_messages if future.done() else -1)
        results[label] = {"latencies_ms": latencies, "messages": packed}
    print(json.dumps(results), flush=True)


def in_process_filler(calls: int) -> dict:
    """MessageQueues.next_packet alone (no DDS), same config and fill."""
    from builtin_interfaces.msg import Time
    from std_msgs.msg import Header

    from acomms_core.codecs import load_codec_config
    from acomms_core.queue.message_queue import MessageQueues, PacketRequest

    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as config:
        config.write(_config_text())
    queues = MessageQueues(load_codec_config(config.name))
    os.unlink(config.name)
    for n in range(PER_TOPIC):
        for i in range(TOPICS):
            queues.add(f"bench/topic_{i}", Header(stamp=Time(sec=1_763_700_000 + n),
                                                  frame_id="auv1"), 0.0)
    latencies = []
    for _ in range(calls):
        start = time.perf_counter()
        queues.next_packet(PacketRequest(32, 0), 0.0)
        latencies.append((time.perf_counter() - start) * 1000)
    return {"latencies_ms": latencies, "left": queues.status(0.0)["total_message_count"]}


def _spawn(args):
    return subprocess.Popen([sys.executable, __file__, *args], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True, env=os.environ.copy())


def _row(label, latencies, messages=None):
    extra = f" {statistics.mean(messages):10.1f}" if messages else f" {'-':>10}"
    print(f"{label:34} {len(latencies):6d} {_percentile(latencies, 0.5):8.2f} "
          f"{_percentile(latencies, 0.99):8.2f} {max(latencies):8.2f}{extra}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--role", choices=["queue", "mac"])
    parser.add_argument("--config")
    parser.add_argument("--calls", type=int, default=400)
    args = parser.parse_args()
    if args.role == "queue":
        role_queue(args.config)
        return
    if args.role == "mac":
        role_fill_and_call(args.calls)
        return
    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as config:
        config.write(_config_text())
    queue = _spawn(["--role", "queue", "--config", config.name])
    time.sleep(1.0)
    mac = _spawn(["--role", "mac", "--calls", str(args.calls)])
    mac.stdout.readline()                       # published
    queued = json.loads(queue.stdout.readline())["queued"]
    mac.stdin.write("go\n")
    mac.stdin.flush()
    results = json.loads(mac.stdout.readline())
    mac.communicate(timeout=30)
    left = json.loads(queue.communicate(input="", timeout=30)[0].strip().splitlines()[-1])["left"]
    os.unlink(config.name)
    print(f"{TOPICS} topics x {PER_TOPIC} messages: {queued} queued before the calls, "
          f"{left} left after them")
    print(f"{'get_next_packet_data':34} {'calls':>6} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8} "
          f"{'msgs/call':>10}")
    for label, result in results.items():
        _row(f"service call, {label}", result["latencies_ms"], result["messages"])
    filler = in_process_filler(args.calls)
    _row("filler only (no DDS), 32 B", filler["latencies_ms"])
    print("\ntarget: p99 < 20 ms")


if __name__ == "__main__":
    main()
