"""Ambient noise: Wenz curves as fitted by Coates (1989) (Stojanovic 2007), or a fixed level.

Spectral levels are dB re 1 µPa²/Hz with f in kHz:
  turbulence  N_t  = 17 − 30 log f
  shipping    N_s  = 40 + 20(s − 0.5) + 26 log f − 60 log(f + 0.03)   (s: activity 0..1)
  wind        N_w  = 50 + 7.5 √w + 20 log f − 40 log(f + 0.4)         (w: wind speed, m/s)
  thermal     N_th = −15 + 20 log f
  total       N    = 10 log Σ 10^(N_i/10)
The band noise level (dB re 1 µPa) is the power integral of the spectrum over the receiver band
[f_c − B/2, f_c + B/2]; for a flat spectrum this is N + 10 log B_Hz.
"""

from __future__ import annotations

import dataclasses
import functools
import math

import numpy as np


def turbulence_psd_db(f_khz):
    return 17.0 - 30.0 * np.log10(f_khz)


def shipping_psd_db(f_khz, shipping_activity: float):
    return (40.0 + 20.0 * (shipping_activity - 0.5) + 26.0 * np.log10(f_khz)
            - 60.0 * np.log10(f_khz + 0.03))


def wind_psd_db(f_khz, wind_speed_mps: float):
    return (50.0 + 7.5 * math.sqrt(wind_speed_mps) + 20.0 * np.log10(f_khz)
            - 40.0 * np.log10(f_khz + 0.4))


def thermal_psd_db(f_khz):
    return -15.0 + 20.0 * np.log10(f_khz)


DEFAULT_SHIPPING_ACTIVITY = 0.5
DEFAULT_WIND_SPEED_MPS = 5.0  # one default for the library, the nodes and the scenarios


def wenz_psd_db(f_khz, shipping_activity: float = DEFAULT_SHIPPING_ACTIVITY,
                wind_speed_mps: float = DEFAULT_WIND_SPEED_MPS):
    """Total ambient noise power spectral density, dB re 1 µPa²/Hz (f in kHz)."""
    f = np.asarray(f_khz, dtype=float)
    total = (10.0 ** (turbulence_psd_db(f) / 10.0)
             + 10.0 ** (shipping_psd_db(f, shipping_activity) / 10.0)
             + 10.0 ** (wind_psd_db(f, wind_speed_mps) / 10.0)
             + 10.0 ** (thermal_psd_db(f) / 10.0))
    return 10.0 * np.log10(total)


@functools.lru_cache(maxsize=256)
def wenz_band_level_db(center_frequency_hz: float, bandwidth_hz: float,
                       shipping_activity: float = DEFAULT_SHIPPING_ACTIVITY,
                       wind_speed_mps: float = DEFAULT_WIND_SPEED_MPS,
                       samples: int = 129) -> float:
    """Noise power in the band, dB re 1 µPa (trapezoid integral of the PSD over the band)."""
    if bandwidth_hz <= 0 or center_frequency_hz - bandwidth_hz / 2.0 <= 0:
        raise ValueError(f"band {center_frequency_hz} Hz ± {bandwidth_hz / 2} Hz must be positive")
    f_hz = np.linspace(center_frequency_hz - bandwidth_hz / 2.0,
                       center_frequency_hz + bandwidth_hz / 2.0, samples)
    psd = 10.0 ** (wenz_psd_db(f_hz / 1000.0, shipping_activity, wind_speed_mps) / 10.0)
    return float(10.0 * np.log10(np.trapezoid(psd, f_hz)))


@dataclasses.dataclass
class AmbientNoise:
    """Noise model of one receiver; fields can be changed at run time (e.g. from parameters).

    model "fixed": band level = fixed_band_level_db (dB re 1 µPa in the receiver band);
    model "wenz": band level from the Coates/Wenz spectrum integrated over the band.
    published_level_db: a measured/published band level (dB re 1 µPa; e.g. the `ambient_noise`
    topic, as ros_acomms' simulator takes it) replaces either model while it is set.
    """

    model: str = "wenz"
    fixed_band_level_db: float = 70.0
    shipping_activity: float = DEFAULT_SHIPPING_ACTIVITY
    wind_speed_mps: float = DEFAULT_WIND_SPEED_MPS
    published_level_db: float | None = None

    MODELS = ("fixed", "wenz")

    def validate(self) -> None:
        if self.model not in self.MODELS:
            raise ValueError(f"unknown noise model {self.model!r}; choose one of "
                             f"{list(self.MODELS)}")
        if not 0.0 <= self.shipping_activity <= 1.0:
            raise ValueError("shipping_activity must be within 0..1")
        if not 0.0 <= self.wind_speed_mps <= 50.0:
            raise ValueError("wind_speed_mps must be within 0..50 m/s")
        check_published_level(self.published_level_db)

    def band_level_db(self, center_frequency_hz: float, bandwidth_hz: float) -> float:
        if self.published_level_db is not None:
            return float(self.published_level_db)
        if self.model == "fixed":
            return float(self.fixed_band_level_db)
        return wenz_band_level_db(center_frequency_hz, bandwidth_hz, self.shipping_activity,
                                  self.wind_speed_mps)


PUBLISHED_LEVEL_RANGE_DB = (0.0, 250.0)


def check_published_level(level_db: float | None) -> None:
    """ValueError unless level_db is None or a finite band level within PUBLISHED_LEVEL_RANGE_DB."""
    low, high = PUBLISHED_LEVEL_RANGE_DB
    if level_db is not None and not (math.isfinite(level_db) and low <= level_db <= high):
        raise ValueError(f"ambient noise level {level_db} dB is not within {low}..{high} dB "
                         "re 1 uPa")



@dataclasses.dataclass
class RandomNoiseLevels:
    """A noise level that changes at random: one normal draw N(mean_db, stddev_db²) per update
    (what ros_acomms' simple_noise_model publishes on `ambient_noise`), seeded and reproducible;
    each draw is clipped into PUBLISHED_LEVEL_RANGE_DB."""

    mean_db: float = 60.0
    stddev_db: float = 3.0
    seed: int | None = 0

    def __post_init__(self):
        if not (math.isfinite(self.mean_db) and math.isfinite(self.stddev_db)
                and self.stddev_db >= 0):
            raise ValueError(f"noise level N({self.mean_db}, {self.stddev_db}²) is not valid")
        self._rng = np.random.default_rng(self.seed)

    def next_db(self) -> float:
        low, high = PUBLISHED_LEVEL_RANGE_DB
        return float(min(max(self._rng.normal(self.mean_db, self.stddev_db), low), high))
