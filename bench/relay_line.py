"""Relay line (issue 32): topside→AUV commands with and without the gateway relaying.

Runs `acomms_run acomms_bringup/config/relay_line.yaml --warp max` for each seed twice: as
shipped (the gateway relays) and with the gateway's `relay:` section removed (direct only; the
topside and the AUV are 10 km apart, out of range). From each run's messages.csv it counts the
topside's commands to the AUV that were delivered (the first arrival, latency = arrival −
publish time) and, from summary.json, how many commands the AUV published again (duplicates;
the target is 0).

    source env.sh && python bench/relay_line.py                     # 3 seeds, 600 s each
    python bench/relay_line.py --seeds 1 2 3 4 5 --duration 1200
    python bench/relay_line.py --mac aloha      # or polled: every vehicle's MAC replaced
    python bench/relay_line.py --fading         # Rayleigh fading on every link
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile

import yaml

ROOT = pathlib.Path(__file__).resolve().parents[1]
SCENARIO = ROOT / "acomms_bringup" / "config" / "relay_line.yaml"
TOPIC = "to_acomms/command"
SLOT_S = 20.0
# The MAC of every vehicle per --mac (the scenario's own TDMA: topside, gateway, AUV slots).
MACS = {
    "tdma": None,
    "aloha": lambda src: {"kind": "tdma_slotted_aloha", "num_slots": 1, "active_slots": 0,
                          "aloha_slots": 0, "allow_aloha_slots_only": True,
                          "aloha_transmit_probability": 0.5, "random_seed": src,
                          "slot_duration_seconds": SLOT_S},
    "polled": lambda src: {"kind": "polled", "cycle_start_time": 0,
                           "poll_list": ", ".join(f"{s}:{SLOT_S:g}" for s in (3, 2, 1))},
}


def scenario(seed: int, relay: bool, mac: str = "tdma", fading: bool = False) -> dict:
    data = yaml.safe_load(SCENARIO.read_text())
    data["seed"] = seed
    if fading:
        data["channel"]["fading"] = {"model": "rayleigh", "coherence_time_s": 1.5}
    for vehicle in data["vehicles"]:
        vehicle["codec_config"] = str(SCENARIO.parent / vehicle["codec_config"])
        if not relay:
            vehicle.pop("relay", None)
        if MACS[mac] is not None:
            vehicle["mac"] = {**MACS[mac](vehicle["src"]), "guard_time_seconds": 8.0,
                              "packet_length_seconds": 5.0, "miniframe_rate": 1,
                              "dataframe_rate": 1}
    return data


def commands(out: pathlib.Path) -> dict:
    """Sent / delivered topside→AUV commands and their latencies, from messages.csv."""
    with open(out / "messages.csv", newline="") as stream:
        rows = [r for r in csv.DictReader(stream)
                if r["source"] == "topside" and r["topic"].endswith(TOPIC)
                and r["destination"] == "auv"]
    delivered = [r for r in rows if r["fate"] == "delivered"]
    return {"sent": len(rows), "delivered": len(delivered),
            "latencies": [float(r["latency_s"]) for r in delivered]}


def duplicates(out: pathlib.Path) -> int:
    """Arrivals of a command the AUV had already published (summary.json `duplicates`)."""
    summary = json.loads((out / "summary.json").read_text())
    return sum(count for label, count in summary["duplicates"].items() if label.endswith(" auv"))


def run(seed: int, relay: bool, args, tmp: pathlib.Path) -> dict:
    name = f"{args.mac}_{'relay' if relay else 'direct'}_{seed}"
    path, out = tmp / f"{name}.yaml", tmp / name
    path.write_text(yaml.safe_dump(scenario(seed, relay, args.mac, args.fading), sort_keys=False))
    duration = args.duration
    command = ["acomms_run", str(path), "--warp", "max", "--no-mcap", "--quiet", "--out",
               str(out)]
    if duration:
        command += ["--duration", str(duration)]
    result = subprocess.run(command, capture_output=True, text=True,
                            env=dict(os.environ, ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST"))
    if result.returncode != 0:
        raise RuntimeError(f"{name}: acomms_run exited {result.returncode}:\n"
                           f"{(result.stdout + result.stderr)[-2000:]}")
    return {**commands(out), "duplicates": duplicates(out)}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--duration", type=float, default=None,
                        help="simulated seconds per run (default: the scenario's)")
    parser.add_argument("--mac", choices=sorted(MACS), default="tdma",
                        help="every vehicle's MAC (default: the scenario's TDMA)")
    parser.add_argument("--fading", action="store_true",
                        help="Rayleigh fading per frame (1.5 s coherence), as the demo's channel")
    args = parser.parse_args(argv)
    print(f"relay_line, {args.mac}{', rayleigh fading' if args.fading else ''}, "
          f"seeds {args.seeds}")
    print(f"{'mode':8} {'seeds':>5} {'sent':>5} {'delivered':>9} {'ratio':>7} "
          f"{'latency mean s':>14} {'p95 s':>7} {'duplicates':>10}")
    with tempfile.TemporaryDirectory(prefix="relay_line_") as tmp:
        for relay in (True, False):
            runs = [run(seed, relay, args, pathlib.Path(tmp)) for seed in args.seeds]
            sent = sum(r["sent"] for r in runs)
            delivered = sum(r["delivered"] for r in runs)
            latencies = sorted(x for r in runs for x in r["latencies"])
            mean = f"{statistics.fmean(latencies):.1f}" if latencies else "-"
            p95 = f"{latencies[int(0.95 * (len(latencies) - 1))]:.1f}" if latencies else "-"
            ratio = delivered / sent if sent else 0.0
            print(f"{'relay' if relay else 'direct':8} {len(runs):>5} {sent:>5} {delivered:>9} "
                  f"{ratio:>7.1%} {mean:>14} {p95:>7} {sum(r['duplicates'] for r in runs):>10}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
