"""Fragmented transfer efficiency (issue 15): packets used against the ideal N / (1 - PER).

A 10 KB and a 60 KB message (FileTransfer, random bytes) go from vehicle 1 to vehicle 2 over a
link that loses every packet independently with probability PER (seeded), TDMA-like: the sender
may send `--packets-per-cycle` packets of one Micromodem rate (default rate 1: 72 + 192 bytes),
then the receiver one packet (its acks). Both ends are the code the nodes run
(`acomms_core.fragmentation.simulated_link`: MessageQueues + FragmentationSender as in
message_queue_node, the packet codec decode + FragmentReceiver as in packet_dispatch_node); only
ROS transport and channel physics are replaced by the seeded loss model.

N = the packets the encoded message fills with no fragmentation framing at all
(ceil(message bits / (packet payload bits - the 8-bit message id))). Printed per size and PER:
data packets used (mean over seeds), ratio to N / (1 - PER), delivery, completion time, ack
bytes and packets. Target: ratio <= 1.10 at PER 20 % with 100 % delivery. PNG: packets used vs
PER beside the ideal curve. Run:

    source env.sh && python bench/fragmentation_efficiency.py [--seeds 20] [--png out.png]
"""

from __future__ import annotations

import argparse
import hashlib
import math
import pathlib
import random
import statistics
import sys
import tempfile
import textwrap

from acomms_core.codecs.config import load_codec_config
from acomms_core.fragmentation.settings import FragmentationSettings
from acomms_core.fragmentation.simulated_link import LinkEnd, run_transfer
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
PERS = (0.0, 0.1, 0.2, 0.4)
SIZES = (10_000, 60_000)


def transfer(config, size: int, per: float, seed: int, packet: tuple[int, int],
             packets_per_cycle: int, settings: FragmentationSettings):
    data = random.Random(seed).randbytes(size)
    msg = FileTransfer(name="blob.bin", data=list(data),
                       sha256=list(hashlib.sha256(data).digest()))
    sender, receiver = LinkEnd(1, config, settings), LinkEnd(2, config, settings)
    sender.next_packet(*packet, 0.0)           # the MAC's first request sets the auto block size
    bits = len(config.by_id()[120].codec.encode(msg)[0])
    assert sender.queues.add("file", msg, 0.0) == "fragmented"
    run = run_transfer(sender, receiver, packet, per, seed * 7919 + int(per * 100),
                       packets_per_cycle)
    ok = (len(receiver.published) == 1
          and bytes(receiver.published[0][2].data) == data)
    return run, bits, ok


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--rate", type=int, default=1)
    parser.add_argument("--packets-per-cycle", type=int, default=8)
    parser.add_argument("--sizes", type=int, nargs="*", default=list(SIZES))
    parser.add_argument("--png", default="acomms_demo_out/fragmentation_efficiency.png")
    args = parser.parse_args(argv)
    rate = modem_profile(DEFAULT_MODEM_PROFILE).rates[args.rate]
    packet = (72, rate.max_dataframe_bytes)
    with tempfile.TemporaryDirectory() as tmp:
        path = pathlib.Path(tmp) / "codecs.yaml"
        path.write_text(textwrap.dedent(CONFIG))
        config = load_codec_config(str(path))
    settings = FragmentationSettings.from_values({}, ack_timeout_s=4 * 6.0 * (
        args.packets_per_cycle + 1))
    capacity = config.by_id()[120].packet_codec.packet_codec.payload_capacity_bits(*packet) - 8
    print(f"packets: rate {args.rate}, {sum(packet)} bytes ({capacity} payload bits); "
          f"{args.packets_per_cycle} data packets per ack packet; {args.seeds} seeds")
    print(f"{'size':>7} {'PER':>4} {'N':>4} {'ideal':>7} {'used':>7} {'ratio':>6} "
          f"{'worst':>6} {'deliv':>6} {'time s':>8} {'ack B':>7} {'ack pk':>6}")
    results, failed = {}, False
    for size in args.sizes:
        for per in PERS:
            runs = [transfer(config, size, per, seed, packet, args.packets_per_cycle, settings)
                    for seed in range(args.seeds)]
            bits = runs[0][1]
            n = math.ceil(bits / capacity)
            ideal = n / (1 - per)
            used = [r.data_packets for r, _, _ in runs]
            delivered = sum(ok for _, _, ok in runs) / len(runs)
            ratio = statistics.mean(used) / ideal
            results[(size, per)] = (statistics.mean(used), ideal)
            times = [r.completion_s for r, _, _ in runs if r.completion_s is not None]
            print(f"{size:>7} {per:>4.0%} {n:>4} {ideal:>7.1f} {statistics.mean(used):>7.1f} "
                  f"{ratio:>6.3f} {max(used) / ideal:>6.3f} {delivered:>6.0%} "
                  f"{statistics.mean(times) if times else float('nan'):>8.0f} "
                  f"{statistics.mean(r.ack_bytes for r, _, _ in runs):>7.0f} "
                  f"{statistics.mean(r.ack_packets for r, _, _ in runs):>6.1f}")
            if per == 0.2 and (ratio > 1.10 or delivered < 1.0):
                failed = True
    _plot(results, args.sizes, args.png)
    print("target (<= 1.10 x ideal at PER 20 %, 100 % delivery):", "FAILED" if failed else "met")
    return 1 if failed else 0


def _plot(results, sizes, png: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for size in sizes:
        pers = [p for p in PERS if (size, p) in results]
        line, = ax.plot([100 * p for p in pers], [results[(size, p)][0] for p in pers], "o-",
                        label=f"{size // 1000} KB: packets used")
        ax.plot([100 * p for p in pers], [results[(size, p)][1] for p in pers], "--",
                color=line.get_color(), label=f"{size // 1000} KB: ideal N/(1-PER)")
    ax.set_xlabel("packet error rate, %")
    ax.set_ylabel("data packets")
    ax.set_yscale("log")
    ax.grid(True, alpha=0.3)
    ax.legend()
    ax.set_title("Fragmented transfer: packets used vs ideal")
    pathlib.Path(png).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(png, dpi=110, bbox_inches="tight")
    print(f"wrote {png}")


if __name__ == "__main__":
    sys.exit(main())
