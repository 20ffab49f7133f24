"""Packet error rate vs range for Micromodem rates 1, 3 and 5: Monte Carlo through the simulator's
receiver (acomms_sim.physics.channel, seeded) with and without Rayleigh fading, beside the
analytic curve the model implies; and the Rayleigh outage check at 10 dB mean margin.

    .venv/bin/python bench/per_vs_range.py [--packets 600] [--out acomms_demo_out/per_vs_range.png]
        [--delay-spread-ms 0 --isi-tolerance-ms 0]

Channel (defaults = the library's): practical spreading + Francois-Garrison absorption at 10 °C,
Wenz noise (shipping 0.5, wind 5 m/s) in a 5 kHz band at 10 kHz, source level of txlevel 3
(165 dB, modem profile), both modems at 20 m depth, full FDP packets (miniframe + every frame).
Analytic: PER(SNR) = 1 − (1 − FER_mini(SNR))·(1 − FER_data(SNR))^frames with the FER tables;
with fading the same averaged over the exponential power gain g (E[g] = 1):
PER_fading = ∫ PER(SNR + 10·log10 g)·e^(−g) dg.
With --delay-spread-ms τ and --isi-tolerance-ms T (every rate), the power arriving later than T of
an exponential delay profile, f = exp(−T/τ), is self-noise (acomms_sim.physics.multipath): the
analytic curves use SINR = S(1 − f)/(N + S·f) in place of S/N (fading scales S in both terms).

Two scenarios follow the sweep (`--scenarios-only` prints just them):
- back to back: a sender (SimModem) queues three full packets at once, so each starts exactly when
  the previous ends; over ranges, rates 1/3/5 and start times, how many arrive `received` and how
  many are `busy` or marked collided (expected: all received, none collided).
- two carriers: a 10 kHz receiver hears a 10 kHz sender and, at the same time, a 12.4 kHz sender
  (52 % of its band inside ours) at the same range; how often the 12.4 kHz packet is decoded
  (expected 0: not our carrier) and the 10 kHz packet's PER and SINR with and without it.
"""

from __future__ import annotations

import argparse
import math
import pathlib
import sys
import time

import numpy as np

from acomms_core.modems.micromodem2 import MICROMODEM2
from acomms_core.modems.modem_rates import rate_info
from acomms_sim.physics import geodesy
from acomms_sim.physics.ambient_noise import AmbientNoise
from acomms_sim.physics.channel import ReceiverChannel, Transmission, band_overlap_fraction
from acomms_sim.physics.fading import FadingModel
from acomms_sim.physics.multipath import late_power_fraction, sinr_with_isi_db
from acomms_sim.physics.packet_performance import PacketPerformance, frame_error_rate
from acomms_sim.physics.sound_speed import SoundSpeedProfile
from acomms_sim.physics.transmission_loss import Propagation, SpreadingModel

ORIGIN = (41.5, -70.7)
DEPTH_M = 20.0
FC, BW = 10000.0, 5000.0
RATES = (1, 3, 5)
SOURCE_LEVEL_DB = MICROMODEM2.source_level_db(3, FC)
# multipath (set from the command line): RMS delay spread and the rates' ISI tolerance, s
MULTIPATH = {"delay_spread_s": 0.0, "isi_tolerance_s": 0.0}


def make_channel(seed: int, fading: FadingModel) -> ReceiverChannel:
    propagation = Propagation(SpreadingModel(delay_spread_s=MULTIPATH["delay_spread_s"]),
                              SoundSpeedProfile.mackenzie(10.0, 35.0, 100.0))
    tolerance = MULTIPATH["isi_tolerance_s"]
    return ReceiverChannel(propagation, AmbientNoise(), PacketPerformance([seed, 2]), FC, BW,
                           fading=fading,
                           isi_tolerance_s={r: tolerance for r in RATES} if tolerance else None)


def transmission(rate: int, start_s: float, range_m: float) -> Transmission:
    lat, lon = geodesy.offset_position(*ORIGIN, range_m, 0.0)
    info = rate_info(rate)
    return Transmission(1, start_s, lat, lon, DEPTH_M, SOURCE_LEVEL_DB, FC, BW, True, rate, rate,
                        72, info.max_dataframe_bytes)


def mean_snr_db(range_m: float) -> float:
    channel = make_channel(0, FadingModel())
    arrival = channel.add_transmission(transmission(1, 0.0, range_m), (*ORIGIN, DEPTH_M))
    return arrival.receive_level_db - channel.noise.band_level_db(FC, BW)


def isi_snr_db(snr_db: float) -> float:
    """The frame SINR the model gives at this SNR with the configured multipath."""
    late = late_power_fraction(MULTIPATH["delay_spread_s"], MULTIPATH["isi_tolerance_s"])
    return snr_db if late == 0.0 else sinr_with_isi_db(10.0 ** (snr_db / 10.0), 1.0, late)


def analytic_per(rate: int, snr_db: float) -> float:
    frames = rate_info(rate).frames
    ok = (1 - frame_error_rate(rate, isi_snr_db(snr_db))) ** (frames + 1)
    return 1.0 - ok


# g = −ln(1 − u) with u uniform is exponential: PER_fading = ∫₀¹ PER(SNR + 10·log10 g(u)) du,
# integrated with the midpoint rule on u (exact weighting, fine near deep fades).
_U = (np.arange(4000) + 0.5) / 4000
_GAIN_DB = 10.0 * np.log10(-np.log1p(-_U))


def analytic_per_fading(rate: int, snr_db: float) -> float:
    return float(np.mean([analytic_per(rate, snr_db + g) for g in _GAIN_DB]))


def monte_carlo(rate: int, range_m: float, packets: int, fading: FadingModel,
                seed: int) -> float:
    channel = make_channel(seed, fading)
    lost = 0
    step = 10.0
    for i in range(packets):
        channel.add_transmission(transmission(rate, i * step, range_m), (*ORIGIN, DEPTH_M))
        for reception in channel.pop_due(i * step + step - 0.01):
            lost += not (reception.outcome == "received" and reception.frames.packet_success)
    for reception in channel.pop_due(math.inf):  # the ones still in flight (long delays)
        lost += not (reception.outcome == "received" and reception.frames.packet_success)
    return lost / packets


def range_for_snr(target_db: float) -> float:
    low, high = 10.0, 200_000.0
    for _ in range(60):
        mid = math.sqrt(low * high)
        low, high = (mid, high) if mean_snr_db(mid) > target_db else (low, mid)
    return math.sqrt(low * high)


def outage_check(packets: int, seed: int) -> dict:
    """Rate 1, Rayleigh, mean SNR 10 dB above the SNR at which a packet fails half the time."""
    grid = np.arange(-10.0, -5.0, 0.001)
    threshold = float(grid[np.argmin([abs(analytic_per(1, s) - 0.5) for s in grid])])
    mean = threshold + 10.0
    range_m = range_for_snr(mean)
    measured = monte_carlo(1, range_m, packets, FadingModel("rayleigh"), seed)
    exact = analytic_per_fading(1, mean)
    outage = FadingModel("rayleigh").outage_probability(10.0)
    sigma = math.sqrt(exact * (1 - exact) / packets)
    return {"threshold_snr_db": threshold, "mean_snr_db": mean, "range_m": range_m,
            "measured": measured, "analytic": exact, "outage_1_minus_exp": outage,
            "sigma": sigma, "within_2_sigma": abs(measured - exact) <= 2 * sigma}


def _sim_modem(src: int, north_m: float):
    from acomms_sim.modem.sim_modem import SimModem, SimModemConfig
    propagation = Propagation(SpreadingModel(), SoundSpeedProfile.mackenzie(20.0, 35.0, 100.0))
    modem = SimModem(SimModemConfig(src), propagation, AmbientNoise(), seed=3,
                     profile=MICROMODEM2)
    modem.set_position(*geodesy.offset_position(*ORIGIN, north_m, 0.0), DEPTH_M)
    return modem


def back_to_back_once(rate: int, range_m: float, start_s: float) -> list:
    """Three full packets queued at start_s; the receiver's reception events."""
    from acomms_core.modems.profile import PACKET_TYPE_FDP
    from acomms_sim.modem.fields import ModemPacket, ReceptionEvent
    sender, receiver = _sim_modem(1, 0.0), _sim_modem(2, range_m)
    packet = ModemPacket(0, 2, PACKET_TYPE_FDP, rate, rate, bytes(72),
                         bytes(rate_info(rate).max_dataframe_bytes))
    for _ in range(3):
        for event in sender.queue_packet(packet, start_s).events:
            receiver.on_channel_packet(event.channel_packet, start_s)
    now = start_s
    while sender.next_event_time_s() is not None:
        now = sender.next_event_time_s()
        for event in sender.advance(now):
            receiver.on_channel_packet(event.channel_packet, now)
    events = receiver.advance(start_s + 120.0)
    return [e for e in events if isinstance(e, ReceptionEvent)]


def back_to_back_scenario() -> dict:
    ranges = (500.0, 1000.0, 2000.0, 3000.0, 4000.0, 6000.0)
    starts = (0.1, 12.3, 1735689600.1)  # the last: the simulated clock's absolute start
    totals = {"layouts": 0, "packets": 0, "received": 0, "busy": 0, "collided": 0,
              "layouts_losing": 0}
    for rate in RATES:
        for range_m in ranges:
            for start in starts:
                receptions = back_to_back_once(rate, range_m, start)
                received = sum(r.outcome == "received" for r in receptions)
                totals["layouts"] += 1
                totals["packets"] += 3
                totals["received"] += received
                totals["busy"] += sum(r.outcome == "busy" for r in receptions)
                totals["collided"] += sum(r.collided for r in receptions)
                totals["layouts_losing"] += received < 3
    return totals


def two_carrier_run(rate: int, packets: int, seed: int, range_m: float,
                    carriers: tuple[float, ...]) -> dict:
    """Packets sent at once on these carriers from range_m to a 10 kHz receiver (src 1 on our
    carrier, the others src 3): our PER and SINR, and how many others were decoded."""
    channel = make_channel(seed, FadingModel())
    lost = decoded_other = ours = 0
    snrs = []
    for i in range(packets):
        start = i * 10.0
        for fc in carriers:
            lat, lon = geodesy.offset_position(*ORIGIN, 0.0, range_m)
            channel.add_transmission(Transmission(
                1 if fc == FC else 3, start, lat, lon, DEPTH_M, SOURCE_LEVEL_DB, fc, BW, True,
                rate, rate, 72, rate_info(rate).max_dataframe_bytes), (*ORIGIN, DEPTH_M))
        for reception in channel.pop_due(start + 9.99):
            ok = reception.outcome == "received" and reception.frames.packet_success
            if reception.arrival.transmission.src == 3:
                decoded_other += ok
                continue
            ours += 1
            snrs.append(reception.snr_db)
            lost += not ok
    return {"per": lost / ours if ours else math.nan,
            "snr_db": float(np.mean(snrs)) if snrs else math.nan,
            "decoded_other": decoded_other}


def two_carrier_scenario(rate: int, packets: int, seed: int, range_m: float = 4000.0) -> dict:
    """10 kHz receiver: the 12.4 kHz packet alone, ours alone, both sent at once."""
    other_fc = 12400.0
    return {"range_m": range_m, "other_fc": other_fc,
            "other_alone": two_carrier_run(rate, packets, seed, range_m, (other_fc,)),
            "alone": two_carrier_run(rate, packets, seed, range_m, (FC,)),
            "with_other": two_carrier_run(rate, packets, seed, range_m, (FC, other_fc)),
            "band_share": band_overlap_fraction(other_fc, BW, FC, BW)}


def print_scenarios(packets: int, seed: int) -> None:
    b2b = back_to_back_scenario()
    print(f"back to back (3 full packets queued at once; rates 1/3/5, 6 ranges 0.5-6 km, 3 start "
          f"times): {b2b['layouts']} layouts, {b2b['received']}/{b2b['packets']} received, "
          f"{b2b['busy']} busy, {b2b['collided']} marked collided, "
          f"{b2b['layouts_losing']} layouts losing a packet")
    for rate in (1, 5):
        two = two_carrier_scenario(rate, packets, seed)
        alone, both = two["alone"], two["with_other"]
        print(f"two carriers (10 kHz receiver, {two['other_fc']:.0f} Hz sender at the same "
              f"{two['range_m']:.0f} m, {two['band_share']:.0%} of its band in ours; rate "
              f"{rate}, {packets} packets): {two['other_fc']:.0f} Hz packets decoded "
              f"{two['other_alone']['decoded_other']} (sent alone); 10 kHz PER "
              f"{alone['per']:.3f} alone, {both['per']:.3f} with it; mean SINR "
              f"{alone['snr_db']:.1f} dB alone, {both['snr_db']:.1f} dB with it")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--packets", type=int, default=600, help="packets per point")
    parser.add_argument("--outage-packets", type=int, default=4000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", default="acomms_demo_out/per_vs_range.png")
    parser.add_argument("--delay-spread-ms", type=float, default=0.0,
                        help="multipath RMS delay spread of every path, ms")
    parser.add_argument("--isi-tolerance-ms", type=float, default=0.0,
                        help="delay spread every rate tolerates (0: no ISI penalty), ms")
    parser.add_argument("--ranges", type=int, default=12, help="range points (2-40 km)")
    parser.add_argument("--scenarios-only", action="store_true",
                        help="only the back-to-back and two-carrier scenarios")
    args = parser.parse_args(argv)
    if args.scenarios_only:
        print_scenarios(args.packets, args.seed)
        return 0
    MULTIPATH.update(delay_spread_s=args.delay_spread_ms / 1000.0,
                     isi_tolerance_s=args.isi_tolerance_ms / 1000.0)
    started = time.perf_counter()
    ranges = np.geomspace(2000.0, 40000.0, args.ranges)
    curves = {}
    print(f"source level {SOURCE_LEVEL_DB:.0f} dB (txlevel 3, 10 kHz), noise "
          f"{AmbientNoise().band_level_db(FC, BW):.1f} dB in band, {args.packets} packets/point, "
          f"delay spread {args.delay_spread_ms:g} ms, ISI tolerance {args.isi_tolerance_ms:g} ms")
    print(f"{'range_m':>8} {'snr_db':>7} " + " ".join(
        f"{f'r{r} mc/an':>13} {f'r{r} fad mc/an':>15}" for r in RATES))
    for range_m in ranges:
        snr = mean_snr_db(range_m)
        row = [f"{range_m:8.0f} {snr:7.2f}"]
        for rate in RATES:
            values = (monte_carlo(rate, range_m, args.packets, FadingModel(), args.seed),
                      analytic_per(rate, snr),
                      monte_carlo(rate, range_m, args.packets, FadingModel("rayleigh"),
                                  args.seed),
                      analytic_per_fading(rate, snr))
            curves.setdefault(rate, []).append(values)
            row.append(f"{values[0]:6.3f}/{values[1]:6.3f} {values[2]:7.3f}/{values[3]:6.3f}")
        print(" ".join(row))
    check = outage_check(args.outage_packets, args.seed)
    print(f"Rayleigh, rate 1, 10 dB mean margin (50% point {check['threshold_snr_db']:.2f} dB, "
          f"mean {check['mean_snr_db']:.2f} dB at {check['range_m']:.0f} m): measured PER "
          f"{check['measured']:.4f}, analytic {check['analytic']:.4f} (1-exp(-0.1) = "
          f"{check['outage_1_minus_exp']:.4f}), sigma {check['sigma']:.4f}: "
          f"{'within' if check['within_2_sigma'] else 'OUTSIDE'} 2 sigma")
    print_scenarios(args.packets, args.seed)
    print(f"wall {time.perf_counter() - started:.1f} s")
    plot(ranges, curves, pathlib.Path(args.out))
    return 0 if check["within_2_sigma"] else 1


def plot(ranges, curves, out: pathlib.Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(8, 5))
    for (rate, values), color in zip(curves.items(), ("C0", "C1", "C2"), strict=True):
        v = np.array(values)
        ax.plot(ranges, v[:, 1], "-", color=color, label=f"rate {rate} analytic")
        ax.plot(ranges, v[:, 0], "o", color=color, label=f"rate {rate} Monte Carlo")
        ax.plot(ranges, v[:, 3], "--", color=color, label=f"rate {rate} Rayleigh analytic")
        ax.plot(ranges, v[:, 2], "x", color=color, label=f"rate {rate} Rayleigh Monte Carlo")
    ax.set_xscale("log")
    ax.set_xlabel("range (m)")
    ax.set_ylabel("packet error rate")
    ax.set_title(f"PER vs range, SL {SOURCE_LEVEL_DB:.0f} dB, 10 kHz")
    ax.legend(fontsize=7, ncol=2)
    ax.grid(True, which="both", alpha=0.3)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=100)
    print(f"wrote {out}")


if __name__ == "__main__":
    sys.exit(main())
