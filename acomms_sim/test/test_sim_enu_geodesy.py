"""Local ENU frames on WGS84 (acomms_sim.physics.geodesy), plain pytest."""

import math
import random

import pytest

from acomms_sim.physics import geodesy
from acomms_sim.physics.geodesy import EnuOrigin, enu_to_geodetic, geodetic_to_enu

ONE_DEGREE_M = 6378137.0 * math.pi / 180.0  # 111319.49 m: 1 degree of the WGS84 equator
EQUATOR_TO_1N_M = 110574.39  # WGS84 meridian arc from 0 to 1 degree north


def test_known_points_on_the_equator_and_meridian():
    """WGS84 values (replaces the sphere's 111195.08 m per degree)."""
    origin = EnuOrigin(0.0, 0.0)
    assert enu_to_geodetic(ONE_DEGREE_M, 0.0, 0.0, origin) == pytest.approx((0.0, 1.0, 0.0))
    assert enu_to_geodetic(0.0, EQUATOR_TO_1N_M, -10.0, origin) == pytest.approx(
        (1.0, 0.0, 10.0), abs=1e-6)
    assert enu_to_geodetic(-ONE_DEGREE_M, -EQUATOR_TO_1N_M * 2, 0.0, origin)[0] == pytest.approx(
        -2.0, abs=2e-3)
    # due north from any origin stays on the meridian
    lat, lon, _ = enu_to_geodetic(0.0, 1000.0, 0.0, EnuOrigin(41.5, -70.7))
    assert lon == pytest.approx(-70.7) and lat == pytest.approx(41.5 + 1000.0 / 111_080.0,
                                                                abs=1e-5)


def test_small_offsets_agree_with_offset_position():
    origin = EnuOrigin(41.5, -70.7)
    lat, lon, _ = enu_to_geodetic(250.0, 1500.0, 0.0, origin)
    # offset_position is the same geodesic step
    assert (lat, lon) == pytest.approx(geodesy.offset_position(41.5, -70.7, 1500.0, 250.0),
                                       abs=1e-6)


def test_depth_is_minus_origin_altitude_minus_up():
    assert enu_to_geodetic(0, 0, -20.0, EnuOrigin(10.0, 20.0))[2] == pytest.approx(20.0)
    # z = 0 five metres below the surface (origin altitude -5): z = -20 is 25 m deep
    assert enu_to_geodetic(0, 0, -20.0, EnuOrigin(10.0, 20.0, -5.0))[2] == pytest.approx(25.0)
    assert enu_to_geodetic(0, 0, 2.0, EnuOrigin(10.0, 20.0))[2] == pytest.approx(-2.0)


def test_round_trip_and_ranges_match_enu_distances():
    rng = random.Random(4)
    for origin in (EnuOrigin(41.5, -70.7, 0.0), EnuOrigin(-60.0, 170.0, -3.0),
                   EnuOrigin(0.0, 179.99, 2.0), EnuOrigin(89.0, 0.0)):
        points = [(rng.uniform(-20e3, 20e3), rng.uniform(-20e3, 20e3), rng.uniform(-500, 0))
                  for _ in range(20)]
        geodetic = [enu_to_geodetic(*p, origin) for p in points]
        for point, position in zip(points, geodetic, strict=True):
            assert -180.0 <= position[1] < 180.0
            assert geodetic_to_enu(*position, origin) == pytest.approx(point, abs=1e-6)
        # the channel's range (haversine + depth) between two points equals their ENU distance
        pairs = list(zip(points, geodetic, strict=True))
        for (p, a), (q, b) in zip(pairs, pairs[1:], strict=False):
            horizontal = geodesy.horizontal_distance_m(a[0], a[1], b[0], b[1])
            slant = geodesy.slant_range_m(horizontal, a[2], b[2])
            assert slant == pytest.approx(math.dist(p, q), rel=1e-5)


def test_longitude_wraps_across_the_antimeridian():
    lat, lon, _ = enu_to_geodetic(10_000.0, 0.0, 0.0, EnuOrigin(0.0, 179.99))
    assert lat == pytest.approx(0.0, abs=1e-12)
    assert lon == pytest.approx(179.99 + 10_000.0 / ONE_DEGREE_M - 360.0)


@pytest.mark.parametrize("point", [(math.nan, 0, 0), (0, math.inf, 0), (0, 0, math.nan),
                                   (2e6, 0, 0)])
def test_bad_points_are_refused(point):
    with pytest.raises(ValueError):
        enu_to_geodetic(*point, EnuOrigin(41.5, -70.7))


@pytest.mark.parametrize("origin", [(90.0, 0.0, 0.0), (-90.0, 0.0, 0.0), (0.0, 181.0, 0.0),
                                    (math.nan, 0.0, 0.0), (0.0, 0.0, 20000.0)])
def test_bad_origins_are_refused(origin):
    with pytest.raises(ValueError):
        EnuOrigin(*origin)


def test_surface_clamp():
    assert geodesy.surface_clamped_depth(-0.4) == (0.0, True)
    assert geodesy.surface_clamped_depth(0.0) == (0.0, False)
    assert geodesy.surface_clamped_depth(12.5) == (12.5, False)
