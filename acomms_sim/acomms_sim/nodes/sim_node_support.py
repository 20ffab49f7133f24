"""ROS-side helpers shared by the acomms_sim nodes: channel parameters.

The channel parameters (propagation model, water properties, noise) are declared identically by
`modem_sim_node` (which evaluates receptions in-process) and `sim_transmission_loss_node`, so a
scenario file can give both the same values. The time conversions are
`acomms_core.ros.ros_support`'s (re-exported here for older imports).
"""

from __future__ import annotations

from acomms_core.ros.ros_support import (  # noqa: F401 - time conversions re-exported
    ParameterSpec,
    seconds_to_duration_msg,
    seconds_to_time_msg,
    stamp_seconds,
)
from acomms_sim.physics.absorption import MODELS as ABSORPTION_MODELS
from acomms_sim.physics.ambient_noise import AmbientNoise
from acomms_sim.physics.fading import MODELS as FADING_MODELS
from acomms_sim.physics.fading import FadingModel
from acomms_sim.physics.sound_speed import SoundSpeedProfile
from acomms_sim.physics.transmission_loss import (
    SPREADING_FACTORS,
    BellhopModel,
    Propagation,
    SpreadingModel,
)

TL_MODELS = ("spreading", "bellhop")
_SPREADING = SpreadingModel()  # the library's defaults are the nodes' defaults
_NOISE = AmbientNoise()
_FADING = FadingModel()

PROPAGATION_SPECS = [
    ParameterSpec("transmission_loss_model", "spreading",
                  "'spreading' (spreading + absorption, fast) or 'bellhop' (bellhopcxx via "
                  "whoi-uwapm, cached per quantised geometry)"),
    ParameterSpec("spreading", _SPREADING.spreading,
                  "spreading law: spherical, practical or cylindrical"),
    ParameterSpec("absorption_model", _SPREADING.absorption_model,
                  "volume absorption: thorp or francois_garrison (spreading and bellhop)"),
    ParameterSpec("water_temperature_c", _SPREADING.temperature_c,
                  "water temperature for absorption and Mackenzie sound speed, °C", -2.0, 40.0),
    ParameterSpec("salinity_ppt", _SPREADING.salinity_ppt,
                  "salinity for absorption and Mackenzie sound speed, ppt", 0.0, 45.0),
    ParameterSpec("ph", _SPREADING.ph, "pH for Francois-Garrison absorption", 6.0, 9.0),
    ParameterSpec("sound_speed_mps", 0.0,
                  "constant sound speed used until a sound_speed_profile message arrives, m/s; "
                  "0: Mackenzie (1981) at water_temperature_c and salinity_ppt over depth",
                  0.0, 1800.0),
    ParameterSpec("delay_spread_s", _SPREADING.delay_spread_s,
                  "spreading model: multipath RMS delay spread of every path, s (bellhop "
                  "computes its own from the eigenrays); reported in reception events and "
                  "used by modem_sim_node's isi_tolerance_s", 0.0, 10.0),
    ParameterSpec("water_depth_m", 1000.0, "water depth for the Bellhop model, m", 1.0, 12000.0),
    ParameterSpec("bellhop_range_quantum_m", 10.0, "Bellhop cache cell size in range, m",
                  0.1, 10000.0),
    ParameterSpec("bellhop_depth_quantum_m", 1.0, "Bellhop cache cell size in depth, m",
                  0.1, 1000.0),
]

NOISE_SPECS = [
    ParameterSpec("ambient_noise_model", "wenz",
                  "'wenz' (Coates fit of the Wenz curves, integrated over the band) or 'fixed'"),
    ParameterSpec("ambient_noise_db", 70.0,
                  "fixed model: noise level in the receiver band, dB re 1 uPa", 0.0, 200.0),
    ParameterSpec("shipping_activity", _NOISE.shipping_activity,
                  "wenz model: shipping activity 0..1", 0.0, 1.0),
    ParameterSpec("wind_speed_mps", _NOISE.wind_speed_mps, "wenz model: wind speed, m/s",
                  0.0, 50.0),
]

FADING_SPECS = [
    ParameterSpec("fading_model", _FADING.model,
                  "small-scale fading of the received level: none, rayleigh or rician "
                  "(seeded per link and packet)"),
    ParameterSpec("fading_k_factor", _FADING.k_factor,
                  "Rician K factor (linear power ratio of the stable path to the diffuse part)",
                  0.0, 1000.0),
    ParameterSpec("coherence_time_s", _FADING.coherence_time_s,
                  "fading coherence time, s: one gain per block of this length (0: per packet)",
                  0.0, 3600.0),
]

PROPAGATION_NAMES = [s.name for s in PROPAGATION_SPECS]
NOISE_NAMES = [s.name for s in NOISE_SPECS]
FADING_NAMES = [s.name for s in FADING_SPECS]


def validate_choices(values: dict) -> str | None:
    """Reason string for a bad choice parameter, None when acceptable."""
    choices = {"transmission_loss_model": TL_MODELS, "spreading": tuple(SPREADING_FACTORS),
               "absorption_model": ABSORPTION_MODELS,
               "ambient_noise_model": AmbientNoise.MODELS, "fading_model": FADING_MODELS}
    for name, allowed in choices.items():
        if name in values and values[name] not in allowed:
            return f"{name} must be one of {list(allowed)}, not {values[name]!r}"
    speed = values.get("sound_speed_mps", 0.0)
    if speed != 0.0 and not 1300.0 <= speed <= 1800.0:
        return f"sound_speed_mps must be 0 (Mackenzie) or within 1300..1800 m/s, not {speed}"
    return None


def build_propagation(values: dict, profile: SoundSpeedProfile | None) -> Propagation:
    """Propagation from the PROPAGATION_SPECS values; profile None = constant sound_speed_mps."""
    if profile is None:
        profile = default_sound_speed(values)
    if values["transmission_loss_model"] == "bellhop":
        model = BellhopModel(profile, values["water_depth_m"], values["absorption_model"],
                             values["water_temperature_c"], values["salinity_ppt"], values["ph"],
                             range_quantum_m=values["bellhop_range_quantum_m"],
                             depth_quantum_m=values["bellhop_depth_quantum_m"])
    else:
        model = SpreadingModel(values["spreading"], values["absorption_model"],
                               values["water_temperature_c"], values["salinity_ppt"],
                               values["ph"], values.get("delay_spread_s", 0.0))
        model.validate()
    return Propagation(model, profile)


def default_sound_speed(values: dict) -> SoundSpeedProfile:
    """sound_speed_mps > 0: constant; 0: Mackenzie at the water temperature and salinity."""
    if values["sound_speed_mps"] > 0:
        return SoundSpeedProfile.constant(values["sound_speed_mps"])
    return SoundSpeedProfile.mackenzie(values["water_temperature_c"], values["salinity_ppt"],
                                       values.get("water_depth_m", 1000.0))


def build_fading(values: dict) -> FadingModel:
    fading = FadingModel(values["fading_model"], values["fading_k_factor"],
                         values["coherence_time_s"])
    fading.validate()
    return fading


def build_noise(values: dict) -> AmbientNoise:
    noise = AmbientNoise(values["ambient_noise_model"], values["ambient_noise_db"],
                         values["shipping_activity"], values["wind_speed_mps"])
    noise.validate()
    return noise


def profile_from_msg(msg) -> SoundSpeedProfile:
    """SoundSpeedProfile from a SoundSpeedProfile message; ValueError with the reason."""
    return SoundSpeedProfile(list(msg.depths), list(msg.sound_speeds))
