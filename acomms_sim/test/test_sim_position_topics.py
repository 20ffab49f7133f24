"""modem_sim_node follows an external simulator's position topic (`location_source: topic`),
through the ROS interface on sim time: a helper node stands in for Gazebo / the WEC sim and
publishes Odometry, PoseStamped, NavSatFix and Location; packet delays are range / c for the
ranges the published positions give."""

import math

import pytest
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from geometry_msgs.msg import PoseStamped
from nav_msgs.msg import Odometry
from rclpy.parameter import Parameter
from sensor_msgs.msg import NavSatFix
from test_sim_modem_node import ORIGIN, SimWorld, fdp_packet

from acomms_core.ros.testing import RosHarness
from acomms_interfaces.msg import Location
from acomms_sim.nodes.sim_node_support import seconds_to_time_msg, stamp_seconds
from acomms_sim.physics.geodesy import EnuOrigin, enu_to_geodetic

SPEED_M_S = 1500.0
FRAME = {"enu_origin_latitude": ORIGIN[0], "enu_origin_longitude": ORIGIN[1],
         "enu_origin_altitude_m": 0.0}


@pytest.fixture
def world():
    with RosHarness() as ros:
        yield SimWorld(ros)


def topic_modem(world, name, src, topic, kind, **params):
    return world.add_modem(name, src, 0.0, location_source="topic", modem_location_topic=topic,
                           location_topic_type=kind, **FRAME, **params)


def odometry(x, y, z, frame="world", stamp_s=0.0):
    msg = Odometry()
    msg.header.frame_id = frame
    msg.header.stamp = seconds_to_time_msg(stamp_s)
    msg.pose.pose.position.x, msg.pose.pose.position.y, msg.pose.pose.position.z = x, y, z
    return msg


def pose(x, y, z):
    msg = PoseStamped()
    msg.header.frame_id = "world"
    msg.pose.position.x, msg.pose.position.y, msg.pose.position.z = x, y, z
    return msg


def publish(world, publisher, msg, done, timeout=5.0):
    """Publish (again) until `done()`: the subscriber may still be matching."""
    assert world.ros.spin_until(lambda: publisher.get_subscription_count() > 0, timeout=timeout)
    for _ in range(int(timeout / 0.05)):
        publisher.publish(msg)
        if world.ros.spin_until(done, timeout=0.05):
            return
    raise AssertionError(f"{type(msg).__name__} never taken")


def delay_s(world, sender, receiver, dest):
    count = len(world.rx[receiver])
    assert world.queue(sender, fdp_packet(dest=dest)).success
    assert world.advance_until(lambda: len(world.rx[receiver]) > count, until=world.now + 15.0)
    return stamp_seconds(world.rx[receiver][-1].cst.toa) - stamp_seconds(
        world.tx[sender][-1].xst.time)


def test_packet_delays_follow_published_odometry_and_pose(world):
    simulator = world.ros.helper  # the external simulator
    odom_pub = simulator.create_publisher(Odometry, "/gazebo/a/odom", 10)
    pose_pub = simulator.create_publisher(PoseStamped, "/b/pose", 10)
    a = topic_modem(world, "a", 1, "/gazebo/a/odom", "odometry")
    b = topic_modem(world, "b", 2, "pose", "pose_stamped")  # relative: /b/pose
    assert a.position is None and b.position is None  # unknown until the first message
    world.set_time(10.0)
    assert not world.queue("a", fdp_packet()).success  # no position: refused, counted
    assert a.counters["tx_refused_no_position"] == 1

    publish(world, odom_pub, odometry(0.0, 0.0, -20.0), lambda: a.position is not None)
    publish(world, pose_pub, pose(1200.0, 900.0, -50.0), lambda: b.position is not None)
    assert b.position == pytest.approx(enu_to_geodetic(1200.0, 900.0, -50.0, EnuOrigin(*ORIGIN)))
    first = math.dist((0, 0, -20), (1200, 900, -50))
    assert delay_s(world, "a", "b", 2) == pytest.approx(first / SPEED_M_S, abs=1e-4)

    moved = enu_to_geodetic(-3000.0, 0.0, -20.0, EnuOrigin(*ORIGIN))
    publish(world, pose_pub, pose(-3000.0, 0.0, -20.0),
            lambda: b.position == pytest.approx(moved))
    assert delay_s(world, "b", "a", 1) == pytest.approx(3000.0 / SPEED_M_S, abs=1e-4)
    assert a.counters["location_messages"] >= 1 and b.counters["location_messages"] >= 2


def test_navsatfix_and_location_topics(world):
    simulator = world.ros.helper
    fix_pub = simulator.create_publisher(NavSatFix, "/c/fix", 10)
    location_pub = simulator.create_publisher(Location, "/d/location", 10)
    c = topic_modem(world, "c", 3, "fix", "navsatfix")
    d = world.add_modem("d", 4, 0.0, location_source="topic")  # ros_acomms defaults: location
    world.set_time(5.0)
    lat, lon, _ = enu_to_geodetic(0.0, 750.0, 0.0, EnuOrigin(*ORIGIN))
    publish(world, fix_pub, NavSatFix(latitude=lat, longitude=lon, altitude=-20.0),
            lambda: c.position is not None)
    publish(world, location_pub, Location(latitude=ORIGIN[0], longitude=ORIGIN[1], depth=20.0),
            lambda: d.position is not None)
    assert c.position[2] == pytest.approx(20.0)
    assert delay_s(world, "d", "c", 3) == pytest.approx(0.5, abs=1e-4)


def test_bad_position_messages_are_counted_and_reported(world):
    diagnostics = []
    world.ros.helper.create_subscription(DiagnosticArray, "/diagnostics", diagnostics.append, 50)
    odom_pub = world.ros.helper.create_publisher(Odometry, "/e/odom", 10)
    e = topic_modem(world, "e", 5, "odom", "odometry", location_frame_id="world",
                    location_max_age_s=2.0, diagnostics_period_s=0.5)
    world.set_time(10.0)
    world.advance_until(lambda: False, until=11.0, step=0.25)

    def e_status():
        statuses = [s for array in diagnostics for s in array.status if "/e/" in s.name]
        return statuses[-1] if statuses else None

    assert e_status().level == DiagnosticStatus.WARN and "position unknown" in e_status().message
    bad = [(odometry(math.nan, 0.0, -5.0), "location_bad_message"),
           (odometry(0.0, 0.0, -5.0, frame="map"), "location_wrong_frame"),
           (odometry(0.0, 0.0, -5.0, stamp_s=7.0), "location_stale"),
           (odometry(0.0, 0.0, -30000.0), "location_bad_message")]
    for msg, counter in bad:
        before = e.counters[counter]
        publish(world, odom_pub, msg, lambda c=counter, n=before: e.counters[c] > n)
    assert e.position is None and e.counters["location_messages"] == 0
    publish(world, odom_pub, odometry(0.0, 0.0, 0.5, stamp_s=10.5),  # above the surface
            lambda: e.position is not None)
    assert e.position[2] == 0.0 and e.counters["location_above_surface"] == 1
    world.advance_until(lambda: False, until=12.0, step=0.25)
    assert e_status().level == DiagnosticStatus.OK
    world.advance_until(lambda: False, until=15.0, step=0.5)  # no news for > 2 s
    assert e_status().level == DiagnosticStatus.WARN and "not updated" in e_status().message
    assert "location_wrong_frame" in {kv.key for kv in e_status().values}


def test_location_parameters_refused_with_reasons(world):
    e = topic_modem(world, "e", 5, "odom", "odometry")
    for name, value, words in (("location_topic_type", "twist", "location_topic_type"),
                               ("enu_origin_latitude", 90.0, "latitude"),
                               ("location_source", "gps", "location_source"),
                               ("modem_location_topic", "", "modem_location_topic")):
        result = e.set_parameters([Parameter(name, value=value)])[0]
        assert not result.successful and words in result.reason, (name, result.reason)
    # the frame rules apply at once (the topic and its type at the next configure)
    assert e.set_parameters([Parameter("location_frame_id", value="world")])[0].successful
    assert e.location.reader.frame_id == "world"
