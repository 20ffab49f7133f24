"""The `channel:` section of a scenario (ROS-free): sound speed (or a sound speed profile), water
depth, noise, transmission loss, absorption, band, source level, fading, capture margin,
Doppler tolerance and multipath."""

from __future__ import annotations

from acomms_bringup.description.scenario_parsing import (
    SCENARIO_KEYS_TABLE,
    _check_type,
    _Context,
    _Section,
)
from acomms_bringup.description.scenario_types import (
    Absorption,
    Channel,
    Fading,
    Multipath,
    Noise,
)
from acomms_sim.physics.multipath import tolerance_table


def _parse_sound_speed_profile(ctx: _Context, profile_section: _Section
                               ) -> tuple[tuple[float, float], ...]:
    depths = profile_section.take("depths_m")
    speeds = profile_section.take("sound_speeds_mps")
    profile_section.finish()
    if not depths or len(depths) != len(speeds):
        raise ctx.error(profile_section.path,
                        f"depths_m ({len(depths)}) and sound_speeds_mps ({len(speeds)}) "
                        "must be non-empty lists of the same length")
    pairs = []
    for index, (depth, speed) in enumerate(zip(depths, speeds, strict=True)):
        depth = _check_type(ctx, f"{profile_section.path}.depths_m[{index}]", depth, (float,))
        speed = _check_type(ctx, f"{profile_section.path}.sound_speeds_mps[{index}]", speed,
                            (float,))
        if not 1300.0 <= speed <= 1700.0:
            raise ctx.error(f"{profile_section.path}.sound_speeds_mps[{index}]",
                            f"{speed} m/s outside 1300..1700")
        if pairs and depth <= pairs[-1][0]:
            raise ctx.error(f"{profile_section.path}.depths_m[{index}]",
                            "depths must increase strictly")
        pairs.append((depth, speed))
    return tuple(pairs)


def _parse_channel(ctx: _Context, section: _Section | None) -> Channel:
    if section is None:
        section = _Section(ctx, {}, "channel", SCENARIO_KEYS_TABLE["channel"].keys)
    sound_speed = section.take("sound_speed_mps")
    profile = None
    profile_section = section.section("sound_speed_profile")
    if profile_section is not None:
        if section.has("sound_speed_mps"):
            raise ctx.error(profile_section.path,
                            "give either sound_speed_mps or sound_speed_profile, not both")
        profile = _parse_sound_speed_profile(ctx, profile_section)
        sound_speed = sum(s for _, s in profile) / len(profile)
    water_depth = section.take("water_depth_m")
    noise = _parse_noise(ctx, section.section("noise"), section.key_path("noise"))
    tl_section = section.section("transmission_loss")
    if tl_section is None:
        tl_section = section.empty("transmission_loss")
    tl_model = tl_section.take("model")
    spreading = tl_section.take("spreading")
    tl_section.finish()
    absorption = Absorption()
    absorption_section = section.section("absorption")
    if absorption_section is not None:
        absorption = Absorption(
            model=absorption_section.take("model"),
            temperature_c=absorption_section.take("temperature_c"),
            salinity_ppt=absorption_section.take("salinity_ppt"),
            ph=absorption_section.take("ph"))
        absorption_section.finish()
    center = section.take("center_frequency_hz")
    bandwidth = section.take("bandwidth_hz")
    if bandwidth / 2 >= center:
        raise ctx.error(section.key_path("bandwidth_hz"),
                        f"band {center} Hz +/- {bandwidth / 2} Hz reaches 0 Hz")
    source_level = section.take("source_level_db")
    tx_level = section.take("tx_level")
    fading = _parse_fading(ctx, section.section("fading"))
    capture = section.take("capture_margin_db")
    doppler = section.take("doppler_tolerance_mps")
    multipath = _parse_multipath(ctx, section.section("multipath"))
    section.finish()
    return Channel(sound_speed_mps=sound_speed, sound_speed_profile=profile,
                   water_depth_m=water_depth, noise=noise, transmission_loss_model=tl_model,
                   spreading=spreading, absorption=absorption, center_frequency_hz=center,
                   bandwidth_hz=bandwidth, source_level_db=source_level, tx_level=tx_level,
                   fading=fading, capture_margin_db=capture, doppler_tolerance_mps=doppler,
                   multipath=multipath)


def _parse_fading(ctx: _Context, section: _Section | None) -> Fading:
    if section is None:
        return Fading()
    fading = Fading(section.take("model"), section.take("k_factor"),
                    section.take("coherence_time_s"))
    section.finish()
    return fading


def _parse_multipath(ctx: _Context, section: _Section | None) -> Multipath:
    if section is None:
        return Multipath()
    spread = section.take("delay_spread_s")
    tolerance = section.take("isi_tolerance_s")
    try:
        tolerance_table(tolerance)
    except (TypeError, ValueError) as exc:
        raise ctx.error(section.key_path("isi_tolerance_s"), str(exc)) from None
    section.finish()
    return Multipath(spread, tuple(float(v) for v in tolerance))


def _parse_noise(ctx: _Context, section: _Section | None, path: str) -> Noise:
    if section is None:
        return Noise(model="fixed")
    model = section.take("model")
    if model == "fixed":
        noise = Noise(model=model, level_db=section.take("level_db"))
    else:
        noise = Noise(model=model, shipping_activity=section.take("shipping_activity"),
                      wind_speed_mps=section.take("wind_speed_mps"))
    section.finish()
    return noise
