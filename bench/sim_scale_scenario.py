"""A scenario YAML with N vehicles in TDMA, for scale benchmarks (start-up, run speed).

N simulated modems on a square grid (`SPACING_M` apart, 20 m deep), one TDMA cycle of N slots of
`SLOT_S` s (vehicle k owns slot k), one navigation message (`to_acomms/nav_status`, broadcast,
latest fix only) per vehicle per cycle, the demo codec config. Spreading loss, fixed noise.

    python bench/sim_scale_scenario.py 32 /tmp/scale32.yaml [--duration 3600] [--warp 10]

`scale_scenario(n, ...)` returns the mapping, `write_scale_scenario(n, path, ...)` writes it.

Modem profile: the Micromodem-2 (the nodes' default) up to 120 vehicles: its broadcast address is
121, so SRC 1..120. More vehicles (or `profile="evologics_s2c"`) use the EvoLogics S2C profile
(broadcast 255, SRC 1..254) on the simulated modems and the MACs, and a copy of the codec config
whose nav message goes to 255 and whose packet header is in the dataframe (S2C packets have no
miniframe). That changes the airtime: an S2C instant message (rate 1) of the
nav message lasts well under 1 s (0.15 s + its bytes at 1000 bit/s) where a Micromodem rate-1
packet lasts seconds; the TDMA slots stay `SLOT_S` long, so the channel is idler, the schedule
(steps, messages) the same in kind.
"""

from __future__ import annotations

import argparse
import math
import pathlib

import yaml

from acomms_sim.physics.geodesy import offset_position

SLOT_S = 8.0
GUARD_S = 2.0
PACKET_LENGTH_S = 5.0
SPACING_M = 500.0
DEPTH_M = 20.0
ORIGIN = (41.52, -70.67)
CODEC_CONFIG = (pathlib.Path(__file__).resolve().parents[1] / "acomms_bringup" / "config"
                / "demo_codecs.yaml")
MICROMODEM, EVOLOGICS = "micromodem2", "evologics_s2c"
BROADCAST = {MICROMODEM: 121, EVOLOGICS: 255}


def default_profile(n: int) -> str:
    """The Micromodem-2 while SRC 1..n stays below its broadcast 121, else the S2C."""
    return MICROMODEM if n < BROADCAST[MICROMODEM] else EVOLOGICS


def codec_config_for(profile: str, folder: pathlib.Path) -> pathlib.Path:
    """The demo codec config, or (S2C) a copy in folder whose broadcasts go to 255."""
    if profile == MICROMODEM:
        return CODEC_CONFIG
    codecs = yaml.safe_load(CODEC_CONFIG.read_text())
    for packet_codec in codecs:  # S2C packets have no miniframe: the header goes in the data
        packet_codec["dataframe_header"] = packet_codec["miniframe_header"]
        packet_codec["miniframe_header"] = []
        for codec in packet_codec["message_codecs"]:
            if codec.get("default_dest") == BROADCAST[MICROMODEM]:
                codec["default_dest"] = BROADCAST[profile]
    path = pathlib.Path(folder) / f"demo_codecs_{profile}.yaml"
    path.write_text(yaml.safe_dump(codecs, sort_keys=False))
    return path


def status_overrides(period_s: float) -> dict:
    """Per-vehicle parameter overrides: queue status, MAC status and modem diagnostics every
    period_s simulated seconds (1 s by default). They are published only while something
    subscribes (a run.mcap recording does): then these timers set a step each period."""
    return {"message_queue_node": {"update_rate": 1.0 / period_s},
            "modem": {"diagnostics_period_s": period_s},
            "mac": {"status_period_seconds": period_s}}


def scale_scenario(n: int, duration_s: float = 3600.0, warp: float = 10.0, seed: int = 1,
                   codec_config: str | pathlib.Path = CODEC_CONFIG,
                   status_period_s: float | None = None, profile: str = MICROMODEM) -> dict:
    """The scenario mapping for n vehicles (v1..vn, SRC 1..n, slot k-1 for vehicle k); with
    status_period_s, the vehicles' status publishers run at that period; with profile
    EVOLOGICS the modems and MACs use that modem profile (codec_config must broadcast to 255:
    `codec_config_for`)."""
    if not 1 <= n < BROADCAST[profile]:
        raise ValueError(f"n: 1..{BROADCAST[profile] - 1} vehicles with the {profile} profile "
                         f"(SRC must stay below its broadcast {BROADCAST[profile]}), got {n}")
    side = math.ceil(math.sqrt(n))
    cycle_s = n * SLOT_S
    vehicles = []
    for k in range(n):
        lat, lon = offset_position(*ORIGIN, SPACING_M * (k // side), SPACING_M * (k % side))
        vehicles.append({
            "name": f"v{k + 1}", "src": k + 1, "modem": {"kind": "sim"},
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
        parameters = {} if status_period_s is None else status_overrides(status_period_s)
        if profile != MICROMODEM:
            for node in ("modem", "mac"):
                parameters.setdefault(node, {})["modem_profile"] = profile
        if parameters:
            vehicles[-1]["parameters"] = parameters
    return {
        "name": f"scale_{n}", "duration_seconds": duration_s, "seed": seed,
        "clock": {"use_sim_time": True, "warp_factor": warp},
        "channel": {"sound_speed_mps": 1500.0, "water_depth_m": 100.0,
                    "noise": {"model": "fixed", "level_db": 60.0},
                    "transmission_loss": {"model": "spreading", "spreading": "practical"}},
        "vehicles": vehicles,
    }


def write_scale_scenario(n: int, path: str | pathlib.Path, profile: str | None = None,
                         **options) -> pathlib.Path:
    """The scenario file (and, S2C, its codec config beside it); profile None: the default for
    n (`default_profile`)."""
    path = pathlib.Path(path)
    profile = profile or default_profile(n)
    codecs = codec_config_for(profile, path.parent)
    path.write_text(yaml.safe_dump(scale_scenario(n, profile=profile, codec_config=codecs,
                                                  **options), sort_keys=False))
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("vehicles", type=int)
    parser.add_argument("path")
    parser.add_argument("--duration", type=float, default=3600.0)
    parser.add_argument("--warp", type=float, default=10.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--profile", choices=sorted(BROADCAST), default=None,
                        help="modem profile (default: micromodem2 up to 120 vehicles, else "
                             "evologics_s2c)")
    arguments = parser.parse_args(argv)
    write_scale_scenario(arguments.vehicles, arguments.path, profile=arguments.profile,
                         duration_s=arguments.duration, warp=arguments.warp, seed=arguments.seed)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
