"""Narrow-link UDP on localhost: udp_link goodput vs configured rate, latency, streamer throughput.

1. Goodput: for each configured rate, one link queues a backlog of full Micromodem rate-5 packets
   (96 miniframe + 2048 dataframe bytes) and the far end counts payload bytes arriving; goodput =
   payload bits / (last arrival - first send). Target >= 95% of the configured rate (the rest is
   the 11-byte datagram header and the 28 bytes of IP/UDP overhead the bucket charges).
2. Latency: 64-byte packets queued one at a time on an idle link (each after the previous arrived
   and the bucket refilled): queue_packet -> arrival, p50 / p99; and the same 200 packets queued
   at once (the backlog's queueing delay dominates).
3. Streamer: 1 MB messages split into 1388 + 12 byte packets as fast as the sender paces them;
   complete messages / s, MB/s and incomplete sequences at the receiver.

The link and streamer cores are measured directly (udp_link.UdpLink, stream.StreamSender /
Reassembler); the ROS nodes are thin adapters over them. Run:

    source env.sh && python bench/udp_link.py [--seconds 3] [--png acomms_demo_out/udp_link.png]
"""

from __future__ import annotations

import argparse
import statistics
import time

from acomms_driver.micromodem.packet_rules import ModemPacket
from acomms_driver.udp.stream import StreamReceiver, StreamSender
from acomms_driver.udp.udp_link import UdpLink, UdpLinkCallbacks, UdpLinkSettings

MINI, DATA = bytes(96), bytes(2048)


class Pair:
    def __init__(self, rate_bps: float):
        self.arrivals: list[tuple[float, int, int]] = []  # (time, payload bytes, tag)
        self.b = UdpLink(UdpLinkSettings(2), UdpLinkCallbacks(on_packet=self._arrived))
        self.b.open()
        self.a = UdpLink(UdpLinkSettings(1, remote_port=self.b.port, rate_bps=rate_bps,
                                         max_queue_length=100000))
        self.a.open()

    def _arrived(self, packet: ModemPacket, arrival_s: float) -> None:
        tag = int.from_bytes(packet.miniframe_bytes[:4], "big")
        self.arrivals.append((time.monotonic(), len(packet.miniframe_bytes)
                              + len(packet.dataframe_bytes), tag))

    def wait_for(self, count: int, timeout_s: float) -> None:
        end = time.monotonic() + timeout_s
        while len(self.arrivals) < count and time.monotonic() < end:
            time.sleep(0.002)

    def close(self) -> None:
        self.a.close()
        self.b.close()


def _packet(tag: int, data: bytes = DATA) -> ModemPacket:
    return ModemPacket(-1, 2, 3, 5, 5, tag.to_bytes(4, "big") + MINI[4:], data)


def goodput(rate_bps: float, seconds: float) -> dict:
    pair = Pair(rate_bps)
    try:
        wire_bits = (len(MINI) + len(DATA) + 11 + 28) * 8
        count = max(4, int(seconds * rate_bps / wire_bits))
        start = time.monotonic()
        for tag in range(count):
            pair.a.queue_packet(_packet(tag))
        pair.wait_for(count, seconds * 3 + 5)
        elapsed = pair.arrivals[-1][0] - start
        # the first bucketful leaves at once: measure from the first arrival after it
        payload = sum(size for _, size, _ in pair.arrivals[1:])
        span = pair.arrivals[-1][0] - pair.arrivals[0][0]
        return {"rate_bps": rate_bps, "packets": count, "received": len(pair.arrivals),
                "elapsed_s": elapsed, "goodput_bps": payload * 8 / span,
                "ratio": payload * 8 / span / rate_bps}
    finally:
        pair.close()


def latency(rate_bps: float, count: int, backlog: bool) -> dict:
    pair = Pair(rate_bps)
    sent: dict[int, float] = {}
    try:
        for tag in range(count):
            sent[tag] = time.monotonic()
            pair.a.queue_packet(_packet(tag, DATA[:64]))
            if not backlog:  # let the bucket refill: the next packet finds an idle link
                pair.wait_for(tag + 1, 2.0)
                time.sleep((len(MINI) + 64 + 39) * 8 / rate_bps)
        pair.wait_for(count, 30.0)
        delays = sorted(t - sent[tag] for t, _, tag in pair.arrivals)
        return {"p50_ms": 1e3 * statistics.median(delays),
                "p99_ms": 1e3 * delays[min(len(delays) - 1, int(0.99 * len(delays)))]}
    finally:
        pair.close()


def streamer(messages: int, message_bytes: int, packet_rate_hz: float) -> dict:
    done = []
    receiver = StreamReceiver(("127.0.0.1", 0), lambda data: done.append(time.monotonic()))
    sender = StreamSender(("127.0.0.1", receiver.port), 1388, packet_rate_hz)
    start = time.monotonic()
    payload = bytes(message_bytes)
    for _ in range(messages):
        sender.submit(payload)
        while not sender.idle():
            time.sleep(0.0005)
    time.sleep(0.3)
    sender.close()
    receiver.close()
    elapsed = (done[-1] if done else time.monotonic()) - start
    return {"messages": messages, "complete": len(done),
            "incomplete": receiver.reassembler.counters["sequences_incomplete"],
            "messages_per_s": len(done) / elapsed,
            "mb_per_s": len(done) * message_bytes / elapsed / 1e6,
            "packets_sent": sender.counters["packets_sent"]}


def _png(path: str, rows: list[dict]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    rates = [r["rate_bps"] for r in rows]
    ax.plot(rates, rates, "k--", label="configured")
    ax.plot(rates, [r["goodput_bps"] for r in rows], "o-", label="goodput")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("configured rate, bit/s")
    ax.set_ylabel("bit/s")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    print(f"wrote {path}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=3.0, help="per goodput run")
    parser.add_argument("--png", default=None, help="write a goodput plot here")
    options = parser.parse_args()
    rows = []
    print("goodput with a backlog (payload bits / s)")
    for rate in (9600.0, 64000.0, 1e6, 1e7):
        row = goodput(rate, options.seconds)
        rows.append(row)
        print(f"  {rate:>12.0f} bit/s: {row['goodput_bps']:>12.0f} bit/s = "
              f"{100 * row['ratio']:.1f}% ({row['received']}/{row['packets']} packets, "
              f"{row['elapsed_s']:.2f} s)")
    for backlog in (False, True):
        stats = latency(64000.0, 200, backlog)
        print(f"latency at 64 kbit/s, {'backlog' if backlog else 'idle link'}: "
              f"p50 {stats['p50_ms']:.2f} ms, p99 {stats['p99_ms']:.2f} ms")
    stats = streamer(20, 1_000_000, 200000.0)
    print(f"streamer, 1 MB messages, 1400-byte packets: {stats['complete']}/{stats['messages']} "
          f"complete, {stats['incomplete']} incomplete, {stats['messages_per_s']:.1f} msg/s, "
          f"{stats['mb_per_s']:.1f} MB/s")
    if options.png:
        _png(options.png, rows)


if __name__ == "__main__":
    main()
