"""Position topic messages -> (latitude, longitude, depth): acomms_sim.modem.location_topic,
plain pytest on message objects (no ROS graph)."""

import math

import pytest
from geometry_msgs.msg import PoseStamped
from nav_msgs.msg import Odometry
from sensor_msgs.msg import NavSatFix, NavSatStatus

from acomms_core.codecs.ros_types import resolve_message_class
from acomms_interfaces.msg import Location
from acomms_sim.modem.location_topic import (
    LOCATION_TOPIC_SPECS,
    LOCATION_TOPIC_TYPES,
    LocationReader,
    PositionRejected,
    check_location_topic,
    reader_from_values,
)
from acomms_sim.physics.geodesy import EnuOrigin, enu_to_geodetic

ORIGIN = EnuOrigin(41.5, -70.7, 0.0)
DEFAULTS = {spec.name: spec.default for spec in LOCATION_TOPIC_SPECS}


def odometry(x, y, z, frame="world", stamp_s=0.0):
    msg = Odometry()
    msg.header.frame_id = frame
    msg.header.stamp.sec = int(stamp_s)
    msg.header.stamp.nanosec = int(round((stamp_s % 1) * 1e9))
    msg.pose.pose.position.x, msg.pose.pose.position.y, msg.pose.pose.position.z = x, y, z
    return msg


def pose(x, y, z, frame="map"):
    msg = PoseStamped()
    msg.header.frame_id = frame
    msg.pose.position.x, msg.pose.position.y, msg.pose.position.z = x, y, z
    return msg


def test_every_type_names_an_importable_message():
    expected = {"odometry": Odometry, "pose_stamped": PoseStamped, "navsatfix": NavSatFix,
                "location": Location}
    assert {name: resolve_message_class(kind.ros_type)
            for name, kind in LOCATION_TOPIC_TYPES.items()} == expected


def test_odometry_and_pose_in_the_local_enu_frame():
    reader = LocationReader("odometry", ORIGIN)
    position = reader.read(odometry(300.0, -400.0, -25.0), 0.0)
    expected = enu_to_geodetic(300.0, -400.0, -25.0, ORIGIN)
    assert (position.latitude, position.longitude, position.depth_m) == pytest.approx(expected)
    assert position.depth_m == pytest.approx(25.0) and not position.above_surface
    deeper = LocationReader("pose_stamped", EnuOrigin(41.5, -70.7, -10.0))
    assert deeper.read(pose(0.0, 0.0, -5.0), 0.0).depth_m == pytest.approx(15.0)


def test_navsatfix_and_location_are_geodetic():
    fix = NavSatFix(latitude=41.6, longitude=-70.6, altitude=-12.0)
    position = LocationReader("navsatfix").read(fix, 0.0)
    assert (position.latitude, position.longitude, position.depth_m) == (41.6, -70.6, 12.0)
    no_altitude = NavSatFix(latitude=41.6, longitude=-70.6, altitude=math.nan)
    assert LocationReader("navsatfix").read(no_altitude, 0.0).depth_m == 0.0
    location = Location(latitude=41.6, longitude=-70.6, depth=30.0)
    assert LocationReader("location").read(location, 0.0).depth_m == pytest.approx(30.0)


def test_above_the_surface_is_clamped_and_flagged():
    position = LocationReader("odometry", ORIGIN).read(odometry(0.0, 0.0, 0.7), 0.0)
    assert position.depth_m == 0.0 and position.above_surface
    ship = LocationReader("navsatfix").read(NavSatFix(latitude=41.6, longitude=-70.6,
                                                      altitude=18.0), 0.0)
    assert ship.depth_m == 0.0 and ship.above_surface


@pytest.mark.parametrize("reader, msg, counter", [
    (LocationReader("odometry", ORIGIN), odometry(math.nan, 0.0, -5.0), "location_bad_message"),
    (LocationReader("odometry", ORIGIN), odometry(5e6, 0.0, -5.0), "location_bad_message"),
    (LocationReader("odometry", ORIGIN), odometry(0.0, 0.0, -20000.0), "location_bad_message"),
    (LocationReader("navsatfix"), NavSatFix(latitude=95.0, longitude=0.0),
     "location_bad_message"),
    (LocationReader("navsatfix"), NavSatFix(latitude=41.0, longitude=-70.0, status=NavSatStatus(
        status=NavSatStatus.STATUS_NO_FIX)), "location_bad_message"),
    (LocationReader("odometry", ORIGIN, frame_id="world"), odometry(0, 0, -5, frame="map"),
     "location_wrong_frame"),
    (LocationReader("odometry", ORIGIN, max_age_s=2.0), odometry(0, 0, -5, stamp_s=7.5),
     "location_stale"),
])
def test_bad_messages_name_their_counter(reader, msg, counter):
    with pytest.raises(PositionRejected) as refused:
        reader.read(msg, 10.0)
    assert refused.value.counter == counter and str(refused.value)


def test_fresh_and_unstamped_messages_pass_the_age_check():
    reader = LocationReader("odometry", ORIGIN, frame_id="world", max_age_s=2.0)
    assert reader.read(odometry(0, 0, -5, stamp_s=8.5), 10.0).depth_m == pytest.approx(5.0)
    assert reader.read(odometry(0, 0, -5, stamp_s=0.0), 10.0).depth_m == pytest.approx(5.0)


def test_validator_and_reader_from_parameter_values():
    assert check_location_topic(DEFAULTS) is None
    values = {**DEFAULTS, "location_topic_type": "odometry", "enu_origin_latitude": 41.5,
              "enu_origin_longitude": -70.7, "enu_origin_altitude_m": -2.0,
              "location_frame_id": "world", "location_max_age_s": 3.0}
    reader = reader_from_values(values)
    assert reader == LocationReader("odometry", EnuOrigin(41.5, -70.7, -2.0), "world", 3.0)
    assert "location_topic_type" in check_location_topic({**values,
                                                          "location_topic_type": "twist"})
    assert "modem_location_topic" in check_location_topic({**values,
                                                           "modem_location_topic": ""})
    assert "enu_origin" in check_location_topic({**values, "enu_origin_latitude": 90.0})
