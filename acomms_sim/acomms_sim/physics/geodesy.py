"""Distances between geographic positions (WGS84 geodesics, pyproj) and local ENU frames.

Horizontal distances are WGS84 geodesic lengths (Karney's algorithm, as PROJ implements it in C:
pyproj.Geod, much faster than GeographicLib's Python port, which every reception used to call):
a sphere would be off by up to 0.5 % (7.5 m at 1.5 km, i.e. 5 ms of travel time at 41° N).
"""

from __future__ import annotations

import dataclasses
import functools
import math

from pyproj import Geod

EARTH_MEAN_RADIUS_M = 6371008.8  # IUGG mean radius
WGS84 = Geod(ellps="WGS84")


def check_position(latitude: float, longitude: float, depth_m: float) -> None:
    """ValueError naming the bad coordinate (NaN, latitude beyond ±90, longitude beyond ±180,
    depth above the surface or deeper than 12 km)."""
    if not all(math.isfinite(v) for v in (latitude, longitude, depth_m)):
        raise ValueError(f"position ({latitude}, {longitude}, {depth_m}) is not finite")
    if not -90.0 <= latitude <= 90.0:
        raise ValueError(f"latitude {latitude} outside -90..90")
    if not -180.0 <= longitude <= 180.0:
        raise ValueError(f"longitude {longitude} outside -180..180")
    if not 0.0 <= depth_m <= 12000.0:
        raise ValueError(f"depth {depth_m} m outside 0..12000 m")


# Every receiver of a transmission asks for its distance to the sender, and vehicles that hold
# still ask for the same pairs again and again (64 vehicles: 4,032 ordered pairs). The cache
# returns the same float for the same arguments.
DISTANCE_CACHE_SIZE = 16384


def horizontal_distance_m(lat1: float, lon1: float, lat2: float, lon2: float) -> float:
    """WGS84 geodesic distance, m (cached: a pure function of its arguments). It shares the
    cache of `_distance_azimuth`, which the Doppler of the same reception asks next."""
    if lat1 == lat2 and lon1 == lon2:
        return 0.0
    return _distance_azimuth(lat1, lon1, lat2, lon2)[0]


def haversine_distance_m(lat1: float, lon1: float, lat2: float, lon2: float) -> float:
    """Great-circle distance on the mean-radius sphere (for comparison only)."""
    phi1, phi2 = math.radians(lat1), math.radians(lat2)
    dphi = phi2 - phi1
    dlmb = math.radians(lon2 - lon1)
    a = math.sin(dphi / 2) ** 2 + math.cos(phi1) * math.cos(phi2) * math.sin(dlmb / 2) ** 2
    return 2.0 * EARTH_MEAN_RADIUS_M * math.asin(min(1.0, math.sqrt(a)))


def slant_range_m(horizontal_m: float, depth1_m: float, depth2_m: float) -> float:
    return math.hypot(horizontal_m, depth2_m - depth1_m)


def bearing_deg(lat1: float, lon1: float, lat2: float, lon2: float) -> float | None:
    """Geodesic azimuth from point 1 to point 2, degrees clockwise from true north in [0, 360);
    None for the same point (no direction)."""
    if lat1 == lat2 and lon1 == lon2:
        return None
    return _distance_azimuth(lat1, lon1, lat2, lon2)[1] % 360.0


def offset_position(latitude: float, longitude: float, north_m: float, east_m: float):
    """Position at the geodesic distance hypot(north_m, east_m) in the direction of the offset
    (used for scenarios and tests: horizontal_distance_m gives the offset's length back)."""
    distance = math.hypot(north_m, east_m)
    if distance == 0.0:
        return latitude, longitude
    longitude2, latitude2, _ = WGS84.fwd(longitude, latitude,
                                         math.degrees(math.atan2(east_m, north_m)), distance)
    return latitude2, longitude2


# ---- local ENU frames -----------------------------------------------------------------------
# External simulators (Gazebo, the MBARI WEC sim) publish positions in a local East-North-Up
# frame with a flat sea surface. Its origin is a geodetic point; z is up, so a depth is
# -(origin altitude + z). Horizontally the frame is the (ellipsoidal) azimuthal equidistant
# projection on WGS84, like horizontal_distance_m: geodesic distance and azimuth from the origin
# are exact, and ranges between points within tens of kilometres of the origin match the ENU
# distances to ~1e-5 — the acoustic ranges are the ones the external simulator sees.

MAX_LOCAL_OFFSET_M = 1_000_000.0  # a "local" frame: farther offsets are refused as bad data


@dataclasses.dataclass(frozen=True)
class EnuOrigin:
    """Geodetic origin of a local ENU frame; altitude_m is the height of z = 0 above the sea
    surface (an origin at 5 m depth has altitude_m = -5)."""

    latitude: float
    longitude: float
    altitude_m: float = 0.0

    def __post_init__(self):
        check_enu_origin(self.latitude, self.longitude, self.altitude_m)


def check_enu_origin(latitude: float, longitude: float, altitude_m: float) -> None:
    """ValueError naming the bad value (NaN, a pole, longitude beyond ±180, |altitude| > 12 km)."""
    if not all(math.isfinite(v) for v in (latitude, longitude, altitude_m)):
        raise ValueError(f"ENU origin ({latitude}, {longitude}, {altitude_m}) is not finite")
    if not -90.0 < latitude < 90.0:
        raise ValueError(f"ENU origin latitude {latitude} must be strictly between -90 and 90")
    if not -180.0 <= longitude <= 180.0:
        raise ValueError(f"ENU origin longitude {longitude} outside -180..180")
    if abs(altitude_m) > 12000.0:
        raise ValueError(f"ENU origin altitude {altitude_m} m outside -12000..12000 m")


def enu_to_geodetic(east_m: float, north_m: float, up_m: float,
                    origin: EnuOrigin) -> tuple[float, float, float]:
    """(latitude, longitude, depth_m) of an ENU point; depth = -(origin.altitude_m + up_m), so a
    point above the sea surface has a negative depth. ValueError for a non-finite point or one
    more than MAX_LOCAL_OFFSET_M from the origin."""
    if not all(math.isfinite(v) for v in (east_m, north_m, up_m)):
        raise ValueError(f"ENU point ({east_m}, {north_m}, {up_m}) is not finite")
    rho = math.hypot(east_m, north_m)
    if rho > MAX_LOCAL_OFFSET_M:
        raise ValueError(f"ENU point {rho:.0f} m from the origin (limit "
                         f"{MAX_LOCAL_OFFSET_M:.0f} m)")
    latitude, longitude = offset_position(origin.latitude, origin.longitude, north_m, east_m)
    longitude = (longitude + 180.0) % 360.0 - 180.0
    return latitude, longitude, -(origin.altitude_m + up_m)


def geodetic_to_enu(latitude: float, longitude: float, depth_m: float,
                    origin: EnuOrigin) -> tuple[float, float, float]:
    """(east_m, north_m, up_m) of a geodetic point: the inverse of enu_to_geodetic."""
    return enu_offset_m(origin.latitude, origin.longitude, origin.altitude_m,
                        latitude, longitude, depth_m)


def enu_offset_m(origin_latitude: float, origin_longitude: float, origin_altitude_m: float,
                 latitude: float, longitude: float, depth_m: float) -> tuple[float, float, float]:
    """geodetic_to_enu for an origin given as numbers that are already valid positions (a
    reception's Doppler asks it for every receiver: no EnuOrigin to build and check)."""
    if latitude == origin_latitude and longitude == origin_longitude:
        return 0.0, 0.0, -depth_m - origin_altitude_m
    rho, azimuth_deg = _distance_azimuth(origin_latitude, origin_longitude, latitude, longitude)
    bearing = math.radians(azimuth_deg)
    return rho * math.sin(bearing), rho * math.cos(bearing), -depth_m - origin_altitude_m


@functools.lru_cache(maxsize=DISTANCE_CACHE_SIZE)
def _distance_azimuth(lat1: float, lon1: float, lat2: float, lon2: float) -> tuple[float, float]:
    """(geodesic distance m, azimuth at point 1 degrees) of WGS84's inverse problem: the one
    cache behind horizontal_distance_m, bearing_deg and geodetic_to_enu (a reception's range and
    its Doppler ask it for the same pair)."""
    azimuth_deg, _, distance_m = WGS84.inv(lon1, lat1, lon2, lat2)
    return distance_m, azimuth_deg


def surface_clamped_depth(depth_m: float) -> tuple[float, bool]:
    """A modem cannot be above the sea surface: (max(depth, 0), whether it was clamped). A
    surface vehicle's GPS antenna or a wave-lifted hull gives small negative depths."""
    return (0.0, True) if depth_m < 0.0 else (depth_m, False)
