"""MAC comparison in the deterministic simulator: throughput, collisions and latency vs load.

For each MAC (TDMA, slotted ALOHA as ros_acomms (always transmit), slotted ALOHA with seeded
backoff, polled, carrier sense) and each offered load G (messages per slot time, the whole
network), one `acomms_run --warp max` run: 8 simulated modems 100 m around a centre (everyone hears
everyone), each publishing nav messages (broadcast, LIFO queue of one: a newer fix replaces an
unsent one) as a seeded Poisson process of rate G / (8 * SLOT_S). Every packet is one slot time
(SLOT_S: a rate-1 packet plus guard and propagation) long.

From timeline.csv (every transmission and reception) and messages.csv of each run:
- G_att: transmissions per slot time (the attempt rate the channel saw);
- S: transmissions received without collision by at least one vehicle, per slot time,
  with sigma = sqrt(S (1 - S) / slots);
- collided: transmissions of which some reception was collided;
- mean and p95 latency of the delivered messages (per destination).
- lost: transmissions no vehicle received whole without collision (collided, half duplex, busy).
For slotted ALOHA (no backoff) S is checked against the analytic S = G_att exp(-G_att) (the
infinite-population Poisson model; 8 vehicles give G (1 - G/8)^7, also printed): "ok" when within
2 sigma. One PNG, one curve per MAC, with the analytic curve.

`--layout pair`: two saturated vehicles PAIR_RANGE_M (300 m) apart instead (every MAC always has a
packet: `always_send_test_data`; the load is ignored): how often they destroy each other's packets.
`carrier_sense` hears reception starts (`reception_start`: the channel is busy while a detected
packet arrives); `carrier_sense_end_only` hears a packet only once it ended (before issue 29).

    source env.sh && python bench/mac_comparison.py                        # 1 simulated hour/point
    python bench/mac_comparison.py --duration 900 --loads 0.25 0.5 1 2 --macs aloha tdma
    python bench/mac_comparison.py --layout pair --duration 1800 \
        --macs aloha carrier_sense carrier_sense_end_only
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import pathlib
import subprocess
import sys
import tempfile
import time

import yaml

from acomms_sim.physics.geodesy import offset_position

ROOT = pathlib.Path(__file__).resolve().parents[1]
CODECS = ROOT / "acomms_bringup" / "config" / "demo_codecs.yaml"
VEHICLES = 8
SLOT_S = 8.0          # one packet time: a rate-1 packet (<= 5 s) + guard
GUARD_S = 2.0
PACKET_S = 5.0
RADIUS_M = 100.0
ORIGIN = (41.52, -70.67)
START_S = 10.0        # traffic starts (after start-up); measured from here
TICK_S = 0.5
PAIR_RANGE_M = 300.0

MACS = {
    "tdma": lambda k: {"kind": "tdma", "num_slots": VEHICLES, "active_slots": k},
    "aloha": lambda k: {"kind": "tdma_slotted_aloha", "num_slots": 1, "active_slots": 0,
                        "aloha_slots": 0, "allow_aloha_slots_only": True},
    "aloha_backoff": lambda k: {"kind": "tdma_slotted_aloha", "num_slots": 1, "active_slots": 0,
                                "aloha_slots": 0, "allow_aloha_slots_only": True,
                                "aloha_transmit_probability": 0.5, "random_seed": 3},
    "polled": lambda k: {"kind": "polled", "poll_list": ", ".join(
        f"{src}:{SLOT_S:g}" for src in range(1, VEHICLES + 1))},
    "carrier_sense": lambda k: {"kind": "carrier_sense", "sense_quiet_seconds": 0.5,
                                "backoff_max_seconds": 6.0, "random_seed": 3,
                                "sense_source": "reception_events"},
    "carrier_sense_end_only": lambda k: {"kind": "carrier_sense", "sense_quiet_seconds": 0.5,
                                         "backoff_max_seconds": 6.0, "random_seed": 3,
                                         "sense_source": "reception_events",
                                         "sense_reception_start": False},
}
SLOTTED = {"tdma", "aloha", "aloha_backoff"}


def mac_section(mac: str, k: int) -> dict:
    section = {**MACS[mac](k), "guard_time_seconds": GUARD_S, "packet_length_seconds": PACKET_S,
               "miniframe_rate": 1, "dataframe_rate": 1, "tick_period_seconds": TICK_S}
    if section["kind"] != "carrier_sense" and section["kind"] != "polled":
        section.update(slot_duration_seconds=SLOT_S, cycle_start_time=0)
    if section["kind"] == "polled":
        section["cycle_start_time"] = 0
    return section


def scenario(mac: str, load: float, duration_s: float, seed: int, layout: str = "ring") -> dict:
    mean_interval_s = VEHICLES * SLOT_S / load
    vehicles = []
    count = 2 if layout == "pair" else VEHICLES
    for k in range(count):
        angle = 2 * math.pi * k / VEHICLES
        north, east = (PAIR_RANGE_M * k, 0.0) if layout == "pair" else (
            RADIUS_M * math.cos(angle), RADIUS_M * math.sin(angle))
        lat, lon = offset_position(*ORIGIN, north, east)
        vehicle = {
            "name": f"v{k + 1}", "src": k + 1, "modem": {"kind": "sim"},
            "position": {"latitude": round(lat, 7), "longitude": round(lon, 7), "depth": 20.0},
            "mac": mac_section(mac, k), "codec_config": str(CODECS),
            "traffic": [{"topic": "to_acomms/nav_status", "period_seconds": mean_interval_s,
                         "start_seconds": START_S, "arrivals": "poisson",
                         "fields": {"latitude": round(lat, 5), "longitude": round(lon, 5),
                                    "altitude": -20.0}}]}
        if layout == "pair":  # saturated: a test packet whenever the MAC may send
            vehicle["mac"]["always_send_test_data"] = True
            del vehicle["traffic"]
        vehicles.append(vehicle)
    return {"name": f"mac_{layout}_{mac}_{load:g}".replace(".", "p"),
            "duration_seconds": START_S + duration_s,
            "seed": seed, "clock": {"use_sim_time": True, "warp_factor": 10.0},
            "channel": {"sound_speed_mps": 1500.0, "water_depth_m": 100.0,
                        "noise": {"model": "fixed", "level_db": 60.0},
                        "transmission_loss": {"model": "spreading", "spreading": "practical"}},
            "vehicles": vehicles}


def run(mac: str, load: float, args, tmp: pathlib.Path) -> dict:
    out = tmp / f"{mac}_{load:g}"
    path = tmp / f"{mac}_{load:g}.yaml"
    path.write_text(yaml.safe_dump(scenario(mac, load, args.duration, args.seed, args.layout),
                                   sort_keys=False))
    env = dict(os.environ, ROS_DOMAIN_ID=str(args.domain),
               ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST")
    started = time.monotonic()
    result = subprocess.run(["acomms_run", str(path), "--warp", "max", "--out", str(out),
                             "--quiet", "--step-timeout", str(args.step_timeout)],
                            env=env, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"{mac} G={load}: acomms_run exited {result.returncode}:\n"
                           f"{(result.stdout + result.stderr)[-2000:]}")
    return {"wall_s": time.monotonic() - started, **measure(out, args.duration)}


def measure(out: pathlib.Path, duration_s: float) -> dict:
    with open(out / "timeline.csv", newline="") as stream:
        rows = list(csv.DictReader(stream))
    tx = [r for r in rows if r["kind"] == "tx" and float(r["start_s"]) >= START_S]
    rx = [r for r in rows if r["kind"] == "rx"]
    by_src: dict[str, list[dict]] = {}
    for r in rx:
        by_src.setdefault(r["src"], []).append(r)
    good = collided = 0
    for t in tx:
        start, end = float(t["start_s"]), float(t["end_s"])
        heard = [r for r in by_src.get(t["src"], [])
                 if start <= float(r["start_s"]) < start + 1.0 and float(r["end_s"]) > end - 0.01]
        if any(r["collided"] == "True" for r in heard):
            collided += 1
        if any(r["outcome"] in ("received", "partial") and r["collided"] != "True"
               for r in heard):
            good += 1
    slots = duration_s / SLOT_S
    s = good / slots
    with open(out / "messages.csv", newline="") as stream:
        latencies = sorted(float(m["latency_s"]) for m in csv.DictReader(stream)
                           if m["latency_s"])
    summary = json.loads((out / "summary.json").read_text())
    return {"slots": slots, "g_att": len(tx) / slots, "s": s,
            "sigma": math.sqrt(max(s * (1 - s), 1e-12) / slots), "collided": collided,
            "lost": len(tx) - good, "tx": len(tx),
            "latency_mean_s": sum(latencies) / len(latencies) if latencies else None,
            "latency_p95_s": latencies[int(0.95 * (len(latencies) - 1))] if latencies else None,
            "ratio": summary.get("sim_wall_ratio")}


def analytic(g: float) -> float:
    return g * math.exp(-g)


def finite(g: float, n: int = VEHICLES) -> float:
    return g * (1 - g / n) ** (n - 1) if g <= n else 0.0


def plot(results: dict, path: pathlib.Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5))
    for mac, points in results.items():
        loads = sorted(points)
        left.errorbar(loads, [points[g]["s"] for g in loads],
                      yerr=[2 * points[g]["sigma"] for g in loads], marker="o", capsize=3,
                      label=mac)
        lat = [(g, points[g]["latency_mean_s"]) for g in loads if points[g]["latency_mean_s"]]
        right.plot([g for g, _ in lat], [v for _, v in lat], "o-", label=mac)
    grid = [0.02 * i for i in range(1, 101)]
    left.plot(grid, [analytic(g) for g in grid], "k--", label="S = G e^-G")
    if "aloha" in results:
        points = results["aloha"]
        left.plot([points[g]["g_att"] for g in sorted(points)],
                  [points[g]["s"] for g in sorted(points)], "kx", label="aloha at measured G_att")
    left.set_xlabel("offered load G (messages per slot time)")
    left.set_ylabel("throughput S (packets without collision per slot time)")
    left.legend(fontsize=8)
    right.set_xlabel("offered load G")
    right.set_ylabel("mean latency, s")
    right.set_yscale("log")
    right.legend(fontsize=8)
    fig.suptitle(f"{VEHICLES} vehicles, Poisson nav traffic, deterministic simulator")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--macs", nargs="*", default=list(MACS), choices=list(MACS))
    parser.add_argument("--loads", nargs="*", type=float,
                        default=[0.1, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0])
    parser.add_argument("--duration", type=float, default=3600.0, help="simulated s per point")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--layout", choices=("ring", "pair"), default="ring",
                        help="ring: 8 vehicles 100 m around a centre, Poisson traffic; pair: two "
                             "saturated vehicles 300 m apart (one point per MAC)")
    parser.add_argument("--domain", type=int, default=201, help="ROS_DOMAIN_ID of the runs")
    parser.add_argument("--step-timeout", type=float, default=300.0,
                        help="acomms_run --step-timeout, wall s (a loaded machine is slow)")
    parser.add_argument("--png", default="acomms_demo_out/mac_comparison.png")
    parser.add_argument("--json", default=None, help="also write the numbers here")
    args = parser.parse_args()
    if args.layout == "pair":
        args.loads = args.loads[:1]
    header = ("MAC", "G", "G_att", "S", "2sigma", "collided", "lost", "tx", "lat mean", "lat p95",
              "wall s", "S_analytic", "S_8", "check")
    print("  ".join(f"{h:>13}" for h in header), flush=True)
    results: dict[str, dict[float, dict]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for mac in args.macs:
            for load in args.loads:
                try:
                    row = run(mac, load, args, pathlib.Path(tmp))
                except RuntimeError as exc:  # one failed point must not lose the others
                    print(f"{mac} G={load}: FAILED: {str(exc).splitlines()[0]}", flush=True)
                    continue
                results.setdefault(mac, {})[load] = row
                expected = analytic(row["g_att"])
                check = "-"
                if mac == "aloha" and args.layout == "ring":
                    check = "ok" if abs(row["s"] - expected) <= 2 * row["sigma"] else "OUTSIDE"
                values = (mac, load, f"{row['g_att']:.3f}", f"{row['s']:.3f}",
                          f"{2 * row['sigma']:.3f}", row["collided"], row["lost"], row["tx"],
                          _fmt(row["latency_mean_s"]), _fmt(row["latency_p95_s"]),
                          f"{row['wall_s']:.0f}", f"{expected:.3f}",
                          f"{finite(row['g_att']):.3f}", check)
                print("  ".join(f"{v!s:>13}" for v in values), flush=True)
    plot(results, pathlib.Path(args.png))
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(
            {mac: {str(g): r for g, r in points.items()} for mac, points in results.items()},
            indent=1))
    print(f"wrote {args.png}")
    return 0


def _fmt(value) -> str:
    return "-" if value is None else f"{value:.1f}"


if __name__ == "__main__":
    sys.exit(main())
