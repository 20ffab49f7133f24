"""A scenario YAML with N vehicles in TDMA, for scale benchmarks (start-up, run speed).

N simulated modems on a square grid (`SPACING_M` apart, 20 m deep), one TDMA cycle of N slots of
`SLOT_S` s (vehicle k owns slot k), one navigation message (`to_acomms/nav_status`, broadcast,
latest fix only) per vehicle per cycle, the demo codec config. Spreading loss, fixed noise.

    python bench/sim_scale_scenario.py 32 /tmp/scale32.yaml [--duration 3600] [--warp 10]

`scale_scenario(n, ...)` returns the mapping, `write_scale_scenario(n, path, ...)` writes it.
"""

from __future__ import annotations

import argparse
import math
import pathlib

import yaml

from acomms_sim.physics.geodesy import offset_position

SLOT_S = 8.0
BROADCAST = 121  # the sim modem's (micromodem profile) broadcast address: no vehicle's SRC
MAX_VEHICLES = 128
GUARD_S = 2.0
PACKET_LENGTH_S = 5.0
SPACING_M = 500.0
DEPTH_M = 20.0
ORIGIN = (41.52, -70.67)
CODEC_CONFIG = (pathlib.Path(__file__).resolve().parents[1] / "acomms_bringup" / "config"
                / "demo_codecs.yaml")


def status_overrides(period_s: float) -> dict:
    """Per-vehicle parameter overrides: queue status, MAC status and modem diagnostics every
    period_s simulated seconds (1 s by default). They are published only while something
    subscribes (a run.mcap recording does): then these timers set a step each period."""
    return {"message_queue_node": {"update_rate": 1.0 / period_s},
            "modem": {"diagnostics_period_s": period_s},
            "mac": {"status_period_seconds": period_s}}


def scale_scenario(n: int, duration_s: float = 3600.0, warp: float = 10.0, seed: int = 1,
                   codec_config: str | pathlib.Path = CODEC_CONFIG,
                   status_period_s: float | None = None) -> dict:
    """The scenario mapping for n vehicles (v1..vn, SRC 1..n but the broadcast address 121
    skipped: v121 has SRC 122; slot k-1 for vehicle k); with status_period_s, the vehicles'
    status publishers run at that period."""
    if not 1 <= n <= MAX_VEHICLES:
        raise ValueError(f"n: 1..{MAX_VEHICLES} vehicles, got {n}")
    side = math.ceil(math.sqrt(n))
    cycle_s = n * SLOT_S
    vehicles = []
    for k in range(n):
        lat, lon = offset_position(*ORIGIN, SPACING_M * (k // side), SPACING_M * (k % side))
        vehicles.append({
            "name": f"v{k + 1}", "src": k + 1 if k + 1 < BROADCAST else k + 2,
            "modem": {"kind": "sim"},
            "position": {"latitude": round(lat, 6), "longitude": round(lon, 6),
                         "depth": DEPTH_M},
            "mac": {"kind": "tdma", "num_slots": n, "slot_duration_seconds": SLOT_S,
                    "active_slots": k, "guard_time_seconds": GUARD_S,
                    "packet_length_seconds": PACKET_LENGTH_S,
                    "miniframe_rate": 1, "dataframe_rate": 1},
            "codec_config": str(codec_config),
            "traffic": [{"topic": "to_acomms/nav_status", "period_seconds": cycle_s,
                         "start_seconds": 1.0,
                         "fields": {"latitude": round(lat, 5), "longitude": round(lon, 5),
                                    "altitude": -DEPTH_M}}],
        })
        if status_period_s is not None:
            vehicles[-1]["parameters"] = status_overrides(status_period_s)
    return {
        "name": f"scale_{n}", "duration_seconds": duration_s, "seed": seed,
        "clock": {"use_sim_time": True, "warp_factor": warp},
        "channel": {"sound_speed_mps": 1500.0, "water_depth_m": 100.0,
                    "noise": {"model": "fixed", "level_db": 60.0},
                    "transmission_loss": {"model": "spreading", "spreading": "practical"}},
        "vehicles": vehicles,
    }


def write_scale_scenario(n: int, path: str | pathlib.Path, **options) -> pathlib.Path:
    path = pathlib.Path(path)
    path.write_text(yaml.safe_dump(scale_scenario(n, **options), sort_keys=False))
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("vehicles", type=int)
    parser.add_argument("path")
    parser.add_argument("--duration", type=float, default=3600.0)
    parser.add_argument("--warp", type=float, default=10.0)
    parser.add_argument("--seed", type=int, default=1)
    arguments = parser.parse_args(argv)
    write_scale_scenario(arguments.vehicles, arguments.path, duration_s=arguments.duration,
                         warp=arguments.warp, seed=arguments.seed)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
