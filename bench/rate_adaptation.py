"""Rate adaptation: goodput of an AUV running away from its ship, fixed rates 1/3/5 vs adaptive.

    .venv/bin/python bench/rate_adaptation.py [--seeds 10] [--fading none|rayleigh|rician]
        [--out acomms_demo_out/rate_adaptation.png]

The AUV runs in a straight line from 500 m to 6 km from the ship at --speed m/s (both at 20 m). A
two-slot TDMA cycle (--slot s each): the ship sends a short rate-1 packet (its own traffic) in slot
0, the AUV a full packet to the ship in slot 1. Every packet goes through the simulator's receiver
(`acomms_sim.physics.channel.ReceiverChannel`: practical spreading + Francois-Garrison absorption,
Wenz noise in a 5 kHz band at 10 kHz, optional fading, the FER tables' seeded frame draws), the
channel seeded per run. The ship's packet heard by the AUV gives the SNR its modem would report
(CST.snr_in); an adaptive AUV feeds it to `acomms_core.mac.rate_adaptation.RateAdapter` (the MAC's
own class, with the parameter defaults unless --target-per, --margin-db, --hysteresis-db,
--smoothing; its rate_fading_model is the channel's --fading, with rate_rician_k_db from --k-factor,
unless --adapter-fading says otherwise) and sends at the rate it picks for the ship; a fixed AUV
always sends at its rate.
Goodput = payload bytes (miniframe + dataframe) of the AUV packets the ship received whole, per
second, per 500 m range bin and over the whole run, averaged over the seeds (the same seeds, hence
the same channel draws, for every policy). The source level (--source-level, default chosen so that
the SNR at 6 km is --far-snr-db) sets where the rates stop working.

This drives the simulator's physics and the MAC's rate logic without ROS (the node's CST →
rate → queue request path is tested in acomms_core/test/test_mac_rate_adaptation_node.py).
Targets (issue 32): adaptive total ≥ the best fixed rate's, and in every bin within 15 % of the
best fixed rate for that bin; the verdict is printed (exit status 0 only when both hold).
"""

from __future__ import annotations

import argparse
import math
import pathlib
import sys
import time

import numpy as np

from acomms_core.mac.rate_adaptation import RATE_PARAMETERS, RateAdapter, rate_settings
from acomms_core.modems.modem_rates import DEFAULT_MINIFRAME_BYTES, rate_info
from acomms_core.ros.parameter_spec import defaults
from acomms_sim.physics import geodesy
from acomms_sim.physics.ambient_noise import AmbientNoise
from acomms_sim.physics.channel import ReceiverChannel, Transmission
from acomms_sim.physics.fading import FadingModel
from acomms_sim.physics.packet_performance import PacketPerformance
from acomms_sim.physics.sound_speed import SoundSpeedProfile
from acomms_sim.physics.transmission_loss import Propagation, SpreadingModel

SHIP = (41.5, -70.7, 20.0)
FC, BW = 10000.0, 5000.0
SHIP_ID, AUV_ID = 1, 2
START_M, END_M, BIN_M = 500.0, 6000.0, 500.0
POLICIES = ("rate 1", "rate 3", "rate 5", "adaptive")


def make_channel(seed: int, fading: FadingModel) -> ReceiverChannel:
    propagation = Propagation(SpreadingModel(), SoundSpeedProfile.mackenzie(10.0, 35.0, 100.0))
    return ReceiverChannel(propagation, AmbientNoise(), PacketPerformance([seed, 7]), FC, BW,
                           fading=fading)


def auv_position(range_m: float) -> tuple[float, float, float]:
    lat, lon = geodesy.offset_position(SHIP[0], SHIP[1], range_m, 0.0)
    return lat, lon, SHIP[2]


def packet(src: int, start_s: float, where, source_level_db: float, rate: int) -> Transmission:
    data = rate_info(rate).max_dataframe_bytes
    return Transmission(src, start_s, where[0], where[1], where[2], source_level_db, FC, BW, True,
                        1, rate, DEFAULT_MINIFRAME_BYTES, data)


def receive(channel: ReceiverChannel, tx: Transmission, receiver):
    """The reception of one packet alone on the channel (or None if not detected)."""
    channel.add_transmission(tx, receiver)
    receptions = channel.pop_due(float("inf"))
    return receptions[0] if receptions and receptions[0].outcome == "received" else None


def mean_snr_db(range_m: float, source_level_db: float) -> float:
    channel = make_channel(0, FadingModel())
    reception = receive(channel, packet(AUV_ID, 0.0, auv_position(range_m), source_level_db, 1),
                        SHIP)
    if reception is not None:
        return reception.snr_db
    arrival = channel.arrivals[-1] if channel.arrivals else None
    return -99.0 if arrival is None else arrival.receive_level_db - channel._noise_db()


def run(policy: str, seed: int, args, source_level_db: float) -> np.ndarray:
    """(bytes delivered, seconds) per range bin for one policy and seed."""
    to_auv, to_ship = make_channel(seed, args.fading_model), make_channel(seed, args.fading_model)
    settings = rate_settings({**defaults(RATE_PARAMETERS), "rate_policy": "adaptive",
                              "rate_target_per": args.target_per,
                              "rate_margin_db": args.margin_db,
                              "rate_hysteresis_db": args.hysteresis_db,
                              "rate_snr_smoothing": args.smoothing, "miniframe_rate": 1,
                              "rate_fading_model": args.rate_fading,
                              "rate_rician_k_db": 10.0 * math.log10(max(args.k_factor, 1e-3))})
    adapter = RateAdapter(settings, broadcast_address=255)
    bins = int(round((END_M - START_M) / BIN_M))
    totals = np.zeros((bins, 2))
    cycle_s = 2 * args.slot
    t = 0.0
    while True:
        range_m = START_M + args.speed * t
        if range_m >= END_M:
            return totals
        heard = receive(to_auv, packet(SHIP_ID, t, SHIP, source_level_db, 1), auv_position(
            range_m))
        if heard is not None:
            adapter.observe(SHIP_ID, heard.snr_db, t)
        rate = adapter.rate_for(SHIP_ID, t) if policy == "adaptive" else int(policy.split()[1])
        send_at = t + args.slot
        got = receive(to_ship, packet(AUV_ID, send_at, auv_position(START_M + args.speed
                                                                     * send_at),
                                      source_level_db, rate), SHIP)
        index = min(bins - 1, int((range_m - START_M) // BIN_M))
        if got is not None and got.frames.packet_success:
            totals[index, 0] += DEFAULT_MINIFRAME_BYTES + rate_info(rate).max_dataframe_bytes
        totals[index, 1] += cycle_s
        t += cycle_s


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--speed", type=float, default=1.5, help="AUV speed, m/s")
    parser.add_argument("--slot", type=float, default=10.0, help="TDMA slot, s")
    parser.add_argument("--fading", choices=("none", "rayleigh", "rician"), default="none")
    parser.add_argument("--k-factor", type=float, default=10.0, help="Rician K (linear)")
    parser.add_argument("--adapter-fading", choices=("same", "none", "rayleigh", "rician"),
                        default="same", help="the adapter's rate_fading_model (same: --fading)")
    parser.add_argument("--far-snr-db", type=float, default=-5.0,
                        help="mean SNR at 6 km (sets the source level)")
    parser.add_argument("--source-level", type=float, default=None, help="dB re 1 uPa @ 1 m")
    table = defaults(RATE_PARAMETERS)
    parser.add_argument("--target-per", type=float, default=table["rate_target_per"])
    parser.add_argument("--margin-db", type=float, default=table["rate_margin_db"])
    parser.add_argument("--hysteresis-db", type=float, default=table["rate_hysteresis_db"])
    parser.add_argument("--smoothing", type=float, default=table["rate_snr_smoothing"])
    parser.add_argument("--out", default="acomms_demo_out/rate_adaptation.png")
    args = parser.parse_args(argv)
    args.fading_model = FadingModel(args.fading, k_factor=args.k_factor)
    args.rate_fading = args.fading if args.adapter_fading == "same" else args.adapter_fading
    started = time.perf_counter()
    source_level = args.source_level
    if source_level is None:
        source_level = 180.0 + args.far_snr_db - mean_snr_db(END_M, 180.0)
    results = {p: sum(run(p, seed, args, source_level) for seed in range(args.seeds))
               for p in POLICIES}
    return report(results, args, source_level, started)


def report(results: dict, args, source_level: float, started: float) -> int:
    edges = np.arange(START_M, END_M, BIN_M)
    goodput = {p: 8.0 * r[:, 0] / r[:, 1] for p, r in results.items()}  # bit/s per bin
    total = {p: 8.0 * r[:, 0].sum() / r[:, 1].sum() for p, r in results.items()}
    print(f"source level {source_level:.1f} dB, fading {args.fading} (adapter's model "
          f"{args.rate_fading}), {args.seeds} seeds, AUV "
          f"{args.speed:g} m/s, slot {args.slot:g} s, target PER {args.target_per:g}, margin "
          f"{args.margin_db:g} dB, hysteresis {args.hysteresis_db:g} dB, smoothing "
          f"{args.smoothing:g}")
    print(f"{'range_m':>11} {'snr_db':>7} " + " ".join(f"{p:>9}" for p in POLICIES)
          + "  adaptive/best_fixed")
    worst = np.inf
    for i, low in enumerate(edges):
        best = max(goodput[p][i] for p in POLICIES[:3])
        ratio = goodput["adaptive"][i] / best if best > 0 else 1.0
        worst = min(worst, ratio)
        print(f"{low:5.0f}-{low + BIN_M:<5.0f} {mean_snr_db(low + BIN_M / 2, source_level):7.2f} "
              + " ".join(f"{goodput[p][i]:9.1f}" for p in POLICIES) + f"  {ratio:6.3f}")
    best_total = max(total[p] for p in POLICIES[:3])
    print(f"{'total':>11} {'':>7} " + " ".join(f"{total[p]:9.1f}" for p in POLICIES)
          + f"  {total['adaptive'] / best_total:6.3f}")
    total_ok, bins_ok = total["adaptive"] >= best_total, worst >= 0.85
    print(f"goodput in bit/s. adaptive total >= best fixed: {'yes' if total_ok else 'NO'}; "
          f"every bin within 15 % of the best fixed: {'yes' if bins_ok else 'NO'} (worst "
          f"{worst:.3f}); wall {time.perf_counter() - started:.1f} s")
    plot(edges + BIN_M / 2, goodput, pathlib.Path(args.out), args)
    return 0 if total_ok and bins_ok else 1


def plot(centres, goodput: dict, out: pathlib.Path, args) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(8, 5))
    for policy in POLICIES:
        ax.plot(centres, goodput[policy], "o-" if policy == "adaptive" else ".--",
                label=policy, linewidth=2.5 if policy == "adaptive" else 1.2)
    ax.set_xlabel("AUV range from the ship (m); the AUV runs outwards, so also time")
    ax.set_ylabel("goodput (bit/s)")
    ax.set_title(f"Goodput per 500 m bin, {args.seeds} seeds, fading {args.fading}")
    ax.legend()
    ax.grid(True, alpha=0.3)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=100)
    print(f"wrote {out}")


if __name__ == "__main__":
    sys.exit(main())
