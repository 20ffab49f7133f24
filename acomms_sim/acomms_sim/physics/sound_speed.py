"""Sound speed in sea water: Mackenzie (1981) and Medwin (1975) equations, and depth profiles.

Outside an equation's validity range a `ValidityWarning` is issued (the value is still returned):
a simulation with slightly odd water should run, but the user should know.

Units: temperature °C, salinity ppt, depth m (positive down), speed m/s.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence

import numpy as np


class ValidityWarning(UserWarning):
    """An empirical formula was evaluated outside the range its authors fitted it on."""


# (low, high) validity limits; sources differ slightly, these are the commonly quoted ones.
MACKENZIE_VALIDITY = {"temperature_c": (-2.0, 30.0), "salinity_ppt": (25.0, 40.0),
                      "depth_m": (0.0, 8000.0)}
MEDWIN_VALIDITY = {"temperature_c": (0.0, 35.0), "salinity_ppt": (0.0, 45.0),
                   "depth_m": (0.0, 1000.0)}


def _check_validity(equation: str, limits: dict, **values: float) -> None:
    for name, value in values.items():
        low, high = limits[name]
        if not (low <= value <= high):
            warnings.warn(f"{equation}: {name}={value} outside its validity range {low}..{high}",
                          ValidityWarning, stacklevel=3)


def mackenzie(temperature_c: float, salinity_ppt: float, depth_m: float) -> float:
    """Mackenzie (1981), JASA 70:807. Check value: (25, 35, 1000) -> 1550.744 m/s."""
    _check_validity("Mackenzie", MACKENZIE_VALIDITY, temperature_c=temperature_c,
                    salinity_ppt=salinity_ppt, depth_m=depth_m)
    t, s, d = temperature_c, salinity_ppt - 35.0, depth_m
    return (1448.96 + 4.591 * t - 5.304e-2 * t**2 + 2.374e-4 * t**3 + 1.340 * s
            + 1.630e-2 * d + 1.675e-7 * d**2 - 1.025e-2 * t * s - 7.139e-13 * t * d**3)


def medwin(temperature_c: float, salinity_ppt: float, depth_m: float) -> float:
    """Medwin (1975), JASA 58:1318 (simple; good to ~0.2 m/s within its range)."""
    _check_validity("Medwin", MEDWIN_VALIDITY, temperature_c=temperature_c,
                    salinity_ppt=salinity_ppt, depth_m=depth_m)
    t, s, z = temperature_c, salinity_ppt, depth_m
    return (1449.2 + 4.6 * t - 0.055 * t**2 + 0.00029 * t**3 + (1.34 - 0.01 * t) * (s - 35.0)
            + 0.016 * z)


EQUATIONS = {"mackenzie": mackenzie, "medwin": medwin}


def sound_speed(temperature_c: float, salinity_ppt: float, depth_m: float,
                equation: str = "mackenzie") -> float:
    try:
        func = EQUATIONS[equation]
    except KeyError:
        raise ValueError(f"unknown sound speed equation {equation!r}; "
                         f"choose one of {sorted(EQUATIONS)}") from None
    return func(temperature_c, salinity_ppt, depth_m)


class SoundSpeedProfile:
    """Sound speed vs depth, linearly interpolated, held constant beyond the end samples.

    Raises ValueError with a reason for an empty profile, mismatched lengths, non-increasing
    depths, negative depths or implausible speeds (outside 1300..1800 m/s).
    """

    def __init__(self, depths_m: Sequence[float], speeds_mps: Sequence[float]):
        depths = np.asarray(depths_m, dtype=float)
        speeds = np.asarray(speeds_mps, dtype=float)
        if depths.size == 0:
            raise ValueError("sound speed profile is empty")
        if depths.shape != speeds.shape or depths.ndim != 1:
            raise ValueError(f"sound speed profile has {depths.size} depths but "
                             f"{speeds.size} speeds")
        if not (np.all(np.isfinite(depths)) and np.all(np.isfinite(speeds))):
            raise ValueError("sound speed profile contains NaN or infinite values")
        if np.any(np.diff(depths) <= 0):
            raise ValueError("sound speed profile depths must be strictly increasing")
        if depths[0] < 0:
            raise ValueError(f"sound speed profile depth {depths[0]} m is above the surface")
        if np.any(speeds < 1300.0) or np.any(speeds > 1800.0):
            raise ValueError("sound speed profile speeds must lie within 1300..1800 m/s")
        self.depths_m = depths
        self.speeds_mps = speeds

    @classmethod
    def constant(cls, speed_mps: float, max_depth_m: float = 11000.0) -> SoundSpeedProfile:
        return cls([0.0, max_depth_m], [speed_mps, speed_mps])

    @classmethod
    def mackenzie(cls, temperature_c: float, salinity_ppt: float,
                  max_depth_m: float = 1000.0, samples: int = 33) -> SoundSpeedProfile:
        """Mackenzie (1981) at a uniform temperature and salinity, sampled 0..max_depth_m (the
        pressure term makes it vary with depth); used when no profile is given."""
        depths = np.linspace(0.0, max(float(max_depth_m), 1.0), samples)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ValidityWarning)
            speeds = [mackenzie(temperature_c, salinity_ppt, float(d)) for d in depths]
        return cls(depths, speeds)

    @property
    def is_constant(self) -> bool:
        return bool(np.all(self.speeds_mps == self.speeds_mps[0]))

    def speed_at(self, depth_m: float) -> float:
        return float(np.interp(depth_m, self.depths_m, self.speeds_mps))

    def mean_speed_between(self, depth_a_m: float, depth_b_m: float) -> float:
        """Harmonic mean speed over the depth interval: a straight path's length / travel time.

        For a straight path the time spent in each depth slice is proportional to its thickness,
        so the effective speed is the harmonic mean of c(z) over [a, b].
        """
        low, high = sorted((float(depth_a_m), float(depth_b_m)))
        if math.isclose(low, high, abs_tol=1e-6) or self.is_constant:
            return self.speed_at(low)
        grid = np.linspace(low, high, 65)
        slowness = 1.0 / np.interp(grid, self.depths_m, self.speeds_mps)
        return float((high - low) / np.trapezoid(slowness, grid))

    def as_pairs(self, max_depth_m: float | None = None) -> list[list[float]]:
        """[[depth, speed], ...] covering 0..max_depth_m (for Bellhop)."""
        depths = list(self.depths_m)
        speeds = list(self.speeds_mps)
        if depths[0] > 0:
            depths.insert(0, 0.0)
            speeds.insert(0, speeds[0])
        if max_depth_m is not None:
            keep = [i for i, d in enumerate(depths) if d < max_depth_m]
            depths = [depths[i] for i in keep] + [max_depth_m]
            speeds = [speeds[i] for i in keep] + [self.speed_at(max_depth_m)]
        return [[d, s] for d, s in zip(depths, speeds, strict=True)]
