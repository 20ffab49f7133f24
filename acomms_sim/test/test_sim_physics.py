"""ROS-free physics: published check values and formula identities."""

import math
import warnings

import pytest

from acomms_sim.physics import absorption, ambient_noise, geodesy, sound_speed, transmission_loss
from acomms_sim.physics.sound_speed import SoundSpeedProfile, ValidityWarning


def test_mackenzie_published_check_value():
    # Mackenzie (1981): T=25 °C, S=35 ppt, D=1000 m -> 1550.744 m/s
    assert sound_speed.mackenzie(25.0, 35.0, 1000.0) == pytest.approx(1550.744, abs=1e-3)


def test_medwin_close_to_mackenzie_in_common_range():
    for t, s, d in ((5, 35, 0), (15, 34, 200), (25, 36, 500)):
        assert sound_speed.medwin(t, s, d) == pytest.approx(sound_speed.mackenzie(t, s, d), abs=1.0)


def test_out_of_range_warns_not_fails():
    with pytest.warns(ValidityWarning, match="temperature_c"):
        value = sound_speed.mackenzie(35.0, 35.0, 100.0)
    assert 1500 < value < 1600
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sound_speed.mackenzie(10.0, 35.0, 100.0)  # inside: no warning


def test_unknown_equation_named():
    with pytest.raises(ValueError, match="mackenzie"):
        sound_speed.sound_speed(10, 35, 0, equation="nope")


def test_profile_interpolation_and_mean_speed():
    profile = SoundSpeedProfile([0, 100, 200], [1500, 1480, 1480])
    assert profile.speed_at(50) == pytest.approx(1490)
    assert profile.speed_at(500) == pytest.approx(1480)  # held beyond the last sample
    # harmonic mean over 0..100 of a linear 1500 -> 1480 profile
    expected = 20.0 / math.log(1500 / 1480)
    assert profile.mean_speed_between(0, 100) == pytest.approx(expected, rel=1e-5)
    assert SoundSpeedProfile.constant(1500).mean_speed_between(10, 900) == 1500


@pytest.mark.parametrize("depths,speeds,match", [
    ([], [], "empty"), ([0, 10], [1500], "2 depths but 1 speeds"),
    ([10, 5], [1500, 1500], "increasing"), ([0, 10], [1500, 2500], "1300..1800"),
    ([0, float("nan")], [1500, 1500], "NaN"),
])
def test_profile_bad_input_is_refused_with_reason(depths, speeds, match):
    with pytest.raises(ValueError, match=match):
        SoundSpeedProfile(depths, speeds)


def test_thorp_values():
    # Thorp in the dB/km form of Stojanovic (2007); hand-evaluated at 1 and 10 kHz.
    assert absorption.thorp_db_per_km(1.0) == pytest.approx(0.11 / 2 + 44 / 4101 + 2.75e-4
                                                           + 0.003)
    assert absorption.thorp_db_per_km(1.0) == pytest.approx(0.0690, abs=1e-4)
    assert absorption.thorp_db_per_km(10.0) == pytest.approx(1.187, abs=1e-3)
    assert absorption.thorp_db_per_km(25.0) == pytest.approx(6.105, abs=1e-3)


def test_francois_garrison_against_independent_formulas():
    # Ainslie & McColm (1998) is published as within 10 % of Francois-Garrison for 0.1 kHz..1 MHz.
    for f in (0.5, 1, 5, 10, 25, 50, 100, 300):
        for t, d in ((4, 1000), (10, 0), (20, 100)):
            fg = absorption.francois_garrison_db_per_km(f, t, 35, d, 8)
            am = absorption.ainslie_mccolm_db_per_km(f, t, 35, d, 8)
            assert fg == pytest.approx(am, rel=0.10), (f, t, d)
    # Thorp was fitted at ~4 °C and ~1 km depth: F-G there agrees within ~20 % around 10 kHz.
    fg10 = absorption.francois_garrison_db_per_km(10, 4, 35, 1000, 8)
    assert fg10 == pytest.approx(1.005, abs=0.01)
    assert fg10 == pytest.approx(absorption.thorp_db_per_km(10), rel=0.2)


def test_francois_garrison_dependencies():
    fg = absorption.francois_garrison_db_per_km
    # boric acid term grows with pH (dominant at 1 kHz)
    assert fg(1, 10, 35, 0, 8.2) > fg(1, 10, 35, 0, 7.8)
    # pressure reduces MgSO4 absorption (dominant at 50 kHz)
    assert fg(50, 4, 35, 3000, 8) < fg(50, 4, 35, 0, 8)


def test_noise_model_components():
    # Coates/Wenz fit: hand-evaluated components at 10 kHz, s=0.5, w=0
    f = 10.0
    assert ambient_noise.turbulence_psd_db(f) == pytest.approx(17 - 30)
    assert ambient_noise.thermal_psd_db(f) == pytest.approx(-15 + 20)
    assert ambient_noise.shipping_psd_db(f, 0.5) == pytest.approx(
        40 + 26 - 60 * math.log10(10.03))
    assert ambient_noise.wind_psd_db(f, 0.0) == pytest.approx(50 + 20 - 40 * math.log10(10.4))
    total = ambient_noise.wenz_psd_db(f, 0.5, 0.0)
    parts = [-13, 5, 40 + 26 - 60 * math.log10(10.03), 70 - 40 * math.log10(10.4)]
    assert total == pytest.approx(10 * math.log10(sum(10 ** (p / 10) for p in parts)))
    # more wind, more noise
    assert ambient_noise.wenz_psd_db(f, 0.5, 10.0) > total + 10


def test_band_noise_is_spectrum_integral():
    # Narrow band: ~ N(fc) + 10 log B
    n_fc = float(ambient_noise.wenz_psd_db(10.0, 0.5, 5.0))
    band = ambient_noise.wenz_band_level_db(10000, 100, 0.5, 5.0)
    assert band == pytest.approx(n_fc + 20.0, abs=0.05)
    # 5 kHz band: the integral differs from the flat approximation but stays close
    wide = ambient_noise.wenz_band_level_db(10000, 5000, 0.5, 5.0)
    assert wide == pytest.approx(n_fc + 10 * math.log10(5000), abs=1.0)
    model = ambient_noise.AmbientNoise(model="fixed", fixed_band_level_db=63.0)
    assert model.band_level_db(10000, 5000) == 63.0
    with pytest.raises(ValueError, match="noise model"):
        ambient_noise.AmbientNoise(model="loud").validate()


def test_spreading_loss():
    assert transmission_loss.spreading_loss_db(1000, "spherical") == pytest.approx(60.0)
    assert transmission_loss.spreading_loss_db(1000, "practical") == pytest.approx(45.0)
    assert transmission_loss.spreading_loss_db(1000, "cylindrical") == pytest.approx(30.0)
    assert transmission_loss.spreading_loss_db(0.1, "spherical") == 0.0  # clamped at 1 m
    model = transmission_loss.SpreadingModel("spherical", "thorp")
    tl = model.transmission_loss_db(50, 50, 2000, 10000)
    assert tl == pytest.approx(20 * math.log10(2000) + 2 * absorption.thorp_db_per_km(10))
    with pytest.raises(ValueError, match="spherical"):
        transmission_loss.spreading_loss_db(10, "conical")


def test_geodesy_and_delay_is_range_over_speed():
    lat, lon = geodesy.offset_position(41.5, -70.7, 1500.0, 0.0)
    assert geodesy.horizontal_distance_m(41.5, -70.7, lat, lon) == pytest.approx(1500, abs=0.01)
    lat2, lon2 = geodesy.offset_position(41.5, -70.7, 0.0, 1200.0)
    assert geodesy.horizontal_distance_m(41.5, -70.7, lat2, lon2) == pytest.approx(1200, rel=1e-4)
    propagation = transmission_loss.Propagation(transmission_loss.SpreadingModel(),
                                                SoundSpeedProfile.constant(1500.0))
    path = propagation.path((41.5, -70.7, 20.0), (lat, lon, 20.0), 10000)
    assert path.delay_s == pytest.approx(1.0, abs=1e-5)
    # slant geometry: 1200 m horizontal, 500 m vertical -> 1300 m
    path = propagation.path((41.5, -70.7, 10.0), (lat2, lon2, 510.0), 10000)
    assert path.slant_range_m == pytest.approx(1300, rel=1e-4)
    assert path.delay_s == pytest.approx(1300 / 1500, rel=1e-4)


@pytest.mark.parametrize("position,match", [
    ((91.0, 0.0, 10.0), "latitude"), ((0.0, 200.0, 10.0), "longitude"),
    ((0.0, 0.0, -5.0), "depth"), ((float("nan"), 0.0, 1.0), "finite")])
def test_bad_position_refused(position, match):
    with pytest.raises(ValueError, match=match):
        geodesy.check_position(*position)
