"""Distances between geographic positions (spherical Earth, haversine).

Spherical-Earth error is below 0.5 % of the range, far less than the uncertainty of any acoustic
model here; acoustic ranges are short so no ellipsoid is needed.
"""

from __future__ import annotations

import math

EARTH_MEAN_RADIUS_M = 6371008.8  # IUGG mean radius


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


def horizontal_distance_m(lat1: float, lon1: float, lat2: float, lon2: float) -> float:
    phi1, phi2 = math.radians(lat1), math.radians(lat2)
    dphi = phi2 - phi1
    dlmb = math.radians(lon2 - lon1)
    a = math.sin(dphi / 2) ** 2 + math.cos(phi1) * math.cos(phi2) * math.sin(dlmb / 2) ** 2
    return 2.0 * EARTH_MEAN_RADIUS_M * math.asin(min(1.0, math.sqrt(a)))


def slant_range_m(horizontal_m: float, depth1_m: float, depth2_m: float) -> float:
    return math.hypot(horizontal_m, depth2_m - depth1_m)


def offset_position(latitude: float, longitude: float, north_m: float, east_m: float):
    """Position north_m / east_m away (small offsets; used for scenarios and tests)."""
    dlat = math.degrees(north_m / EARTH_MEAN_RADIUS_M)
    dlon = math.degrees(east_m / (EARTH_MEAN_RADIUS_M * math.cos(math.radians(latitude))))
    return latitude + dlat, longitude + dlon
