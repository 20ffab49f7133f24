"""Horizontal error of the topside's USBL -> 'U' position against truth, per range (ROS-free).

A ship at a fixed GPS position and heading, its USBL head on a lever arm; the AUV at horizontal
ranges 100 m - 2 km, several bearings and depths. Each fix: the relative position seen from the
head -> the seeded USBL error model (acomms_sim.emulator.usbl_errors) -> usbl_position (the
bridge's computation) -> WGS84 geodesic distance from the truth. Prints, per range bin, the mean,
the 95th-percentile and the RMS horizontal error beside the RMS the error model implies
(range error along the horizontal, r*bearing across, r*elevation*sin(elevation) along), and the
model's reported 3-D one-sigma accuracy; writes a PNG. Run:

    source env.sh && python bench/usbl_accuracy.py [--fixes 100] [--seed 1]
        [--out acomms_demo_out/usbl_accuracy.png]

`--run DIR` instead reads a finished run of config/cola2_usbl.yaml (or `--scenario FILE` with the
same vehicle names, auv and ship): the 'U' positions the AUV received against its true track at
each fix time (acomms_bringup.run.usbl_run_errors), and prints per range bin the mean and 95th
percentile horizontal error beside the RMS the ship's `usbl` error model implies:

    acomms_run acomms_bringup/config/cola2_usbl.yaml --out /tmp/usbl_run
    python bench/usbl_accuracy.py --run /tmp/usbl_run
"""

from __future__ import annotations

import argparse
import math
import pathlib

import numpy as np

from acomms_bringup.bridges.usbl_position import UsblMounting, auv_position, body_to_enu
from acomms_sim.emulator.usbl_errors import UsblErrorModel
from acomms_sim.physics.geodesy import EnuOrigin, enu_to_geodetic, horizontal_distance_m

SHIP = (41.9857, 3.0291)
HEADING_DEG = 30.0
MOUNTING = UsblMounting(forward_m=5.0, starboard_m=1.0, down_m=2.0)
RANGES_M = (100.0, 250.0, 500.0, 1000.0, 1500.0, 2000.0)
BEARINGS_DEG = tuple(range(0, 360, 45))
DEPTHS_M = (20.0, 100.0, 300.0)


def errors_at(model: UsblErrorModel, rng, horizontal_m: float, fixes: int):
    """(horizontal errors m, expected RMS values, reported accuracies) at one range."""
    origin = EnuOrigin(*SHIP)
    arm_east, arm_north, _ = body_to_enu(MOUNTING.forward_m, MOUNTING.starboard_m, 0.0,
                                         HEADING_DEG)
    errors, expected, reported = [], [], []
    for bearing in BEARINGS_DEG:
        for depth in DEPTHS_M:
            east = horizontal_m * math.sin(math.radians(bearing))
            north = horizontal_m * math.cos(math.radians(bearing))
            truth = enu_to_geodetic(east, north, -depth, origin)
            rel = (east - arm_east, north - arm_north, -(depth - MOUNTING.down_m))
            expected.append(model.horizontal_rms_m(math.hypot(rel[0], rel[1]), rel[2]))
            for _ in range(fixes):
                fix = model.measure(rng, *rel)
                pos = auv_position((fix.east_m, fix.north_m, fix.up_m), "enu", *SHIP,
                                   HEADING_DEG, MOUNTING, fix.accuracy_m)
                errors.append(horizontal_distance_m(truth[0], truth[1], pos.latitude,
                                                    pos.longitude))
                reported.append(fix.accuracy_m)
    return np.array(errors), np.array(expected), np.array(reported)


def scenario_usbl_model(path: str, vehicle: str = "ship") -> UsblErrorModel:
    """The `usbl` error model of a scenario vehicle's emulated EvoLogics modem."""
    from acomms_bringup.description.scenario import load_scenario

    usbl = load_scenario(path).vehicle(vehicle).modem.connection.get("usbl")
    if usbl is None:
        raise SystemExit(f"{path}: vehicle {vehicle} has no emulated USBL modem")
    return UsblErrorModel(**usbl)


def run_report(run_dir: str, scenario: str, bin_m: float = 100.0) -> None:
    """The 'U' errors of a finished run, per horizontal range bin (see the docstring)."""
    from acomms_bringup.run.usbl_run_errors import u_errors

    model = scenario_usbl_model(scenario)
    errors, _truth = u_errors(pathlib.Path(run_dir), model)
    if not errors:
        raise SystemExit(f"{run_dir}: no 'U' position received (is it a cola2_usbl run?)")
    print(f"{run_dir}: {len(errors)} 'U' positions received; USBL model: range "
          f"{model.range_error_fraction:.2%} (floor {model.range_error_floor_m} m), bearing "
          f"{model.bearing_error_deg} deg, elevation {model.elevation_error_deg} deg")
    print(f"{'range m':>12} {'fixes':>6} {'mean m':>8} {'95% m':>8} {'model rms m':>12}")
    bins: dict[int, list] = {}
    for error in errors:
        bins.setdefault(int(error.horizontal_range_m // bin_m), []).append(error)
    for index in sorted(bins):
        err = np.array([e.error_m for e in bins[index]])
        model_rms = math.sqrt(np.mean([e.model_rms_m ** 2 for e in bins[index]]))
        print(f"{index * bin_m:5.0f}-{(index + 1) * bin_m:<6.0f} {len(err):6d} {err.mean():8.2f} "
              f"{np.percentile(err, 95):8.2f} {model_rms:12.2f}")
    err = np.array([e.error_m for e in errors])
    print(f"{'all':>12} {len(err):6d} {err.mean():8.2f} {np.percentile(err, 95):8.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fixes", type=int, default=100, help="fixes per bearing and depth")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", default="acomms_demo_out/usbl_accuracy.png")
    parser.add_argument("--run", metavar="DIR", help="a finished cola2_usbl run's output "
                        "directory: its 'U' errors against the AUV's true track")
    parser.add_argument("--scenario", default="acomms_bringup/config/cola2_usbl.yaml",
                        help="--run: the scenario it ran (its ship's usbl model)")
    args = parser.parse_args()
    if args.run:
        run_report(args.run, args.scenario)
        return
    model = UsblErrorModel(seed=args.seed)
    rng = model.generator(3)
    print(f"USBL model: range {model.range_error_fraction:.2%} (floor "
          f"{model.range_error_floor_m} m), bearing {model.bearing_error_deg} deg, elevation "
          f"{model.elevation_error_deg} deg; {len(BEARINGS_DEG)} bearings x {len(DEPTHS_M)} "
          f"depths x {args.fixes} fixes per range")
    print(f"{'range m':>8} {'mean m':>8} {'95% m':>8} {'rms m':>8} {'model rms':>10} "
          f"{'reported 1-sigma':>17}")
    rows = []
    for horizontal in RANGES_M:
        err, expected, reported = errors_at(model, rng, horizontal, args.fixes)
        row = (horizontal, err.mean(), np.percentile(err, 95), math.sqrt((err ** 2).mean()),
               math.sqrt((expected ** 2).mean()), reported.mean())
        rows.append(row)
        print(f"{row[0]:8.0f} {row[1]:8.2f} {row[2]:8.2f} {row[3]:8.2f} {row[4]:10.2f} "
              f"{row[5]:17.2f}")
    plot(rows, pathlib.Path(args.out))


def plot(rows, out: pathlib.Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    data = np.array(rows)
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for column, label, style in ((1, "mean", "o-"), (2, "95 %", "s-"), (3, "RMS", "^-"),
                                 (4, "model RMS", "k--")):
        ax.plot(data[:, 0], data[:, column], style, label=label)
    ax.set_xlabel("horizontal range, m")
    ax.set_ylabel("horizontal error of the 'U' position, m")
    ax.set_title("USBL -> 'U' position error (seeded USBL error model)")
    ax.grid(True, alpha=0.3)
    ax.legend()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
