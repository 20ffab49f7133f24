"""A vehicle position from a topic (ROS-free): the position topic types, their parameters, the
pure validator and the reader that turns one message into (latitude, longitude, depth).

External simulators (Gazebo, the MBARI WEC sim) own the vehicles; the simulated modem follows
their position topic, as ros_acomms' `modem_location_topic` does. Accepted types:

| `location_topic_type` | message | position |
|---|---|---|
| `odometry` | nav_msgs/msg/Odometry | `pose.pose.position` in a local ENU frame |
| `pose_stamped` | geometry_msgs/msg/PoseStamped | `pose.position` in a local ENU frame |
| `navsatfix` | sensor_msgs/msg/NavSatFix | latitude, longitude; depth = -altitude (NaN: 0) |
| `location` | acomms_interfaces/msg/Location | latitude, longitude, depth (ros_acomms' message) |

Local ENU frame: x east, y north, z up, origin at `enu_origin_latitude/longitude` with z = 0 at
`enu_origin_altitude_m` above the sea surface (0: the surface), so depth = -(altitude + z);
`acomms_sim.physics.geodesy.enu_to_geodetic` does the geometry. NavSatFix altitude is taken as
height above the sea surface (no geoid model). A position above the surface is clamped to depth
0 and counted (`location_above_surface`).

Rejected messages raise `PositionRejected(counter, reason)`; the counters are
`location_bad_message` (NaN, out of range, NO_FIX, too far from the origin),
`location_wrong_frame` (header.frame_id differs from a non-empty `location_frame_id`) and
`location_stale` (header.stamp older than `location_max_age_s` on the node clock; a zero stamp
counts as unstamped and is accepted). The message objects are only read by attribute, so this
module needs no ROS.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any

from acomms_core.ros.parameter_spec import ParameterSpec
from acomms_core.time_grid import ns_to_seconds, stamp_ns
from acomms_sim.physics import geodesy

NAVSAT_STATUS_NO_FIX = -1  # sensor_msgs/NavSatStatus.STATUS_NO_FIX


def _enu(point) -> tuple[float, float, float]:
    return float(point.x), float(point.y), float(point.z)


def _navsatfix(msg) -> tuple[float, float, float]:
    if msg.status.status == NAVSAT_STATUS_NO_FIX:
        raise PositionRejected("location_bad_message", "NavSatFix status is NO_FIX")
    altitude = float(msg.altitude)
    # NaN altitude means "not available" (NavSatFix convention): taken as the sea surface.
    return float(msg.latitude), float(msg.longitude), 0.0 if math.isnan(altitude) else -altitude


@dataclasses.dataclass(frozen=True)
class LocationTopicType:
    ros_type: str  # pkg/msg/Type
    local: bool  # True: the message holds an ENU point (needs the origin); else geodetic
    # message -> (east, north, up) when local, else (latitude, longitude, depth)
    read: Callable[[Any], tuple[float, float, float]]


LOCATION_TOPIC_TYPES: dict[str, LocationTopicType] = {
    "odometry": LocationTopicType("nav_msgs/msg/Odometry", True,
                                  lambda msg: _enu(msg.pose.pose.position)),
    "pose_stamped": LocationTopicType("geometry_msgs/msg/PoseStamped", True,
                                      lambda msg: _enu(msg.pose.position)),
    "navsatfix": LocationTopicType("sensor_msgs/msg/NavSatFix", False, _navsatfix),
    "location": LocationTopicType("acomms_interfaces/msg/Location", False,
                                  lambda msg: (float(msg.latitude), float(msg.longitude),
                                               float(msg.depth))),
}

LOCATION_TOPIC_SPECS = [
    ParameterSpec("modem_location_topic", "location",
                  "position topic when location_source is 'topic' (relative names are in the "
                  "node's namespace); read at configure"),
    ParameterSpec("location_topic_type", "location",
                  f"message type of modem_location_topic: one of {list(LOCATION_TOPIC_TYPES)}; "
                  "read at configure"),
    ParameterSpec("enu_origin_latitude", 0.0,
                  "latitude of the local ENU frame's origin (odometry, pose_stamped), degrees",
                  -90.0, 90.0),
    ParameterSpec("enu_origin_longitude", 0.0, "longitude of the ENU origin, degrees",
                  -180.0, 180.0),
    ParameterSpec("enu_origin_altitude_m", 0.0,
                  "height of the ENU frame's z = 0 above the sea surface, m (depth = -(this + z))",
                  -12000.0, 12000.0),
    ParameterSpec("location_frame_id", "",
                  "required header.frame_id of position messages ('' accepts any)"),
    ParameterSpec("location_max_age_s", 0.0,
                  "refuse position messages stamped longer ago than this on the node clock, s "
                  "(0: no age check)", 0.0, 86400.0),
]
LOCATION_TOPIC_NAMES = [spec.name for spec in LOCATION_TOPIC_SPECS]


def check_location_topic(values: dict) -> str | None:
    """Pure validator of the LOCATION_TOPIC_SPECS values: a reason to refuse, or None."""
    kind = values["location_topic_type"]
    if kind not in LOCATION_TOPIC_TYPES:
        return (f"location_topic_type must be one of {list(LOCATION_TOPIC_TYPES)}, "
                f"not {kind!r}")
    if not values["modem_location_topic"]:
        return "modem_location_topic must not be empty"
    try:
        geodesy.check_enu_origin(values["enu_origin_latitude"], values["enu_origin_longitude"],
                                 values["enu_origin_altitude_m"])
    except ValueError as exc:
        return f"enu_origin_latitude/longitude/altitude_m: {exc}"
    return None


class PositionRejected(ValueError):
    """A position message that was not used; `counter` names the counter it goes to."""

    def __init__(self, counter: str, reason: str):
        super().__init__(reason)
        self.counter = counter


@dataclasses.dataclass(frozen=True)
class Position:
    latitude: float
    longitude: float
    depth_m: float
    above_surface: bool = False  # the message put the modem above the surface: clamped to 0


@dataclasses.dataclass(frozen=True)
class LocationReader:
    """How one position topic is read (built from the parameters by `reader_from_values`)."""

    topic_type: str
    origin: geodesy.EnuOrigin = geodesy.EnuOrigin(0.0, 0.0, 0.0)
    frame_id: str = ""
    max_age_s: float = 0.0

    def read(self, msg, now_s: float) -> Position:
        """The message's position; PositionRejected(counter, reason) when it cannot be used."""
        header = getattr(msg, "header", None)
        if header is not None:
            self._check_header(header, now_s)
        kind = LOCATION_TOPIC_TYPES[self.topic_type]
        try:
            values = kind.read(msg)
            if kind.local:
                values = geodesy.enu_to_geodetic(*values, self.origin)
            latitude, longitude, depth = values
            depth, clamped = geodesy.surface_clamped_depth(depth)
            geodesy.check_position(latitude, longitude, depth)
        except PositionRejected:
            raise
        except (ValueError, TypeError, AttributeError) as exc:
            raise PositionRejected("location_bad_message", str(exc)) from None
        return Position(latitude, longitude, depth, clamped)

    def _check_header(self, header, now_s: float) -> None:
        if self.frame_id and header.frame_id != self.frame_id:
            raise PositionRejected("location_wrong_frame",
                                   f"frame_id {header.frame_id!r}, expected {self.frame_id!r}")
        stamp_s = ns_to_seconds(stamp_ns(header.stamp))
        if self.max_age_s > 0.0 and stamp_s > 0.0 and now_s - stamp_s > self.max_age_s:
            raise PositionRejected("location_stale",
                                   f"stamped {now_s - stamp_s:.3f} s ago (limit "
                                   f"{self.max_age_s} s)")


def reader_from_values(values: dict) -> LocationReader:
    """The reader for validated LOCATION_TOPIC_SPECS values."""
    return LocationReader(
        values["location_topic_type"],
        geodesy.EnuOrigin(values["enu_origin_latitude"], values["enu_origin_longitude"],
                          values["enu_origin_altitude_m"]),
        values["location_frame_id"], float(values["location_max_age_s"]))

