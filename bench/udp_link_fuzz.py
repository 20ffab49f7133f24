"""Hostile datagrams against a running udp_link_driver (issue 28): alive, RSS bounded, a proper
peer still served within 1 s.

Starts `udp_link_driver` as its own process (SRC 2, 9600 bit/s, remote_port = this bench's
socket), configures and activates it through its lifecycle services, then sends N hostile
datagrams (default 100,000) in four kinds, round robin:

- random: 0..300 random bytes;
- oversize: a 32,768-byte dataframe or a 65,000-byte miniframe (what used to deafen the driver);
- bad header: wrong magic, unknown kind, announced miniframe longer than the datagram,
  addresses outside 0..255, a ping with a dataframe;
- spoofed ping: a ping from SRC 9 to SRC 2 (the driver answers to its remote_port).

Afterwards: the driver's refusal counters by reason (from /diagnostics; the kernel may drop part of
a burst before the driver sees it, so counted < sent), its RSS before and after (VmRSS of the
process), the ping replies that reached this bench, whether a proper peer's packet reaches
packet_rx within 1 s, and whether a packet queued with queue_tx_packet reaches the far end within
1 s (ping replies may not starve it). Run:

    source env.sh && python bench/udp_link_fuzz.py [--datagrams 100000]
"""

from __future__ import annotations

import argparse
import os
import random
import socket
import subprocess
import time

import rclpy  # noqa: F401  (the ROS environment must be sourced)
from diagnostic_msgs.msg import DiagnosticArray
from lifecycle_msgs.msg import Transition
from lifecycle_msgs.srv import ChangeState, GetState

from acomms_core.ros.testing import RosHarness
from acomms_driver.micromodem.packet_rules import ModemPacket
from acomms_driver.udp import datagram
from acomms_interfaces.msg import Packet, ReceivedPacket
from acomms_interfaces.srv import QueueTxPacket

NS = "/fuzz"
NODE = f"{NS}/udp_link_driver"
HEADER = datagram.HEADER


def _raw(kind: int, src: int, dest: int, mini: bytes = b"", data: bytes = b"",
         announced: int | None = None, magic: int = datagram.MAGIC) -> bytes:
    return HEADER.pack(magic, kind, src, dest, 3, 1, 5,
                       len(mini) if announced is None else announced) + mini + data


def hostile(i: int, rng: random.Random) -> bytes:
    kind, variant = i % 4, (i // 4) % 5
    if kind == 0:
        return rng.randbytes(rng.randrange(301))
    if kind == 1:
        return _raw(1, 3, 2, data=bytes(32768)) if variant % 2 else _raw(1, 3, 2,
                                                                         mini=bytes(65000))
    if kind == 2:
        return [_raw(1, 3, 2, data=b"x", magic=0x55), _raw(7, 3, 2, data=b"x"),
                _raw(1, 3, 2, mini=b"ab", announced=900), _raw(1, -4, 2, data=b"x"),
                _raw(2, 9, 2, mini=bytes(4), data=b"x")][variant]
    return _raw(2, 9, 2, mini=i.to_bytes(4, "big"))


def rss_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return -1


def _ask(ros, client, request):
    try:
        return ros.call(client, request, timeout=3.0)
    except TimeoutError:
        return None


def activate(ros, timeout_s: float = 60.0) -> None:
    change = ros.helper.create_client(ChangeState, f"{NODE}/change_state")
    get = ros.helper.create_client(GetState, f"{NODE}/get_state")
    steps = {"unconfigured": Transition.TRANSITION_CONFIGURE,
             "inactive": Transition.TRANSITION_ACTIVATE}
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        state = _ask(ros, get, GetState.Request())
        label = None if state is None else state.current_state.label
        if label == "active":
            return
        if label in steps:
            request = ChangeState.Request()
            request.transition.id = steps[label]
            _ask(ros, change, request)
    raise RuntimeError(f"{NODE} not active after {timeout_s} s")


def _drain(sock: socket.socket) -> list[tuple[int, ModemPacket]]:
    got = []
    sock.settimeout(0.0)
    while True:
        try:
            got.append(datagram.decode(sock.recv(70000)))
        except (BlockingIOError, datagram.DatagramError):
            return got


def flood(port: int, count: int, far_end: socket.socket) -> tuple[float, int]:
    rng = random.Random(28)
    sender = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    replies, start = 0, time.monotonic()
    for i in range(count):
        sender.sendto(hostile(i, rng), ("127.0.0.1", port))
        if i % 200 == 199:   # a hostile peer at ~100k datagrams/s at most; read our replies
            time.sleep(0.002)
            replies += len(_drain(far_end))
    sender.close()
    return time.monotonic() - start, replies


def proper_peer(ros, port: int, received: list) -> float | None:
    """Seconds until a proper peer's packet is on packet_rx (None: not within 1 s)."""
    peer = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    before = len(received)
    start = time.monotonic()
    peer.sendto(datagram.encode(datagram.KIND_PACKET, ModemPacket(3, 2, 3, 1, 5, b"", b"ok")),
                ("127.0.0.1", port))
    peer.close()
    ok = ros.spin_until(lambda: len(received) > before, timeout=1.0)
    return time.monotonic() - start if ok else None


def queued_packet_out(ros, far_end: socket.socket) -> float | None:
    """Seconds from queue_tx_packet to the packet at the far end (None: not within 1 s)."""
    request = QueueTxPacket.Request()
    request.packet.dest, request.packet.packet_type = 3, Packet.PACKET_TYPE_FDP
    request.packet.miniframe_rate = request.packet.dataframe_rate = 1
    request.packet.dataframe_bytes = list(b"user packet")
    start = time.monotonic()
    answer = ros.call(ros.helper.create_client(QueueTxPacket, f"{NS}/queue_tx_packet"),
                      request, timeout=5.0)
    if not answer.success:
        return None
    while time.monotonic() - start < 1.0:
        if any(kind == datagram.KIND_PACKET for kind, _ in _drain(far_end)):
            return time.monotonic() - start
        time.sleep(0.005)
    return None


def run(count: int) -> dict:
    far_end = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    far_end.bind(("127.0.0.1", 0))
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    driver = subprocess.Popen(
        ["udp_link_driver", "--ros-args", "-r", "__ns:=/fuzz", "-p", "SRC:=2",
         "-p", f"local_port:={port}", "-p", f"remote_port:={far_end.getsockname()[1]}",
         "-p", "link_rate_bps:=9600.0", "-p", "diagnostics_period_s:=0.2"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        with RosHarness() as ros:
            received, diagnostics = [], []
            ros.helper.create_subscription(ReceivedPacket, f"{NS}/packet_rx", received.append, 10)
            ros.helper.create_subscription(DiagnosticArray, "/diagnostics", diagnostics.append,
                                           10)
            activate(ros)
            ros.spin_until(lambda: ros.helper.count_publishers(f"{NS}/packet_rx") > 0, 10.0)
            warm = proper_peer(ros, port, received)
            rss_before = rss_kb(driver.pid)
            seconds, replies = flood(port, count, far_end)
            ros.spin_for(1.0)
            replies += len(_drain(far_end))
            after = proper_peer(ros, port, received)
            queued = queued_packet_out(ros, far_end)
            rss_after = rss_kb(driver.pid)
            ros.spin_for(0.5)
            status = diagnostics[-1].status[0] if diagnostics else None
            values = {} if status is None else {kv.key: kv.value for kv in status.values}
    finally:
        driver.terminate()
        output, _ = driver.communicate(timeout=20)
        far_end.close()
    return {"sent": count, "send_seconds": seconds, "alive": driver.returncode in (0, -15),
            "warm_delivery_s": warm, "rss_before_kb": rss_before, "rss_after_kb": rss_after,
            "replies_at_far_end": replies, "after_delivery_s": after,
            "queued_packet_out_s": queued,
            "level": None if status is None else int.from_bytes(status.level, "big"),
            "message": None if status is None else status.message,
            "counters": {k: v for k, v in values.items() if k.startswith(("refused_", "rx_",
                         "ping", "packets_", "thread_", "queue_length", "reply_queue"))},
            "log_lines": len(output.splitlines())}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--datagrams", type=int, default=100_000)
    args = parser.parse_args()
    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    result = run(args.datagrams)
    print(f"sent {result['sent']} hostile datagrams in {result['send_seconds']:.1f} s")
    for key in sorted(result["counters"]):
        print(f"  {key:28s} {result['counters'][key]}")
    print(f"ping replies that reached the far end: {result['replies_at_far_end']}")
    print(f"RSS before {result['rss_before_kb'] / 1024:.1f} MB, after "
          f"{result['rss_after_kb'] / 1024:.1f} MB")
    print(f"diagnostics: level {result['level']} '{result['message']}'; driver log lines "
          f"{result['log_lines']}")
    print(f"proper peer's packet on packet_rx: before {result['warm_delivery_s']}, after "
          f"{result['after_delivery_s']} s (target < 1 s)")
    print(f"queued packet at the far end after the flood: {result['queued_packet_out_s']} s "
          "(target < 1 s)")
    ok = (result["alive"] and result["after_delivery_s"] is not None
          and result["queued_packet_out_s"] is not None)
    print("PASS" if ok else "FAIL")


if __name__ == "__main__":
    main()
