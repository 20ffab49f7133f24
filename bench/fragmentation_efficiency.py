"""Fragmented transfer efficiency (issues 15, 26): packets used against the ideal N / (1 - PER).

A 10 KB and a 40 KB message (FileTransfer, random bytes) go from vehicle 1 to vehicle 2 over a
basic TDMA link (`acomms_core.fragmentation.simulated_link.run_tdma_transfer`: each vehicle's
queue is asked for packets as the tdma MAC asks, TdmaSchedule.may_transmit every 0.2 s tick, the
profile's on-air time and a 5 s guard between packets). Packets of one Micromodem rate (default
rate 1: 72 + 192 bytes). Two layouts of the cycle (`--layouts`): `halves`, two slots, the
sender in slot 0 and the receiver (its acks) in slot 1; `ack-slot`, slots of about 10 s (one
packet each), the receiver in the last one and the sender in all the others (one ack packet a
cycle, as in the exchange the bench used before). Every packet is lost independently with
probability PER (seeded). Both ends are the code the nodes run (MessageQueues +
FragmentationSender as in message_queue_node, the packet codec decode + FragmentReceiver as in
packet_dispatch_node); only ROS transport and channel physics are replaced by the seeded loss
model. The message is queued after two cycles of the MAC's requests, as on a queue node that
runs before the file is sent. Every fragmentation parameter has its default (the ack timeout is
automatic: it follows the cycle the queue learns from the requests); `--ack-timeout-s 120`
shows the fixed timeout of before issue 26.

N = the packets the encoded message fills with no fragmentation framing at all
(ceil(message bits / (packet payload bits - the 8-bit message id))). Printed per layout, cycle
length and size: data packets used (mean over seeds), their ratio to N / (1 - PER) (mean and worst
seed), delivery, completion time in cycles, ack timeouts and blocks resent (means). Target:
ratio <= 1.10 at PER 20 % with 100 % delivery. PNG: ratio vs cycle length. Run:

    source env.sh && python bench/fragmentation_efficiency.py [--seeds 10] [--png out.png]
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import itertools
import math
import pathlib
import random
import statistics
import sys
import tempfile
import textwrap

from acomms_core.codecs.config import load_codec_config
from acomms_core.fragmentation.settings import FragmentationSettings
from acomms_core.fragmentation.simulated_link import LinkEnd, TdmaLink, run_tdma_transfer
from acomms_core.mac.tdma_schedule import frame_settings
from acomms_core.modems.registry import DEFAULT_MODEM_PROFILE, modem_profile
from acomms_interfaces.msg import FileTransfer

CONFIG = """\
- codec_name: default
  packet_codec: ros
  miniframe_header: [0xac]
  message_codecs:
    - id: 120
      ros_type: acomms_interfaces/FileTransfer
      subscribe_topic: file
      publish_topic: from_acomms/file
      default_dest: 2
      allow_fragmentation: true
      fields:
        name: {codec: string, max_length: 64}
        data: {codec: bytes, max_length: 65535}
        sha256: {codec: bytes, max_length: 32}
"""
CYCLES = (20.0, 60.0, 105.0, 200.0, 300.0)
SIZES = (10_000, 40_000)
LAYOUTS = ("halves", "ack-slot")
TARGET = 1.10
ACK_SLOT_S = 10.0     # slot length of the ack-slot layout (one rate-1 packet and the guard)


def tdma_link(layout: str, cycle: float, packet_s: float) -> TdmaLink:
    if layout == "halves":
        return TdmaLink(cycle, packet_s)
    slots = max(2, round(cycle / ACK_SLOT_S))
    return TdmaLink(cycle, packet_s, num_slots=slots, sender_slots=f"0:{slots - 2}",
                    receiver_slots=slots - 1)


@dataclasses.dataclass
class Point:
    ideal: float
    ratios: list
    delivered: float
    cycles_to_finish: float
    timeouts: float
    resent: float


def transfer(config, size: int, per: float, seed: int, packet: tuple[int, int],
             link: TdmaLink, settings: FragmentationSettings):
    data = random.Random(seed).randbytes(size)
    msg = FileTransfer(name="blob.bin", data=list(data),
                       sha256=list(hashlib.sha256(data).digest()))
    sender, receiver = LinkEnd(1, config, settings), LinkEnd(2, config, settings)

    def add(now):
        assert sender.queues.add("file", msg, now) == "fragmented"

    run = run_tdma_transfer(sender, receiver, packet, per, seed * 7919 + int(per * 100), link,
                            add, add_at_s=2 * link.cycle_s)
    ok = (len(receiver.published) == 1
          and bytes(receiver.published[0][2].data) == data)
    bits = len(config.by_id()[120].codec.encode(msg)[0])
    return run, bits, ok, sender.sender.counters()


def measure(config, size, link: TdmaLink, args, packet, settings, capacity) -> Point:
    cycle = link.cycle_s
    runs = [transfer(config, size, args.per, seed, packet, link, settings)
            for seed in range(args.seeds)]
    ideal = math.ceil(runs[0][1] / capacity) / (1 - args.per)
    times = [r.completion_s for r, _, _, _ in runs if r.completion_s is not None]
    return Point(ideal, [r.data_packets / ideal for r, _, _, _ in runs],
                 sum(ok for _, _, ok, _ in runs) / len(runs),
                 statistics.mean(times) / cycle if times else float("nan"),
                 statistics.mean(c["fragment_ack_timeouts"] for *_, c in runs),
                 statistics.mean(c["fragment_blocks_resent"] for *_, c in runs))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--per", type=float, default=0.2)
    parser.add_argument("--rate", type=int, default=1)
    parser.add_argument("--cycles", type=float, nargs="*", default=list(CYCLES))
    parser.add_argument("--sizes", type=int, nargs="*", default=list(SIZES))
    parser.add_argument("--layouts", nargs="*", choices=LAYOUTS, default=list(LAYOUTS))
    parser.add_argument("--ack-timeout-s", type=float, default=0.0,
                        help="fragment_ack_timeout_s (default 0: automatic)")
    parser.add_argument("--png", default="acomms_demo_out/fragmentation_efficiency.png")
    args = parser.parse_args(argv)
    frames = frame_settings(args.rate, args.rate, profile=modem_profile(DEFAULT_MODEM_PROFILE))
    packet = (frames.maximum_miniframe_bytes, frames.maximum_dataframe_bytes)
    with tempfile.TemporaryDirectory() as tmp:
        path = pathlib.Path(tmp) / "codecs.yaml"
        path.write_text(textwrap.dedent(CONFIG))
        config = load_codec_config(str(path))
    settings = FragmentationSettings.from_values({"fragment_ack_timeout_s": args.ack_timeout_s})
    capacity = config.by_id()[120].packet_codec.packet_codec.payload_capacity_bits(*packet) - 8
    timeout = f"{args.ack_timeout_s:g} s" if args.ack_timeout_s else "automatic"
    print(f"packets: rate {args.rate}, {sum(packet)} bytes ({capacity} payload bits), "
          f"{frames.packet_duration_s:.2f} s on air; PER {args.per:.0%}; "
          f"ack timeout {timeout}; {args.seeds} seeds")
    print(f"{'layout':>8} {'cycle s':>7} {'size':>7} {'ideal':>7} {'used':>7} {'ratio':>6} "
          f"{'worst':>6} {'deliv':>6} {'cycles':>7} {'tmouts':>7} {'resent':>7}")
    results, failed = {}, False
    for layout, size, cycle in itertools.product(args.layouts, args.sizes, args.cycles):
        link = tdma_link(layout, cycle, frames.packet_duration_s)
        p = measure(config, size, link, args, packet, settings, capacity)
        results[(layout, size, cycle)] = p
        ratio = statistics.mean(p.ratios)
        print(f"{layout:>8} {cycle:>7.0f} {size:>7} {p.ideal:>7.1f} {ratio * p.ideal:>7.1f} "
              f"{ratio:>6.3f} {max(p.ratios):>6.3f} {p.delivered:>6.0%} "
              f"{p.cycles_to_finish:>7.1f} {p.timeouts:>7.1f} {p.resent:>7.1f}", flush=True)
        failed |= ratio > TARGET or p.delivered < 1.0
    _plot(results, args, timeout)
    print(f"target (<= {TARGET:.2f} x ideal at PER {args.per:.0%}, 100 % delivery):",
          "FAILED" if failed else "met")
    return 1 if failed else 0


def _plot(results, args, timeout: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for layout, size in itertools.product(args.layouts, args.sizes):
        points = [results[(layout, size, c)] for c in args.cycles]
        name = f"{layout}, {size // 1000} KB"
        line, = ax.plot(args.cycles, [statistics.mean(p.ratios) for p in points], "o-",
                        label=f"{name}: mean")
        ax.plot(args.cycles, [max(p.ratios) for p in points], "v:", color=line.get_color(),
                label=f"{name}: worst seed")
    ax.axhline(TARGET, color="red", linestyle="--", label=f"target {TARGET:.2f}")
    ax.set_xlabel("TDMA cycle, s")
    ax.set_ylabel("packets used / ideal N/(1-PER)")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)
    ax.set_title(f"Fragmented transfer at PER {args.per:.0%}, ack timeout {timeout}")
    pathlib.Path(args.png).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(args.png, dpi=110, bbox_inches="tight")
    print(f"wrote {args.png}")


if __name__ == "__main__":
    sys.exit(main())
