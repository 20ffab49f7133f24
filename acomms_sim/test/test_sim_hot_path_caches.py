"""The per-reception hot path reuses what does not change (issue 30): the geodesic distance of
a pair of positions is computed once (one inverse serves the distance and the Doppler's
azimuth), and the cached value is the one the algorithm gives."""

from __future__ import annotations

from acomms_sim.physics import geodesy
from acomms_sim.physics.sound_speed import SoundSpeedProfile
from acomms_sim.physics.transmission_loss import Propagation, SpreadingModel


def test_distance_cache_returns_the_algorithms_float_and_computes_a_pair_once():
    a = (41.52, -70.67)
    b = geodesy.offset_position(*a, 500.0, 1500.0)
    exact = geodesy.WGS84.inv(a[1], a[0], b[1], b[0])[2]
    cache = geodesy._distance_azimuth
    cache.cache_clear()
    first = geodesy.horizontal_distance_m(*a, *b)
    again = geodesy.horizontal_distance_m(*a, *b)
    east, north, _ = geodesy.geodetic_to_enu(*b, 0.0, geodesy.EnuOrigin(*a))  # the Doppler's
    assert first == exact and again == exact
    assert (cache.cache_info().misses, cache.cache_info().hits) == (1, 2)
    assert abs(east - 1500.0) < 0.01 and abs(north - 500.0) < 0.01
    # the other direction is its own entry (the inverse need not be bit-symmetric)
    assert geodesy.horizontal_distance_m(*b, *a) == geodesy.WGS84.inv(b[1], b[0], a[1], a[0])[2]
    assert cache.cache_info().misses == 2


def test_path_between_still_vehicles_is_the_same_with_the_cache_warm_or_cold():
    propagation = Propagation(SpreadingModel(), SoundSpeedProfile.constant(1500.0))
    src = (41.52, -70.67, 20.0)
    rcv = (*geodesy.offset_position(41.52, -70.67, 900.0, -300.0), 35.0)
    geodesy._distance_azimuth.cache_clear()
    cold = propagation.path(src, rcv, 10000.0)
    warm = propagation.path(src, rcv, 10000.0)
    assert cold == warm
    assert geodesy._distance_azimuth.cache_info().hits >= 1
