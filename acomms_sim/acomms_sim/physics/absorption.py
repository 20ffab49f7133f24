"""Volume absorption of sound in sea water, dB/km, frequency in kHz.

- Thorp (as used in comms papers, e.g. Stojanovic 2007): frequency only; fitted for ~4 °C,
  ~1 km depth. Cheap default.
- Francois & Garrison (1982), JASA 72:896 and 72:1879: boric acid + MgSO4 + pure water
  relaxation terms with temperature, salinity, depth and pH dependence; 0.2 kHz..1 MHz.
- Ainslie & McColm (1998), JASA 103:1671: simplified form within ~10 % of Francois–Garrison;
  used here as an independent cross-check in the tests.
"""

from __future__ import annotations

import math
import warnings

from acomms_sim.physics.sound_speed import ValidityWarning


def thorp_db_per_km(frequency_khz: float) -> float:
    f2 = frequency_khz * frequency_khz
    return 0.11 * f2 / (1.0 + f2) + 44.0 * f2 / (4100.0 + f2) + 2.75e-4 * f2 + 0.003


def francois_garrison_db_per_km(frequency_khz: float, temperature_c: float = 4.0,
                                salinity_ppt: float = 35.0, depth_m: float = 1000.0,
                                ph: float = 8.0) -> float:
    """Francois–Garrison total absorption (boric acid + magnesium sulphate + pure water)."""
    if not 0.2 <= frequency_khz <= 1000.0:
        warnings.warn(f"Francois-Garrison: frequency {frequency_khz} kHz outside 0.2..1000 kHz",
                      ValidityWarning, stacklevel=2)
    if not (-2.0 <= temperature_c <= 30.0 and 0.0 <= depth_m <= 10000.0):
        warnings.warn(f"Francois-Garrison: T={temperature_c} °C, D={depth_m} m outside the "
                      "fitted range (-2..30 °C, 0..10000 m)", ValidityWarning, stacklevel=2)
    t, s, d, f = temperature_c, salinity_ppt, depth_m, frequency_khz
    f2 = f * f
    theta_k = 273.0 + t
    c = 1412.0 + 3.21 * t + 1.19 * s + 0.0167 * d  # the paper's own simple sound speed
    # Boric acid relaxation
    a1 = 8.86 / c * 10.0 ** (0.78 * ph - 5.0)
    f1 = 2.8 * math.sqrt(s / 35.0) * 10.0 ** (4.0 - 1245.0 / theta_k)
    boric = a1 * f1 * f2 / (f2 + f1 * f1)
    # Magnesium sulphate relaxation
    a2 = 21.44 * s / c * (1.0 + 0.025 * t)
    p2 = 1.0 - 1.37e-4 * d + 6.2e-9 * d * d
    f2_relax = 8.17 * 10.0 ** (8.0 - 1990.0 / theta_k) / (1.0 + 0.0018 * (s - 35.0))
    magnesium = a2 * p2 * f2_relax * f2 / (f2 + f2_relax * f2_relax)
    # Pure water viscosity
    if t <= 20.0:
        a3 = 4.937e-4 - 2.59e-5 * t + 9.11e-7 * t**2 - 1.50e-8 * t**3
    else:
        a3 = 3.964e-4 - 1.146e-5 * t + 1.45e-7 * t**2 - 6.5e-10 * t**3
    p3 = 1.0 - 3.83e-5 * d + 4.9e-10 * d * d
    water = a3 * p3 * f2
    return boric + magnesium + water


def ainslie_mccolm_db_per_km(frequency_khz: float, temperature_c: float = 4.0,
                             salinity_ppt: float = 35.0, depth_m: float = 1000.0,
                             ph: float = 8.0) -> float:
    """Ainslie & McColm (1998) simplified absorption (depth in m, converted to km inside)."""
    t, s, z, f = temperature_c, salinity_ppt, depth_m / 1000.0, frequency_khz
    f2 = f * f
    f1 = 0.78 * math.sqrt(s / 35.0) * math.exp(t / 26.0)
    f2_relax = 42.0 * math.exp(t / 17.0)
    boric = 0.106 * f1 * f2 / (f2 + f1 * f1) * math.exp((ph - 8.0) / 0.56)
    magnesium = (0.52 * (1.0 + t / 43.0) * (s / 35.0) * f2_relax * f2 / (f2 + f2_relax**2)
                 * math.exp(-z / 6.0))
    water = 0.00049 * f2 * math.exp(-(t / 27.0 + z / 17.0))
    return boric + magnesium + water


MODELS = ("thorp", "francois_garrison")


def absorption_db_per_km(model: str, frequency_khz: float, temperature_c: float = 4.0,
                         salinity_ppt: float = 35.0, depth_m: float = 1000.0,
                         ph: float = 8.0) -> float:
    if model == "thorp":
        return thorp_db_per_km(frequency_khz)
    if model == "francois_garrison":
        return francois_garrison_db_per_km(frequency_khz, temperature_c, salinity_ppt, depth_m,
                                           ph)
    raise ValueError(f"unknown absorption model {model!r}; choose one of {list(MODELS)}")
