"""acomms_link_budget: TL, NL, SNR and the expected packet error rate per rate, by the simulator's
own models.

    acomms_link_budget --source-level 185 --range 2000
    acomms_link_budget --source-level 185 --from 41.52,-70.67,20 --to 41.525,-70.662,5
    acomms_link_budget --source-level 190 --ranges 500:8000:500 --noise fixed --noise-db 80
    acomms_link_budget --source-level 185 --range 3000 --tl bellhop --water-depth 100

The models are the ones modem_sim_node evaluates receptions with: propagation and noise built by
`acomms_sim.nodes.sim_node_support.build_propagation` / `build_noise` from the same parameter
tables and defaults (spreading + absorption or Bellhop; Wenz or fixed noise over the band), the
SNR by `physics.packet_performance.snr_db` (SL − TL − NL), the frame error rate per rate by
`physics.packet_performance.frame_error_rate`. Expected packet error rate of a full packet at a
rate (what `PacketPerformance.draw_full_packet` draws: the miniframe on FDP rates plus every
dataframe frame, each failing independently with the FER):
    PER = 1 − (1 − FER(rate, SNR))^frames, and 1 below the detection threshold
(`SimModemConfig.detection_threshold_db`, the modem's default unless --detection-threshold).
Without interference (no collisions) and without fading. Before the numbers (not with --json) it
prints its assumptions, one `# ` line each: modem profile, centre frequency and band, source level
(`--source-level`, or the profile's at the modem's default tx level), detection threshold, the
transmission loss model and the noise model with its level in the band.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys

from acomms_core.modems.modem_rates import RATES, rate_info
from acomms_core.modems.registry import MODEM_PROFILE_PARAMETER, modem_profile
from acomms_sim.modem.sim_modem import SimModemConfig
from acomms_sim.physics.geodesy import offset_position
from acomms_sim.physics.packet_performance import frame_error_rate, receive_level_db, snr_db

ORIGIN = (41.5, -70.6)  # where --range places the two modems (the result does not depend on it)
DEFAULT_DEPTH_M = 10.0


@dataclasses.dataclass(frozen=True)
class LinkBudget:
    horizontal_range_m: float
    slant_range_m: float
    transmission_loss_db: float
    noise_db: float
    receive_level_db: float
    snr_db: float
    packet_error_rate: dict[int, float]


def full_packet_frames(rate: int) -> int:
    """Frames of a full packet at this rate (as PacketPerformance.draw_full_packet draws)."""
    info = rate_info(rate)
    return info.frames + (1 if info.fdp else 0)


def packet_error_rate(rate: int, snr: float, detection_threshold_db: float) -> float:
    if snr < detection_threshold_db:
        return 1.0
    return 1.0 - (1.0 - frame_error_rate(rate, snr)) ** full_packet_frames(rate)


def model_values(arguments) -> dict:
    """The simulator's parameter values (its defaults, with the command line's choices)."""
    from acomms_sim.nodes.sim_node_support import NOISE_SPECS, PROPAGATION_SPECS

    values = {spec.name: spec.default for spec in [*PROPAGATION_SPECS, *NOISE_SPECS]}
    given = {"transmission_loss_model": arguments.tl, "spreading": arguments.spreading,
             "absorption_model": arguments.absorption, "sound_speed_mps": arguments.sound_speed,
             "water_depth_m": arguments.water_depth, "ambient_noise_model": arguments.noise,
             "ambient_noise_db": arguments.noise_db, "shipping_activity": arguments.shipping,
             "wind_speed_mps": arguments.wind}
    values.update({k: v for k, v in given.items() if v is not None})
    return values


class LinkBudgetCalculator:
    """The simulator's propagation and noise models for one set of parameter values."""

    def __init__(self, values: dict, source_level_db: float, center_frequency_hz: float,
                 bandwidth_hz: float, rates=tuple(RATES), detection_threshold_db: float | None
                 = None):
        from acomms_sim.nodes.sim_node_support import (
            build_noise,
            build_propagation,
            validate_choices,
        )

        reason = validate_choices(values)
        if reason:
            raise ValueError(reason)
        self.propagation = build_propagation(values, None)
        self.noise = build_noise(values)
        self.source_level_db = source_level_db
        self.center_frequency_hz, self.bandwidth_hz = center_frequency_hz, bandwidth_hz
        self.rates = tuple(rates)
        self.detection_threshold_db = (SimModemConfig(0).detection_threshold_db
                                       if detection_threshold_db is None
                                       else detection_threshold_db)

    def between(self, src: tuple[float, float, float],
                rcv: tuple[float, float, float]) -> LinkBudget:
        path = self.propagation.path(src, rcv, self.center_frequency_hz)
        noise = self.noise.band_level_db(self.center_frequency_hz, self.bandwidth_hz)
        snr = snr_db(self.source_level_db, path.transmission_loss_db, noise)
        return LinkBudget(path.horizontal_range_m, path.slant_range_m, path.transmission_loss_db,
                          noise, receive_level_db(self.source_level_db,
                                                  path.transmission_loss_db), snr,
                          {r: packet_error_rate(r, snr, self.detection_threshold_db)
                           for r in self.rates})

    def at_range(self, range_m: float, src_depth_m: float, rcv_depth_m: float) -> LinkBudget:
        latitude, longitude = offset_position(*ORIGIN, 0.0, range_m)
        return self.between((*ORIGIN, src_depth_m), (latitude, longitude, rcv_depth_m))


def default_source_level_db(center_frequency_hz: float) -> float:
    """What the simulated modem transmits at when a request gives no level: the modem
    profile's level for its default tx level in this band."""
    config = dataclasses.replace(SimModemConfig(0), center_frequency_hz=center_frequency_hz)
    return config.default_source_level_db(modem_profile(MODEM_PROFILE_PARAMETER.default))


def _transmission_loss_text(values: dict) -> str:
    speed = values["sound_speed_mps"]
    speed_text = (f"sound speed {speed:g} m/s" if speed else
                  f"Mackenzie sound speed ({values['water_temperature_c']:g} °C, "
                  f"{values['salinity_ppt']:g} ppt)")
    if values["transmission_loss_model"] == "bellhop":
        return (f"bellhop, water depth {values['water_depth_m']:g} m, absorption "
                f"{values['absorption_model']}, {speed_text}")
    return (f"{values['spreading']} spreading + {values['absorption_model']} absorption, "
            f"{speed_text}")


def assumptions(values: dict, calculator: LinkBudgetCalculator, given_level: bool) -> list[str]:
    """What the numbers assume, one line each (printed before them)."""
    low = calculator.center_frequency_hz - calculator.bandwidth_hz / 2
    high = calculator.center_frequency_hz + calculator.bandwidth_hz / 2
    noise = calculator.noise.band_level_db(calculator.center_frequency_hz, calculator.bandwidth_hz)
    noise_text = (f"fixed {values['ambient_noise_db']:g} dB re 1 uPa in band"
                  if values["ambient_noise_model"] == "fixed" else
                  f"wenz (shipping {values['shipping_activity']:g}, wind "
                  f"{values['wind_speed_mps']:g} m/s): {noise:.1f} dB re 1 uPa in band")
    level = ("--source-level" if given_level
             else f"the {MODEM_PROFILE_PARAMETER.default} profile's at tx level "
                  f"{SimModemConfig(0).tx_level}")
    return [f"# modem profile {MODEM_PROFILE_PARAMETER.default}; centre frequency "
            f"{calculator.center_frequency_hz:g} Hz, band {calculator.bandwidth_hz:g} Hz "
            f"({low:g}-{high:g} Hz)",
            f"# source level {calculator.source_level_db:.1f} dB re 1 uPa @ 1 m ({level}); "
            f"detection threshold {calculator.detection_threshold_db:g} dB SNR",
            f"# transmission loss: {_transmission_loss_text(values)}",
            f"# noise: {noise_text}"]


def parse_ranges(text: str) -> list[float]:
    """'start:stop:step' (stop included when on the grid) or 'r1,r2,...', metres."""
    if ":" in text:
        start, stop, step = (float(x) for x in text.split(":"))
        if step <= 0 or stop < start or start <= 0:
            raise argparse.ArgumentTypeError("need 0 < start <= stop and step > 0")
        count = int((stop - start) / step + 1e-9) + 1
        return [start + i * step for i in range(count)]
    values = [float(x) for x in text.split(",") if x.strip()]
    if not values or min(values) <= 0:
        raise argparse.ArgumentTypeError("ranges must be > 0 m")
    return values


def _position(text: str) -> tuple[float, float, float]:
    parts = [float(x) for x in text.split(",")]
    if len(parts) != 3:
        raise argparse.ArgumentTypeError("give LAT,LON,DEPTH_M")
    return parts[0], parts[1], parts[2]


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="acomms_link_budget", description=main.__doc__)
    p.add_argument("--source-level", type=float, metavar="DB",
                   help="source level, dB re 1 uPa @ 1 m (default: the simulated modem's)")
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--range", type=float, metavar="M", help="horizontal range, m")
    where.add_argument("--ranges", type=parse_ranges, metavar="START:STOP:STEP",
                       help="a table over ranges (or R1,R2,...), m")
    where.add_argument("--from", dest="src", type=_position, metavar="LAT,LON,DEPTH",
                       help="transmitter position (with --to)")
    p.add_argument("--to", dest="rcv", type=_position, metavar="LAT,LON,DEPTH",
                   help="receiver position (with --from)")
    p.add_argument("--src-depth", type=float, default=DEFAULT_DEPTH_M, metavar="M")
    p.add_argument("--rcv-depth", type=float, default=DEFAULT_DEPTH_M, metavar="M")
    p.add_argument("--center-frequency", type=float, default=SimModemConfig(0).center_frequency_hz,
                   metavar="HZ")
    p.add_argument("--bandwidth", type=float, default=SimModemConfig(0).bandwidth_hz,
                   metavar="HZ")
    p.add_argument("--tl", choices=("spreading", "bellhop"), help="transmission loss model")
    p.add_argument("--spreading", help="spherical, practical or cylindrical")
    p.add_argument("--absorption", help="thorp or francois_garrison")
    p.add_argument("--sound-speed", type=float, metavar="M_S")
    p.add_argument("--water-depth", type=float, metavar="M", help="bellhop: water depth")
    p.add_argument("--noise", choices=("wenz", "fixed"), help="ambient noise model")
    p.add_argument("--noise-db", type=float, metavar="DB", help="fixed: band noise level")
    p.add_argument("--shipping", type=float, metavar="0..1", help="wenz: shipping activity")
    p.add_argument("--wind", type=float, metavar="M_S", help="wenz: wind speed")
    p.add_argument("--rates", default=",".join(str(r) for r in sorted(RATES)),
                   help="Micromodem rates (default: all)")
    p.add_argument("--detection-threshold", type=float, metavar="DB")
    p.add_argument("--json", action="store_true", help="print JSON")
    return p


def format_one(budget: LinkBudget, source_level_db: float) -> str:
    lines = [f"range {budget.horizontal_range_m:.0f} m horizontal, {budget.slant_range_m:.0f} m "
             "slant",
             f"SL {source_level_db:.1f} dB - TL {budget.transmission_loss_db:.1f} dB = RL "
             f"{budget.receive_level_db:.1f} dB re 1 uPa; NL {budget.noise_db:.1f} dB in band; "
             f"SNR {budget.snr_db:.1f} dB",
             "expected packet error rate of a full packet:"]
    lines += [f"  rate {rate} ({rate_info(rate).modulation}, {full_packet_frames(rate)} frames): "
              f"{per:.3f}" for rate, per in budget.packet_error_rate.items()]
    return "\n".join(lines)


def format_table(budgets: list[LinkBudget]) -> str:
    rates = list(budgets[0].packet_error_rate)
    header = (f"{'range_m':>8} {'TL_db':>6} {'NL_db':>6} {'SNR_db':>7} "
              + " ".join(f"{'PER_r' + str(r):>7}" for r in rates))
    rows = [f"{b.horizontal_range_m:>8.0f} {b.transmission_loss_db:>6.1f} {b.noise_db:>6.1f} "
            f"{b.snr_db:>7.1f} " + " ".join(f"{b.packet_error_rate[r]:>7.3f}" for r in rates)
            for b in budgets]
    return "\n".join([header, *rows])


def main(argv: list[str] | None = None) -> int:
    """acomms_link_budget: TL, NL, SNR and expected packet error rates (the simulator's models)."""
    arguments = parser().parse_args(argv)
    if (arguments.src is None) != (arguments.rcv is None):
        print("acomms_link_budget: --from and --to go together", file=sys.stderr)
        return 1
    given_level = arguments.source_level is not None and arguments.source_level > 0
    try:
        rates = [int(r) for r in arguments.rates.split(",") if r.strip()]
        for rate in rates:
            rate_info(rate)
        source_level = (arguments.source_level if given_level
                        else default_source_level_db(arguments.center_frequency))
        values = model_values(arguments)
        calculator = LinkBudgetCalculator(
            values, source_level, arguments.center_frequency, arguments.bandwidth, rates,
            arguments.detection_threshold)
        if arguments.src is not None:
            budgets = [calculator.between(arguments.src, arguments.rcv)]
        else:
            budgets = [calculator.at_range(r, arguments.src_depth, arguments.rcv_depth)
                       for r in (arguments.ranges or [arguments.range])]
    except (ValueError, RuntimeError) as exc:
        print(f"acomms_link_budget: {' '.join(str(exc).split())}", file=sys.stderr)
        return 1
    if arguments.json:
        print(json.dumps([dataclasses.asdict(b) for b in budgets], indent=1))
        return 0
    print("\n".join(assumptions(values, calculator, given_level)))
    if arguments.ranges:
        print(format_table(budgets))
    else:
        print(format_one(budgets[0], source_level))
    return 0


if __name__ == "__main__":
    sys.exit(main())
