"""The `clock:` section of a scenario (ROS-free): simulated or wall-clock time, the warp factor,
and `start_time`, the ROS time (epoch seconds) the simulated clock starts at."""

from __future__ import annotations

import datetime
import math
from typing import Any

from acomms_bringup.description.scenario_keys import DEFAULT_START_TIME
from acomms_bringup.description.scenario_parsing import _Context, _describe_type, _Section
from acomms_bringup.description.scenario_types import Clock

# The simulated clock starts at a real epoch (time codecs with an epoch expect one), fixed so
# runs repeat; midnight UTC keeps TDMA cycles that divide a day in the phase they had at 0.
MAX_START_TIME_S = 1e10  # sim_clock_node's start_time_s range (year 2286)


def parse_start_time(value: Any) -> float:
    """Epoch seconds of `clock.start_time`: epoch seconds, or ISO 8601 (a zone offset or Z;
    none: UTC). ValueError with the reason otherwise."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str, datetime.datetime,
                                                         datetime.date)):
        raise ValueError(f"expected ISO 8601 (e.g. {DEFAULT_START_TIME}) or epoch seconds, "
                         f"got {_describe_type(value)}")
    if isinstance(value, str):
        try:
            value = datetime.datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            raise ValueError(f"{value!r} is not ISO 8601 (e.g. {DEFAULT_START_TIME})") from None
    if isinstance(value, datetime.date) and not isinstance(value, datetime.datetime):
        value = datetime.datetime(value.year, value.month, value.day)
    if isinstance(value, datetime.datetime):  # YAML reads an unquoted timestamp itself
        if value.tzinfo is None:
            value = value.replace(tzinfo=datetime.timezone.utc)
        value = value.timestamp()
    seconds = float(value)
    if not math.isfinite(seconds) or not 0.0 <= seconds <= MAX_START_TIME_S:
        raise ValueError(f"{seconds!r} s is outside 0 .. {MAX_START_TIME_S:g} s")
    return seconds


def format_start_time(seconds: float) -> str:
    """ISO 8601 UTC of epoch seconds (summaries)."""
    moment = datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc)
    return moment.isoformat(timespec="milliseconds" if seconds % 1 else "seconds").replace(
        "+00:00", "Z")


def _parse_clock(ctx: _Context, section: _Section | None, real_time_kind: str | None) -> Clock:
    """`real_time_kind`: the kind of a vehicle's modem that runs in real time (a real modem, or
    the EvoLogics emulator, which runs on the wall clock), None when every modem is simulated."""
    real_time = real_time_kind is not None
    default_start = parse_start_time(DEFAULT_START_TIME)
    if section is None:
        return Clock(use_sim_time=not real_time, warp_factor=1.0,
                     start_time_s=0.0 if real_time else default_start)
    use_sim_time = section.take("use_sim_time", not real_time)
    warp = section.take("warp_factor")
    start_time = section.raw("start_time")
    section.finish()
    if start_time is not None and not use_sim_time:
        raise ctx.error(section.key_path("start_time"),
                        "needs use_sim_time: true (wall-clock time starts where it is)")
    try:
        start_s = default_start if start_time is None else parse_start_time(start_time)
    except ValueError as exc:
        raise ctx.error(section.key_path("start_time"), str(exc)) from None
    if real_time and use_sim_time:
        what = ("an evologics modem (real, or the emulator on the wall clock)"
                if real_time_kind == "evologics" else f"a {real_time_kind}")
        raise ctx.error(section.key_path("use_sim_time"),
                        f"{what} runs in real time: use_sim_time must be false")
    if not use_sim_time and warp != 1.0:
        raise ctx.error(section.key_path("warp_factor"),
                        f"warp {warp} needs use_sim_time: true (wall-clock time cannot be warped)")
    return Clock(use_sim_time=use_sim_time, warp_factor=warp,
                 start_time_s=start_s if use_sim_time else 0.0)
