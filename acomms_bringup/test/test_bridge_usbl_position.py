"""usbl_position: USBL fix + ship GPS + heading + mounting -> the AUV's geodetic position."""

import math

import pytest

from acomms_bringup.bridges.usbl_position import (
    UsblMounting,
    UsblRefused,
    auv_position,
    body_to_enu,
    heading_from_quaternion,
    stale_reason,
)
from acomms_sim.physics.geodesy import EnuOrigin, geodetic_to_enu, horizontal_distance_m

SHIP = (41.9857, 3.0291)
ORIGIN = EnuOrigin(*SHIP)


def enu_of(position):
    east, north, _ = geodetic_to_enu(position.latitude, position.longitude, 0.0, ORIGIN)
    return east, north


@pytest.mark.parametrize("heading, expected", [
    (0.0, (0.0, 100.0)), (90.0, (100.0, 0.0)), (180.0, (0.0, -100.0)), (270.0, (-100.0, 0.0))])
def test_head_frame_forward_follows_heading(heading, expected):
    pos = auv_position((100.0, 0.0, 30.0), "head", *SHIP, heading, UsblMounting(), 1.0)
    assert enu_of(pos) == pytest.approx(expected, abs=1e-6)
    assert pos.depth_m == pytest.approx(30.0)


def test_head_frame_starboard_and_yaw_offset():
    # starboard at heading 0 is east; a head turned 90 deg to starboard sees the bow on -y
    pos = auv_position((0.0, 50.0, 0.0), "head", *SHIP, 0.0, UsblMounting(), 1.0)
    assert enu_of(pos) == pytest.approx((50.0, 0.0), abs=1e-6)
    turned = UsblMounting(yaw_offset_deg=90.0)
    pos = auv_position((0.0, -50.0, 0.0), "head", *SHIP, 0.0, turned, 1.0)
    assert enu_of(pos) == pytest.approx((0.0, 50.0), abs=1e-6)


def test_enu_frame_ignores_heading_for_the_measurement():
    for heading in (0.0, 45.0, 200.0):
        pos = auv_position((300.0, -400.0, -20.0), "enu", *SHIP, heading, UsblMounting(), 2.0)
        assert enu_of(pos) == pytest.approx((300.0, -400.0), abs=1e-6)
        assert horizontal_distance_m(*SHIP, pos.latitude, pos.longitude) == pytest.approx(500.0)
        assert pos.depth_m == pytest.approx(20.0)


def test_lever_arm_rotates_with_heading_and_down_adds_depth():
    mounting = UsblMounting(forward_m=10.0, starboard_m=2.0, down_m=3.0)
    pos = auv_position((0.0, 0.0, -40.0), "enu", *SHIP, 90.0, mounting, 1.0)
    # heading east: forward 10 m is east, starboard 2 m is south
    assert enu_of(pos) == pytest.approx((10.0, -2.0), abs=1e-6)
    assert pos.depth_m == pytest.approx(43.0)


def test_accuracy_combines_usbl_and_gps():
    pos = auv_position((1.0, 1.0, -1.0), "enu", *SHIP, 0.0, UsblMounting(), 3.0, 4.0)
    assert pos.accuracy_m == pytest.approx(5.0)


def test_fix_without_position_is_refused():
    with pytest.raises(UsblRefused) as info:
        auv_position((math.nan, math.nan, math.nan), "enu", *SHIP, 0.0, UsblMounting(), 1.0)
    assert info.value.kind == "no_position"
    with pytest.raises(UsblRefused) as info:
        auv_position((1.0, 1.0, 1.0), "head", *SHIP, math.nan, UsblMounting(), 1.0)
    assert info.value.kind == "no_heading"


def test_stale_inputs_are_refused_with_a_reason():
    stamps = {"usbl fix": 100.0, "ship fix": 99.0, "heading": 98.0}
    assert stale_reason(100.5, stamps, 2.5) is None
    assert stale_reason(100.5, stamps, 2.0) == "heading is 2.5 s old (max 2 s)"
    assert stale_reason(100.5, stamps, 1.4) == "ship fix is 1.5 s old (max 1.4 s)"
    assert stale_reason(100.0, {**stamps, "ship fix": None}, 5.0) == "no ship fix yet"


def test_body_to_enu_and_quaternion_heading():
    assert body_to_enu(1.0, 0.0, 2.0, 45.0) == pytest.approx(
        (math.sqrt(0.5), math.sqrt(0.5), -2.0))
    half = math.radians(30.0) / 2.0   # ENU yaw 30 deg (counter-clockwise from east)
    assert heading_from_quaternion(0.0, 0.0, math.sin(half), math.cos(half)) == \
        pytest.approx(60.0)
