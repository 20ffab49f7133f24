"""Transmission loss (TL, dB) and propagation delay between two positions.

Models, selectable per scenario:
- `SpreadingModel`: TL = k·10·log10(r) + α·r/1000 with k = 2 (spherical), 1.5 (practical) or
  1 (cylindrical), r the slant range in m (at least 1 m), α the volume absorption in dB/km
  (Thorp or Francois–Garrison at the mean depth of the path). Microseconds per call. It traces
  no rays: its multipath RMS delay spread is the configured `delay_spread_s` (0: one path).
- `BellhopModel`: incoherent TL from the Bellhop Gaussian-beam tracer (bellhopcxx, shipped by
  whoi-uwapm) with the current sound speed profile and water depth, plus an arrivals run for the
  delay of the strongest eigenray and the RMS delay spread of all arrivals (power-weighted).
  whoi-uwapm's environment file always selects Thorp volume attenuation; the configured
  absorption model (default Francois–Garrison at the configured temperature, as the spreading
  model) replaces it: TL = TL_bellhop − α_Thorp·r + α_model·r over the slant range r. Each run
  takes ~20 ms, so results are cached per quantised geometry (depths, horizontal range,
  frequency), computed at the centre of the quantisation cell and then corrected to the actual
  geometry: the delay by the slant-range difference over the mean sound speed between the two
  depths, the TL by spherical spreading and absorption over that difference (so a 10 m cell
  leaves no 5 m ranging bias). The beam fan is chosen by geometry: it reaches the launch angles
  of the first surface- and bottom-reflected paths (image sources) plus a margin, at least
  Bellhop's ±80°, so both paths are found at every range. The arrivals (delay after the first
  one, share of the power) are kept for the ISI model (`acomms_sim.physics.multipath`).
  `runs` and `cache_hits` count both.

`Propagation` combines a TL model with a sound speed profile to give TL and delay between two
geographic positions: delay = the model's eigenray delay when it has one (Bellhop), else slant
range / harmonic-mean sound speed between the two depths (straight path).
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import io
import math
import os
import tempfile
import threading

from acomms_sim.physics import geodesy
from acomms_sim.physics.absorption import absorption_db_per_km
from acomms_sim.physics.sound_speed import SoundSpeedProfile

SPREADING_FACTORS = {"spherical": 2.0, "practical": 1.5, "cylindrical": 1.0}
MAX_TRANSMISSION_LOSS_DB = 300.0  # reported for total shadow zones (Bellhop pressure 0)


def spreading_loss_db(range_m: float, spreading: str = "spherical") -> float:
    try:
        k = SPREADING_FACTORS[spreading]
    except KeyError:
        raise ValueError(f"unknown spreading {spreading!r}; choose one of "
                         f"{sorted(SPREADING_FACTORS)}") from None
    return k * 10.0 * math.log10(max(range_m, 1.0))


@dataclasses.dataclass
class SpreadingModel:
    """Defaults here are the defaults of the nodes and the scenarios too (one source)."""

    spreading: str = "practical"
    absorption_model: str = "francois_garrison"
    temperature_c: float = 10.0
    salinity_ppt: float = 35.0
    ph: float = 8.0
    delay_spread_s: float = 0.0  # configured multipath RMS delay spread (no ray tracing)

    def validate(self) -> None:
        if not (math.isfinite(self.delay_spread_s) and self.delay_spread_s >= 0):
            raise ValueError(f"delay_spread_s must be >= 0, got {self.delay_spread_s}")
        spreading_loss_db(1.0, self.spreading)
        absorption_db_per_km(self.absorption_model, 10.0, self.temperature_c,
                             self.salinity_ppt, 100.0, self.ph)

    def transmission_loss_db(self, src_depth_m: float, rcv_depth_m: float,
                             horizontal_range_m: float, frequency_hz: float) -> float:
        slant = geodesy.slant_range_m(horizontal_range_m, src_depth_m, rcv_depth_m)
        alpha = absorption_db_per_km(self.absorption_model, frequency_hz / 1000.0,
                                     self.temperature_c, self.salinity_ppt,
                                     (src_depth_m + rcv_depth_m) / 2.0, self.ph)
        return spreading_loss_db(slant, self.spreading) + alpha * max(slant, 1.0) / 1000.0

    def timing(self, *_geometry) -> tuple[None, float]:
        """(no eigenray delay: the straight path's, configured RMS delay spread)."""
        return None, self.delay_spread_s


class BellhopError(RuntimeError):
    """Bellhop could not compute a result; the message says why."""


BELLHOPCXX_MEMORY_OPTION = "-mem=64MiB"  # one source/receiver pair needs far less than 4 GiB
_UWAPM_LOCK = threading.Lock()  # whoi-uwapm uses module-level state (mkstemp); one run at a time


BEAM_FAN_MIN_DEG = 80.0  # whoi-uwapm's default fan, ±80°
BEAM_FAN_MARGIN_DEG = 5.0  # beyond the steepest first surface / bottom path (refraction)
BEAM_FAN_MAX_DEG = 89.0
MAX_PROFILE_ARRIVALS = 64  # the strongest arrivals kept per geometry for the ISI model


def beam_fan_deg(src_depth_m: float, rcv_depth_m: float, horizontal_range_m: float,
                 water_depth_m: float) -> float:
    """Half-width of the launch fan (deg) that reaches the first surface-reflected path (image
    source above the surface) and the first bottom-reflected one (image below the bottom)."""
    surface = src_depth_m + rcv_depth_m
    bottom = 2.0 * water_depth_m - src_depth_m - rcv_depth_m
    steepest = math.degrees(math.atan2(max(surface, bottom), max(horizontal_range_m, 1e-3)))
    return min(max(BEAM_FAN_MIN_DEG, steepest + BEAM_FAN_MARGIN_DEG), BEAM_FAN_MAX_DEG)


@dataclasses.dataclass(frozen=True)
class BellhopResult:
    raw_transmission_loss_db: float  # as Bellhop computed it (with Thorp attenuation)
    delay_s: float | None             # strongest eigenray's travel time (None: no arrivals)
    delay_spread_s: float             # RMS delay spread of the arrivals, power-weighted
    arrivals: tuple[tuple[float, float], ...] = ()  # (s after the first arrival, power share)


@dataclasses.dataclass
class BellhopModel:
    """Incoherent Bellhop TL and eigenray timing with a cache keyed on quantised geometry."""

    profile: SoundSpeedProfile
    water_depth_m: float
    absorption_model: str = "francois_garrison"
    temperature_c: float = 10.0
    salinity_ppt: float = 35.0
    ph: float = 8.0
    bottom_soundspeed_mps: float = 1600.0
    bottom_density_kg_m3: float = 1600.0
    bottom_absorption_db_per_wavelength: float = 0.1
    range_quantum_m: float = 10.0
    depth_quantum_m: float = 1.0
    frequency_quantum_hz: float = 100.0
    cache_size: int = 20000
    runs: int = 0
    cache_hits: int = 0

    def __post_init__(self):
        if not self.water_depth_m > 0:
            raise ValueError(f"Bellhop needs a positive water depth, got {self.water_depth_m}")
        self._cache: collections.OrderedDict = collections.OrderedDict()

    def set_profile(self, profile: SoundSpeedProfile, water_depth_m: float | None = None) -> None:
        """New environment: the cache is cleared since every cached TL depended on the old one."""
        if water_depth_m is not None:
            if not water_depth_m > 0:
                raise ValueError(f"Bellhop needs a positive water depth, got {water_depth_m}")
            self.water_depth_m = water_depth_m
        self.profile = profile
        self._cache.clear()

    def _quantise(self, value: float, quantum: float) -> float:
        return (math.floor(value / quantum) + 0.5) * quantum

    def transmission_loss_db(self, src_depth_m: float, rcv_depth_m: float,
                             horizontal_range_m: float, frequency_hz: float) -> float:
        geometry = (src_depth_m, rcv_depth_m, horizontal_range_m, frequency_hz)
        result = self.result(*geometry)
        if result.raw_transmission_loss_db >= MAX_TRANSMISSION_LOSS_DB:
            return MAX_TRANSMISSION_LOSS_DB
        slant, cell_slant = self._slants(*geometry)
        khz = frequency_hz / 1000.0
        configured = absorption_db_per_km(self.absorption_model, khz, self.temperature_c,
                                          self.salinity_ppt, (src_depth_m + rcv_depth_m) / 2.0,
                                          self.ph)
        thorp = absorption_db_per_km("thorp", khz)
        # from the cell's centre to the actual range (spherical + Bellhop's Thorp over the
        # difference), then the configured absorption in place of Thorp over the actual range
        to_actual = (20.0 * math.log10(max(slant, 1.0) / max(cell_slant, 1.0))
                     + thorp * (slant - cell_slant) / 1000.0)
        correction = to_actual + (configured - thorp) * slant / 1000.0
        return min(result.raw_transmission_loss_db + correction, MAX_TRANSMISSION_LOSS_DB)

    def timing(self, src_depth_m: float, rcv_depth_m: float, horizontal_range_m: float,
               frequency_hz: float) -> tuple[float | None, float]:
        """(strongest eigenray delay at the actual range or None, RMS delay spread), seconds."""
        geometry = (src_depth_m, rcv_depth_m, horizontal_range_m, frequency_hz)
        result = self.result(*geometry)
        if result.delay_s is None:
            return None, result.delay_spread_s
        slant, cell_slant = self._slants(*geometry)
        speed = self.profile.mean_speed_between(src_depth_m, rcv_depth_m)
        return result.delay_s + (slant - cell_slant) / speed, result.delay_spread_s

    def arrival_profile(self, src_depth_m: float, rcv_depth_m: float, horizontal_range_m: float,
                        frequency_hz: float) -> tuple[tuple[float, float], ...]:
        """(s after the first arrival, share of the power) of the strongest arrivals."""
        return self.result(src_depth_m, rcv_depth_m, horizontal_range_m, frequency_hz).arrivals

    def _slants(self, src_depth_m: float, rcv_depth_m: float, horizontal_range_m: float,
                frequency_hz: float) -> tuple[float, float]:
        """(actual slant range, slant range of the cell Bellhop ran at), m."""
        low, high, rng, _ = self._key(src_depth_m, rcv_depth_m, horizontal_range_m, frequency_hz)
        return (geodesy.slant_range_m(horizontal_range_m, src_depth_m, rcv_depth_m),
                geodesy.slant_range_m(rng, low, high))

    def _key(self, src_depth_m: float, rcv_depth_m: float, horizontal_range_m: float,
             frequency_hz: float) -> tuple[float, float, float, float]:
        for name, depth in (("source", src_depth_m), ("receiver", rcv_depth_m)):
            if not 0.0 <= depth <= self.water_depth_m:
                raise ValueError(f"{name} depth {depth} m is outside the water column "
                                 f"0..{self.water_depth_m} m")
        margin = min(self.depth_quantum_m / 2.0, self.water_depth_m / 4.0)
        depths = sorted(min(max(self._quantise(d, self.depth_quantum_m), margin),
                            self.water_depth_m - margin) for d in (src_depth_m, rcv_depth_m))
        rng = max(self._quantise(horizontal_range_m, self.range_quantum_m), 1.0)
        freq = self._quantise(frequency_hz, self.frequency_quantum_hz)
        # Reciprocity: TL(a -> b) = TL(b -> a), so the key uses the sorted depths.
        return depths[0], depths[1], rng, freq

    def result(self, src_depth_m: float, rcv_depth_m: float, horizontal_range_m: float,
               frequency_hz: float) -> BellhopResult:
        """Bellhop's values at the centre of the geometry's cell (cached)."""
        key = self._key(src_depth_m, rcv_depth_m, horizontal_range_m, frequency_hz)
        depths, rng, freq = key[:2], key[2], key[3]
        cached = self._cache.get(key)
        if cached is not None:
            self._cache.move_to_end(key)
            self.cache_hits += 1
            return cached
        value = BellhopResult(self.run_bellhop(depths[0], depths[1], rng, freq),
                              *self.run_arrivals(depths[0], depths[1], rng, freq))
        self._cache[key] = value
        if len(self._cache) > self.cache_size:
            self._cache.popitem(last=False)
        return value

    def run_bellhop(self, src_depth_m: float, rcv_depth_m: float, horizontal_range_m: float,
                    frequency_hz: float) -> float:
        """One bellhopcxx run (incoherent TL, Thorp attenuation) in a private directory."""
        result = self._run(src_depth_m, rcv_depth_m, horizontal_range_m, frequency_hz,
                           lambda uwapm, env: uwapm.compute_transmission_loss(
                               env, mode=uwapm.incoherent, model="bellhopcxx"))
        pressure = abs(complex(result.values.flat[0]))
        if pressure <= 0.0 or not math.isfinite(pressure):
            return MAX_TRANSMISSION_LOSS_DB
        return min(-20.0 * math.log10(pressure), MAX_TRANSMISSION_LOSS_DB)

    def run_arrivals(self, src_depth_m: float, rcv_depth_m: float, horizontal_range_m: float,
                     frequency_hz: float) -> tuple[float | None, float, tuple]:
        """One bellhopcxx arrivals run: (strongest eigenray delay, RMS delay spread, profile)."""
        def compute(uwapm, env):
            # whoi-uwapm builds one pandas frame per arrival (seconds for thousands of
            # arrivals): read the .arr file ourselves
            original = uwapm._Bellhop._load_arrivals
            uwapm._Bellhop._load_arrivals = lambda _self, base: read_arrivals(base + ".arr")
            try:
                return uwapm.compute_arrivals(env, model="bellhopcxx")
            finally:
                uwapm._Bellhop._load_arrivals = original

        try:
            amplitudes, delays = self._run(src_depth_m, rcv_depth_m, horizontal_range_m,
                                           frequency_hz, compute)
        except BellhopError:  # no eigenray reaches the receiver (the TL run already worked)
            return None, 0.0, ()
        return (*arrival_timing(amplitudes, delays), arrival_profile(amplitudes, delays))

    def _run(self, src_depth_m: float, rcv_depth_m: float, horizontal_range_m: float,
             frequency_hz: float, compute):
        """compute(env) with whoi-uwapm in a private temporary directory; BellhopError."""
        try:
            from whoi_uwapm import uwapm
        except ImportError as exc:
            raise BellhopError(f"the Bellhop model needs whoi-uwapm: {exc}") from exc
        self.runs += 1
        with _UWAPM_LOCK, tempfile.TemporaryDirectory(prefix="acomms_bellhop_") as workdir:
            def mkstemp_in_workdir(suffix="", prefix="tmp", dir=None, text=False):
                return tempfile.mkstemp(suffix=suffix, prefix=prefix, dir=workdir, text=text)

            printed = io.StringIO()
            original, original_run = uwapm._mkstemp, uwapm._Bellhop._bellhop
            uwapm._mkstemp = mkstemp_in_workdir
            # bellhopcxx reserves 4 GiB by default (seconds per run just to set it up)
            uwapm._Bellhop._bellhop = lambda model, *args: original_run(
                model, BELLHOPCXX_MEMORY_OPTION, *args)
            try:
                with contextlib.redirect_stdout(printed):
                    env = uwapm.create_env2d(
                        frequency=frequency_hz, depth=self.water_depth_m,
                        soundspeed=(self.profile.as_pairs(self.water_depth_m)
                                    if not self.profile.is_constant
                                    else float(self.profile.speeds_mps[0])),
                        soundspeed_interp=uwapm.linear,
                        bottom_soundspeed=self.bottom_soundspeed_mps,
                        bottom_density=self.bottom_density_kg_m3,
                        bottom_absorption=self.bottom_absorption_db_per_wavelength,
                        tx_depth=src_depth_m, rx_depth=rcv_depth_m,
                        rx_range=horizontal_range_m,
                        **fan_angles(beam_fan_deg(src_depth_m, rcv_depth_m,
                                                  horizontal_range_m, self.water_depth_m)))
                    result = compute(uwapm, env)
            except (AssertionError, ValueError, KeyError, OSError) as exc:
                raise BellhopError(f"Bellhop environment rejected: {exc}") from exc
            finally:
                uwapm._mkstemp, uwapm._Bellhop._bellhop = original, original_run
            leftovers = sorted(os.listdir(workdir))
        if result is None:
            detail = printed.getvalue().strip() or "no output file"
            raise BellhopError(f"bellhopcxx failed ({detail}); work files: {leftovers}")
        return result


def read_arrivals(path: str) -> tuple[list[float], list[float]]:
    """(|amplitude|, delay s) of every arrival in a Bellhop .arr file for one source, receiver
    depth and range (both the '2D' and the older header formats)."""
    with open(path) as stream:
        lines = [line.strip() for line in stream if line.strip()]
    header = 5 if "2D" in lines[0] else 4  # title, freq, tx, rx, ranges | freq+counts, 3 lines
    rows = lines[header + 1:]  # after the source's "max arrivals" line
    count = int(rows[0].split()[0])
    amplitudes, delays = [], []
    for row in rows[1:count + 1]:
        fields = row.split()
        amplitudes.append(abs(float(fields[0])))
        delays.append(float(fields[2]))
    return amplitudes, delays


def arrival_timing(amplitudes: list[float], delays_s: list[float]) -> tuple[float | None, float]:
    """(delay of the strongest arrival, power-weighted RMS delay spread); (None, 0) for none."""
    if not amplitudes:
        return None, 0.0
    powers = [a * a for a in amplitudes]
    total = sum(powers)
    strongest = delays_s[max(range(len(powers)), key=powers.__getitem__)]
    if total <= 0:
        return strongest, 0.0
    mean = sum(p * t for p, t in zip(powers, delays_s, strict=True)) / total
    spread = math.sqrt(max(0.0, sum(p * (t - mean) ** 2 for p, t in zip(powers, delays_s,
                                                                        strict=True)) / total))
    return strongest, spread


def fan_angles(half_width_deg: float) -> dict:
    return {"min_angle": -half_width_deg, "max_angle": half_width_deg}


def arrival_profile(amplitudes: list[float], delays_s: list[float],
                    keep: int = MAX_PROFILE_ARRIVALS) -> tuple[tuple[float, float], ...]:
    """(delay after the first arrival, share of the total power) of the `keep` strongest
    arrivals, in order of delay; () for none."""
    powers = [a * a for a in amplitudes]
    total = sum(powers)
    if not powers or total <= 0:
        return ()
    first = min(delays_s)
    strongest = sorted(range(len(powers)), key=lambda i: -powers[i])[:keep]
    return tuple(sorted((delays_s[i] - first, powers[i] / total) for i in strongest))


@dataclasses.dataclass(frozen=True)
class PathResult:
    transmission_loss_db: float
    delay_s: float
    horizontal_range_m: float
    slant_range_m: float
    delay_spread_s: float = 0.0  # multipath RMS delay spread (Bellhop arrivals), 0 otherwise
    arrivals: tuple[tuple[float, float], ...] = ()  # (s after the first, power share); Bellhop


class Propagation:
    """TL model + sound speed profile: TL and delay between two geographic positions."""

    def __init__(self, model, profile: SoundSpeedProfile):
        self.model = model
        self.profile = profile

    def path(self, src: tuple[float, float, float], rcv: tuple[float, float, float],
             frequency_hz: float) -> PathResult:
        """src/rcv are (latitude, longitude, depth_m); ValueError for a bad position."""
        geodesy.check_position(*src)
        geodesy.check_position(*rcv)
        horizontal = geodesy.horizontal_distance_m(src[0], src[1], rcv[0], rcv[1])
        slant = geodesy.slant_range_m(horizontal, src[2], rcv[2])
        loss = self.model.transmission_loss_db(src[2], rcv[2], horizontal, frequency_hz)
        timing = getattr(self.model, "timing", None)
        delay, spread = (timing(src[2], rcv[2], horizontal, frequency_hz) if timing
                         else (None, 0.0))
        if delay is None:
            delay = slant / self.profile.mean_speed_between(src[2], rcv[2])
        profile = getattr(self.model, "arrival_profile", None)
        arrivals = profile(src[2], rcv[2], horizontal, frequency_hz) if profile else ()
        return PathResult(loss, delay, horizontal, slant, spread, arrivals)
