"""The AUV's geodetic position from a topside USBL fix, the ship's GPS and heading (ROS-free).

As cola2's topside (IQUAview) does: the USBL measures the AUV relative to its transducer head;
the relative vector is rotated into local East-North-Up with the ship's heading (and the head's
yaw mounting offset), the transducer's lever arm from the GPS antenna (forward/starboard, also
rotated with the heading) is added, and the ENU offset from the antenna is turned into WGS84 with
the local frame of `acomms_sim.physics.geodesy` (one source of truth for geodesy).

Frames of the relative vector:
- "enu": east, north, up from the head (the modem's motion-compensated output, UsblFix
  east_m/north_m/up_m); the ship's heading then only turns the lever arm.
- "head": x forward, y starboard, z down in the head's frame (UsblFix x_m/y_m/z_m); the head's x
  axis points yaw_offset_deg clockwise from the bow.

Depth of the AUV = transducer depth below the sea surface (mounting down_m) - relative up.
Inputs older than the configured maximum age (on one clock, the node's) are refused with a
reason.
"""

from __future__ import annotations

import dataclasses
import math

from acomms_sim.physics.geodesy import EnuOrigin, enu_to_geodetic

FRAMES = ("enu", "head")


class UsblRefused(ValueError):
    """A fix that gives no position; str() is the one-line reason, .kind the counter name."""

    def __init__(self, kind: str, reason: str):
        super().__init__(reason)
        self.kind = kind


@dataclasses.dataclass(frozen=True)
class UsblMounting:
    forward_m: float = 0.0      # transducer ahead of the GPS antenna, m
    starboard_m: float = 0.0    # transducer to starboard of the GPS antenna, m
    down_m: float = 0.0         # transducer depth below the sea surface, m
    yaw_offset_deg: float = 0.0  # head x axis, degrees clockwise from the bow ("head" frame)


@dataclasses.dataclass(frozen=True)
class AuvPosition:
    latitude: float
    longitude: float
    depth_m: float
    accuracy_m: float   # one sigma, m


def heading_from_quaternion(x: float, y: float, z: float, w: float) -> float:
    """Heading (degrees clockwise from true north) of an ENU orientation (REP-103: yaw
    counter-clockwise from east)."""
    yaw = math.atan2(2.0 * (w * z + x * y), 1.0 - 2.0 * (y * y + z * z))
    return (90.0 - math.degrees(yaw)) % 360.0


def body_to_enu(forward: float, starboard: float, down: float,
                heading_deg: float) -> tuple[float, float, float]:
    """(east, north, up) of a body vector (forward, starboard, down) at this heading."""
    h = math.radians(heading_deg)
    return (forward * math.sin(h) + starboard * math.cos(h),
            forward * math.cos(h) - starboard * math.sin(h), -down)


def stale_reason(now_s: float, stamps: dict, max_age_s: float) -> str | None:
    """None when every input is present and at most max_age_s old at now_s, else the reason.
    stamps: {input name: stamp_s or None}; all on the same (node) clock."""
    for name, stamp in stamps.items():
        if stamp is None:
            return f"no {name} yet"
        age = now_s - stamp
        if age > max_age_s:
            return f"{name} is {age:.1f} s old (max {max_age_s:g} s)"
    return None


def relative_enu(vector, frame: str, heading_deg: float,
                 mounting: UsblMounting) -> tuple[float, float, float]:
    """The relative vector in ENU (see the module docstring for the frames)."""
    if not all(math.isfinite(v) for v in vector):
        raise UsblRefused("no_position", f"fix has no {frame} position {tuple(vector)}")
    if frame == "enu":
        return tuple(float(v) for v in vector)
    if frame != "head":
        raise ValueError(f"frame must be one of {', '.join(FRAMES)}, got {frame!r}")
    x, y, z = vector
    return body_to_enu(x, y, z, heading_deg + mounting.yaw_offset_deg)


def auv_position(vector, frame: str, ship_latitude: float, ship_longitude: float,
                 heading_deg: float, mounting: UsblMounting, accuracy_m: float,
                 gps_sigma_m: float = 0.0) -> AuvPosition:
    """The AUV's position; accuracy = hypot(USBL accuracy, GPS one sigma). UsblRefused for a
    fix without a position or a position that is no geodetic point."""
    if not math.isfinite(heading_deg):
        raise UsblRefused("no_heading", f"heading {heading_deg} is not finite")
    east, north, up = relative_enu(vector, frame, heading_deg, mounting)
    arm_east, arm_north, _ = body_to_enu(mounting.forward_m, mounting.starboard_m, 0.0,
                                         heading_deg)
    try:
        latitude, longitude, _ = enu_to_geodetic(east + arm_east, north + arm_north, 0.0,
                                                 EnuOrigin(ship_latitude, ship_longitude))
    except ValueError as exc:
        raise UsblRefused("bad_position", str(exc)) from None
    return AuvPosition(latitude, longitude, mounting.down_m - up,
                       math.hypot(accuracy_m, gps_sigma_m))
