"""A seeded USBL position error model for emulated EvoLogics USBL modems (ROS-free).

The true relative position of the remote modem (east, north, up in metres, from the USBL head)
is turned into slant range r, bearing (azimuth, clockwise from north) and elevation; each gets an
independent zero-mean Gaussian error, and the noisy spherical position is turned back into ENU:

    sigma_range     = max(range_error_fraction * r, range_error_floor_m)   (default 0.1 %, 0.05 m)
    sigma_bearing   = bearing_error_deg                                     (default 1 degree)
    sigma_elevation = elevation_error_deg                                   (default 1 degree)

The reported accuracy (USBLLONG's last field) is the 1-sigma position error this model implies,
sqrt(sigma_range^2 + (r sigma_bearing cos(elevation))^2 + (r sigma_elevation)^2) (angles in
radians). Draws come from numpy's PCG64 seeded with (seed, address), so one modem's fixes are
reproducible whatever the others do. The defaults are modelling assumptions in the range of
EvoLogics' published USBL accuracy (about 0.1 % of slant range, 0.1-1 degree bearing).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np


@dataclasses.dataclass(frozen=True)
class UsblFix:
    east_m: float
    north_m: float
    up_m: float
    range_m: float
    bearing_rad: float    # azimuth, clockwise from north
    elevation_rad: float  # above the horizontal
    accuracy_m: float


@dataclasses.dataclass(frozen=True)
class UsblErrorModel:
    range_error_fraction: float = 0.001
    range_error_floor_m: float = 0.05
    bearing_error_deg: float = 1.0
    elevation_error_deg: float = 1.0
    seed: int = 0

    def __post_init__(self):
        for name in ("range_error_fraction", "range_error_floor_m", "bearing_error_deg",
                     "elevation_error_deg"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0):
                raise ValueError(f"usbl {name} must be a finite number >= 0, got {value!r}")

    def generator(self, address: int) -> np.random.Generator:
        return np.random.default_rng([int(self.seed), int(address)])

    def sigmas(self, range_m: float) -> tuple[float, float, float]:
        """(range m, bearing rad, elevation rad) standard deviations at this slant range."""
        return (max(self.range_error_fraction * range_m, self.range_error_floor_m),
                math.radians(self.bearing_error_deg), math.radians(self.elevation_error_deg))

    def horizontal_rms_m(self, horizontal_m: float, up_m: float) -> float:
        """The horizontal RMS position error this model implies (first order) for a remote
        `horizontal_m` away and `up_m` above the head: the range error along the horizontal
        (times cos(elevation)), r * elevation error * sin(elevation) along, r * bearing error *
        cos(elevation) across."""
        slant = math.hypot(horizontal_m, up_m)
        elevation = math.atan2(up_m, horizontal_m)
        s_range, s_bearing, s_elevation = self.sigmas(slant)
        along = math.hypot(s_range * math.cos(elevation),
                           slant * s_elevation * math.sin(elevation))
        return math.hypot(along, slant * s_bearing * math.cos(elevation))

    def measure(self, rng: np.random.Generator, east_m: float, north_m: float,
                up_m: float) -> UsblFix:
        """A noisy fix of the true relative position (see the module docstring)."""
        horizontal = math.hypot(east_m, north_m)
        true_range = math.hypot(horizontal, up_m)
        bearing = math.atan2(east_m, north_m)
        elevation = math.atan2(up_m, horizontal)
        s_range, s_bearing, s_elevation = self.sigmas(true_range)
        d_range, d_bearing, d_elevation = rng.standard_normal(3)
        measured_range = max(0.0, true_range + s_range * d_range)
        bearing = (bearing + s_bearing * d_bearing + math.pi) % (2 * math.pi) - math.pi
        elevation = elevation + s_elevation * d_elevation
        flat = measured_range * math.cos(elevation)
        accuracy = math.sqrt(s_range ** 2 + (true_range * s_bearing * math.cos(elevation)) ** 2
                             + (true_range * s_elevation) ** 2)
        return UsblFix(flat * math.sin(bearing), flat * math.cos(bearing),
                       measured_range * math.sin(elevation), measured_range, bearing, elevation,
                       accuracy)
