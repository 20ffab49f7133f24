"""Facts of a run that come from its scenario (ROS-free): trajectories and TDMA slot windows.

`complete_record(record, scenario, start_s)` adds them to a `report.RunRecord` before it is
summarised: each moving vehicle's trajectory sampled every TRAJECTORY_STEP_S (the map draws it
with the positions recorded on the channel) and, for MAC kinds with a TDMA schedule, the windows
of each vehicle's active slots over the run (the timeline shades them).
"""

from __future__ import annotations

from acomms_bringup.run import report
from acomms_core.mac.registry import mac_kind

TRAJECTORY_STEP_S = 10.0
MAX_SLOT_WINDOWS = 5000  # per vehicle; a longer run is shaded up to there


def positions_at(scenario, elapsed_s: float, time_s: float) -> list[report.Fix]:
    """Every vehicle with a scenario position, where it is `elapsed_s` into the run (its
    trajectory time), as fixes stamped `time_s`."""
    fixes = []
    for vehicle in scenario.vehicles:
        if vehicle.trajectory is not None:
            p = vehicle.trajectory.position_at(elapsed_s)
        elif vehicle.position is not None:
            p = vehicle.position
        else:
            continue
        fixes.append(report.Fix(vehicle.name, time_s, p.latitude, p.longitude, p.depth))
    return fixes


def trajectory_fixes(scenario, start_s: float, end_s: float) -> list[report.Fix]:
    """Every TRAJECTORY_STEP_S of the run [start_s, end_s] (and its end): each vehicle's
    scenario position (a static vehicle only at the start and the end)."""
    duration = max(0.0, end_s - start_s)
    steps = int(duration // TRAJECTORY_STEP_S)
    fixes = []
    for t in [i * TRAJECTORY_STEP_S for i in range(steps + 1)] + [duration]:
        fixes += [f for f in positions_at(scenario, t, start_s + t)
                  if t in (0.0, duration) or scenario.vehicle(f.vehicle).trajectory is not None]
    return fixes


def slot_windows(vehicle, start_s: float, end_s: float) -> list[tuple[float, float]]:
    """[(start, end)] of the vehicle's active TDMA slots in [start_s, end_s]; [] when its MAC
    kind has no TDMA schedule (or its configuration does not build)."""
    if vehicle.mac is None:
        return []
    try:
        kind = mac_kind(vehicle.mac.kind)
        config = kind.config(kind.ros_values(dict(vehicle.mac.parameters)))
    except (ValueError, KeyError, TypeError):
        return []
    schedule = getattr(config, "schedule", None)
    if schedule is None:
        return []
    cycle = schedule.cycle_duration_seconds
    first_cycle = start_s - schedule.position(start_s).in_cycle_seconds
    windows = []
    cycle_start = first_cycle
    while cycle_start < end_s and len(windows) < MAX_SLOT_WINDOWS:
        for slot in schedule.active_slots:
            begin = cycle_start + slot * schedule.slot_duration_seconds
            end = begin + schedule.slot_duration_seconds
            if end > start_s and begin < end_s:
                windows.append((max(begin, start_s), min(end, end_s)))
        cycle_start += cycle
    return windows


def complete_record(record: report.RunRecord, scenario, start_s: float) -> None:
    """Add the trajectories and slot windows of the run [start_s, record end] to the record."""
    end_s = start_s + record.end_s
    record.fixes.extend(trajectory_fixes(scenario, start_s, end_s))
    for vehicle in scenario.vehicles:
        windows = slot_windows(vehicle, start_s, end_s)
        if windows:
            record.slot_windows[vehicle.name] = windows
