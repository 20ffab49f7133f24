"""Queue ingest: messages/s message_queue_node absorbs from 20 topics vs a bare rclpy subscriber.

Three processes on one ROS domain: a publisher blasting N messages on each of 20 topics
(geometry_msgs/Point, reliable, history deep enough that DDS drops nothing), a
MessageQueueNode (the real node, on the executor its main uses) whose config has one queue
per topic, and a bare rclpy node subscribing the same topics (SingleThreadedExecutor, a counting
callback). Both receivers see the same stream in the same run; each reports how many messages it
took in and over what time. Target: queue rate >= 2/3 of bare rate, and every message queued
(N is below queue_maxsize, so none may be lost). Run:

    source env.sh && python bench/queue_ingest.py [--per-topic 300]

Overload (issue 12): `--overload [--rates 1000,10000] [--duration 10] [--executor single|multi]`
offers each rate (msg/s summed over OVERLOAD_TOPICS topics, paced every 10 ms) to the real
MessageQueueNode while a MAC-like client calls get_next_packet_data every 50 ms; reports the
taken-in share (messages_received / published), dropped_on_arrival (what the middleware reported
lost), the queue process's CPU seconds (and per message taken in: the load-independent cost),
and get_next_packet_data p50/p99 round trip. The machine's load average is printed: on a shared
machine the node gets a fraction of a core and the share and latency follow that.
Target at 1,000 msg/s on 2 cores: >= 95 % taken in, p99 < 50 ms.
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

TOPICS = 20
QUEUE_MAXSIZE = 1000
OVERLOAD_TOPICS = 10
MAC_PERIOD_S = 0.05


def _config_text(topics: int = TOPICS) -> str:
    lines = ["- codec_name: ingest", "  miniframe_header: [0xac]", "  message_codecs:"]
    for i in range(topics):
        lines += [
            f"    - id: {i + 1}",
            "      ros_type: geometry_msgs/Point",
            f"      subscribe_topic: bench/topic_{i}",
            f"      queue_maxsize: {QUEUE_MAXSIZE}",
            "      fields:",
        ] + [f"        {axis}: {{codec: float, min_value: -1000, max_value: 1000, precision: 2}}"
             for axis in "xyz"]
    return "\n".join(lines) + "\n"


def _qos():
    from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy

    return QoSProfile(depth=QUEUE_MAXSIZE, history=HistoryPolicy.KEEP_LAST,
                      reliability=ReliabilityPolicy.RELIABLE)


def _start_queue_node(config: str, executor_name: str):
    """(the real MessageQueueNode, active, spinning in a thread; its executor)."""
    import rclpy
    from rclpy.parameter import Parameter

    from acomms_core.nodes.message_queue_node import MessageQueueNode, make_executor

    rclpy.init()
    node = MessageQueueNode(parameter_overrides=[Parameter("codec_config_file", value=config)])
    node.trigger_configure()
    node.trigger_activate()
    executor = make_executor(executor_name)
    executor.add_node(node)
    threading.Thread(target=executor.spin, daemon=True).start()
    return node, executor


def role_queue(config: str, total: int, timeout: float, executor_name: str) -> dict:
    node, executor = _start_queue_node(config, executor_name)
    counts = node.queues.counts
    first = last = None
    deadline = time.monotonic() + timeout
    seen = 0
    while time.monotonic() < deadline:
        received = counts.messages_received
        now = time.monotonic()
        if received and first is None:
            first = now
        if received != seen:
            seen, last = received, now
        if received >= total:
            break
        time.sleep(0.0005)
    queued = counts.messages_queued
    per_queue = sorted({len(q.messages) for q in node.queues.queues.values()})
    executor.shutdown(timeout_sec=1.0)
    return {"received": seen, "queued": queued, "dropped": counts.dropped_queue_full,
            "per_queue": per_queue, "seconds": (last - first) if first and last else 0.0}


def role_bare(total: int, timeout: float) -> dict:
    import rclpy
    from geometry_msgs.msg import Point
    from rclpy.executors import SingleThreadedExecutor

    rclpy.init()
    node = rclpy.create_node("bare_subscriber")
    stamps = {"n": 0, "first": None, "last": None}

    def callback(_msg):
        now = time.monotonic()
        if stamps["first"] is None:
            stamps["first"] = now
        stamps["n"] += 1
        stamps["last"] = now

    for i in range(TOPICS):
        node.create_subscription(Point, f"bench/topic_{i}", callback, _qos())
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    deadline = time.monotonic() + timeout
    while stamps["n"] < total and time.monotonic() < deadline:
        executor.spin_once(timeout_sec=0.05)
    seconds = (stamps["last"] - stamps["first"]) if stamps["first"] else 0.0
    return {"received": stamps["n"], "seconds": seconds}


def role_publisher(per_topic: int) -> dict:
    import rclpy
    from geometry_msgs.msg import Point

    rclpy.init()
    node = rclpy.create_node("bench_publisher")
    publishers = [node.create_publisher(Point, f"bench/topic_{i}", _qos()) for i in range(TOPICS)]
    deadline = time.monotonic() + 30.0
    while time.monotonic() < deadline and any(p.get_subscription_count() < 2 for p in publishers):
        time.sleep(0.05)
    time.sleep(1.0)  # let discovery settle both ways
    start = time.monotonic()
    for n in range(per_topic):
        for i, publisher in enumerate(publishers):
            publisher.publish(Point(x=float(n % 1000), y=float(i), z=-1.25))
    seconds = time.monotonic() - start
    print(json.dumps({"published": per_topic * TOPICS, "seconds": seconds}), flush=True)
    # Reliable delivery needs the writers alive until every reader has caught up: linger until
    # the benchmark ends this process (stdin closed).
    sys.stdin.read()
    return None


def role_overload_queue(config: str, executor_name: str) -> None:
    """The real node under flood until stdin closes; counters and CPU seconds."""
    cpu_start = time.process_time()
    node, executor = _start_queue_node(config, executor_name)
    print("ready", flush=True)
    sys.stdin.read()
    counts = node.queues.counts
    result = {"received": counts.messages_received, "queued": counts.messages_queued,
              "dropped_queue_full": counts.dropped_queue_full,
              "dropped_on_arrival": counts.dropped_on_arrival,
              "cpu_s": time.process_time() - cpu_start}
    print(json.dumps(result), flush=True)
    os._exit(0)  # the benchmark is over: skip the executor's shutdown


def role_mac(duration: float) -> dict:
    """get_next_packet_data every MAC_PERIOD_S for duration seconds: round-trip latencies."""
    import rclpy

    from acomms_interfaces.srv import GetNextPacketData

    rclpy.init()
    node = rclpy.create_node("bench_mac")
    client = node.create_client(GetNextPacketData, "get_next_packet_data")
    client.wait_for_service(timeout_sec=30.0)
    print("ready", flush=True)
    latencies, timeouts = [], 0
    end = time.monotonic() + duration
    while time.monotonic() < end:
        start = time.monotonic()
        future = client.call_async(GetNextPacketData.Request(num_miniframe_bytes=32,
                                                             num_dataframe_bytes=192))
        rclpy.spin_until_future_complete(node, future, timeout_sec=10.0)
        if future.done():
            latencies.append(time.monotonic() - start)
        else:
            timeouts += 1
        time.sleep(max(0.0, MAC_PERIOD_S - (time.monotonic() - start)))
    return {"latencies": latencies, "timeouts": timeouts}


def role_flood(rate: float, duration: float) -> dict:
    """Publish rate msg/s spread over OVERLOAD_TOPICS topics for duration s, paced per 10 ms."""
    import rclpy
    from geometry_msgs.msg import Point

    rclpy.init()
    node = rclpy.create_node("bench_flood")
    publishers = [node.create_publisher(Point, f"bench/topic_{i}", _qos())
                  for i in range(OVERLOAD_TOPICS)]
    deadline = time.monotonic() + 30.0
    while time.monotonic() < deadline and any(p.get_subscription_count() < 1 for p in publishers):
        time.sleep(0.05)
    time.sleep(0.5)
    from rclpy._rclpy_pybind11 import RCLError

    sent, refused, start = 0, 0, time.monotonic()
    while (now := time.monotonic()) < start + duration:
        due = int(rate * (now - start))
        while sent + refused < due:
            try:  # a reliable writer blocked by a reader that is behind refuses, visibly
                publishers[(sent + refused) % OVERLOAD_TOPICS].publish(
                    Point(x=float(sent % 1000), z=-1.25))
                sent += 1
            except RCLError:
                refused += 1
        time.sleep(0.01)
    print(json.dumps({"published": sent, "refused": refused,
                      "seconds": time.monotonic() - start}), flush=True)
    sys.stdin.read()  # keep the writers alive until the queue has read what it will
    return None


def _percentile(values: list, fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))] if ordered else float("nan")


def _wait_ready(proc: subprocess.Popen) -> None:
    line = proc.stdout.readline()
    if line.strip() != "ready":
        raise RuntimeError(f"bench role did not start: {line!r}")


def run_overload(rates: list, duration: float, executor: str) -> None:
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as config:
        config.write(_config_text(OVERLOAD_TOPICS))
    print(f"overload: {OVERLOAD_TOPICS} topics, {duration:.0f} s per rate, queue executor "
          f"{executor}, MAC call every {MAC_PERIOD_S * 1e3:.0f} ms; {os.cpu_count()} CPUs, "
          f"load average {os.getloadavg()[0]:.1f} at start (shared machine)")
    print(f"{'offered/s':>9} {'achieved/s':>10} {'published':>9} {'taken in':>8} {'share':>6} "
          f"{'lost@arr':>8} {'q full':>6} {'CPU s':>6} {'CPU ms/msg':>10} {'p50 ms':>7} "
          f"{'p99 ms':>7} {'calls':>5}")
    for rate in rates:
        queue = _spawn(["--role", "overload_queue", "--config", config.name,
                        "--executor", executor])
        _wait_ready(queue)
        mac = _spawn(["--role", "mac", "--duration", str(duration + 3.0)])
        _wait_ready(mac)
        flood = _spawn(["--role", "flood", "--rate", str(rate), "--duration", str(duration)])
        flood_result = json.loads(flood.stdout.readline())
        time.sleep(2.0)  # let the queue drain what it still can
        queue_result = json.loads(queue.communicate(input="", timeout=60)[0].strip()
                                  .splitlines()[-1])
        flood.communicate(input="", timeout=30)
        mac_result = json.loads(mac.communicate(timeout=60)[0].strip().splitlines()[-1])
        latencies = mac_result["latencies"]
        published = flood_result["published"]
        print(f"{rate:9.0f} {published / flood_result['seconds']:10.0f} {published:9d} "
              f"{queue_result['received']:8d} {queue_result['received'] / published:6.1%} "
              f"{queue_result['dropped_on_arrival']:8d} {queue_result['dropped_queue_full']:6d} "
              f"{queue_result['cpu_s']:6.1f} "
              f"{1e3 * queue_result['cpu_s'] / max(queue_result['received'], 1):10.2f} "
              f"{1e3 * _percentile(latencies, 0.5):7.1f} "
              f"{1e3 * _percentile(latencies, 0.99):7.1f} {len(latencies):5d}"
              + (f"  ({mac_result['timeouts']} calls timed out)" if mac_result["timeouts"]
                 else "")
              + (f"  ({flood_result['refused']} publish calls refused by the writer)"
                 if flood_result["refused"] else ""))
    os.unlink(config.name)
    print(f"after the run: load average {os.getloadavg()[0]:.1f}; target at 1000/s: share >= "
          "95 %, p99 < 50 ms")


def _spawn(args: list[str]) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, __file__, *args], stdout=subprocess.PIPE,
                            stdin=subprocess.PIPE, text=True, env=os.environ.copy())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--per-topic", type=int, default=300)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--role", choices=["queue", "bare", "publisher", "overload_queue", "mac",
                                           "flood"])
    parser.add_argument("--overload", action="store_true", help="the overload run (module doc)")
    parser.add_argument("--rates", default="1000,10000")
    parser.add_argument("--rate", type=float, default=1000.0)
    parser.add_argument("--duration", type=float, default=10.0)
    parser.add_argument("--config")
    parser.add_argument("--timeout", type=float, default=60.0)
    parser.add_argument("--executor", default="single", choices=["multi", "single"],
                        help="executor spinning the queue node (its main uses 'single')")
    args = parser.parse_args()
    if args.role == "overload_queue":
        role_overload_queue(args.config, args.executor)
        return
    if args.role == "mac":
        print(json.dumps(role_mac(args.duration)))
        return
    if args.role == "flood":
        role_flood(args.rate, args.duration)
        return
    if args.overload:
        os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
        run_overload([float(r) for r in args.rates.split(",")], args.duration, args.executor)
        return
    total = args.per_topic * TOPICS
    if args.role == "queue":
        print(json.dumps(role_queue(args.config, total, args.timeout, args.executor)))
        return
    if args.role == "bare":
        print(json.dumps(role_bare(total, args.timeout)))
        return
    if args.role == "publisher":
        role_publisher(args.per_topic)
        return

    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as config:
        config.write(_config_text())
    common = ["--per-topic", str(args.per_topic), "--timeout", str(args.timeout)]
    print(f"{TOPICS} topics x {args.per_topic} geometry_msgs/Point = {total} messages per run; "
          f"queue node executor: {args.executor}; machine load makes single runs noisy")
    print(f"{'run':>3} {'offered msg/s':>13} {'bare msg/s':>10} {'queue msg/s':>11} {'ratio':>6} "
          f"{'bare rx':>7} {'queued':>6} {'dropped':>7} {'per queue':>10}")
    ratios = []
    for run in range(1, args.repeat + 1):
        queue = _spawn(["--role", "queue", "--config", config.name, "--executor", args.executor,
                        *common])
        bare = _spawn(["--role", "bare", *common])
        time.sleep(2.0)
        publisher = _spawn(["--role", "publisher", *common])
        results = {name: json.loads(proc.communicate(timeout=args.timeout + 60)[0].strip()
                                    .splitlines()[-1])
                   for name, proc in (("queue", queue), ("bare", bare))}
        results["publisher"] = json.loads(publisher.communicate(input="", timeout=30)[0]
                                          .strip().splitlines()[-1])
        pub, q, b = results["publisher"], results["queue"], results["bare"]
        q_rate = q["received"] / q["seconds"] if q["seconds"] else 0.0
        b_rate = b["received"] / b["seconds"] if b["seconds"] else 0.0
        ratio = q_rate / b_rate if b_rate else 0.0
        ratios.append(ratio)
        per_queue = "/".join(str(n) for n in q["per_queue"])
        print(f"{run:3d} {total / pub['seconds']:13.0f} {b_rate:10.0f} {q_rate:11.0f} "
              f"{ratio:6.2f} {b['received']:7d} {q['queued']:6d} {q['dropped']:7d} "
              f"{per_queue:>10}")
    os.unlink(config.name)
    print(f"\nmedian queue/bare rate ratio: {statistics.median(ratios):.2f} (target >= 0.67); "
          f"no loss: 'queued' = {total} and every queue holds {args.per_topic} "
          f"(queue_maxsize {QUEUE_MAXSIZE})")

if __name__ == "__main__":
    main()
