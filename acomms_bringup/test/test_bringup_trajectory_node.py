"""trajectory_node through ROS: sim-time driven positions on `location`, bad waypoints refused."""

import pytest
from builtin_interfaces.msg import Time
from rclpy.lifecycle import TransitionCallbackReturn
from rclpy.parameter import Parameter
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import NavSatFix
from std_msgs.msg import Float64

from acomms_bringup.nodes.trajectory_node import TrajectoryNode, check_waypoints
from acomms_core.ros.testing import RosHarness


def waypoint_parameters(times, latitudes, longitudes, depths):
    return [Parameter("waypoint_times_seconds", value=times),
            Parameter("waypoint_latitudes", value=latitudes),
            Parameter("waypoint_longitudes", value=longitudes),
            Parameter("waypoint_depths", value=depths)]


@pytest.fixture
def ros():
    with RosHarness() as harness:
        yield harness


def test_positions_follow_sim_time_with_linear_interpolation(ros):
    node = ros.add(TrajectoryNode(namespace="/traj_test", context=ros.context, parameter_overrides=[
        *waypoint_parameters([0.0, 100.0], [41.0, 42.0], [-70.0, -70.0], [10.0, 30.0]),
        Parameter("publish_rate_hz", value=1.0),
        Parameter("start_time_seconds", value=1000.0),
        Parameter("use_sim_time", value=True)]))
    clock = ros.helper.create_publisher(Clock, "/clock", 10)
    received = []
    ros.helper.create_subscription(NavSatFix, "/traj_test/fix", received.append, 10)

    def set_time(seconds):
        clock.publish(Clock(clock=Time(sec=int(seconds), nanosec=0)))
        assert ros.spin_until(lambda: node.get_clock().now().nanoseconds == int(seconds * 1e9),
                              timeout=5.0)

    set_time(1000.0)
    assert node.trigger_configure() == TransitionCallbackReturn.SUCCESS
    assert ros.spin_until(lambda: node._publisher.get_subscription_count() > 0, timeout=5.0)
    assert node.trigger_activate() == TransitionCallbackReturn.SUCCESS
    assert ros.spin_until(lambda: received, timeout=5.0)
    assert received[-1].latitude == pytest.approx(41.0)
    for seconds in (1025.0, 1050.0, 1075.0):
        set_time(seconds)
    assert ros.spin_until(lambda: received[-1].header.stamp.sec == 1075, timeout=5.0)
    last = received[-1]
    assert last.latitude == pytest.approx(41.75)
    assert last.altitude == pytest.approx(-25.0)  # altitude = -depth
    set_time(1500.0)  # past the last waypoint: stays there
    assert ros.spin_until(lambda: received[-1].header.stamp.sec == 1500, timeout=5.0)
    assert received[-1].latitude == pytest.approx(42.0)

    # Deactivated: no more messages.
    node.trigger_deactivate()
    count = len(received)
    set_time(1600.0)
    ros.spin_for(0.3)
    assert len(received) == count


def test_inconsistent_waypoints_refused(ros):
    with pytest.raises(ValueError, match="same length"):
        TrajectoryNode(context=ros.context, parameter_overrides=waypoint_parameters(
            [0.0, 10.0], [41.0], [-70.0, -70.0], [1.0, 1.0]))
    node = ros.add(TrajectoryNode(node_name="traj_ok", context=ros.context,
                                  parameter_overrides=waypoint_parameters(
                                      [0.0, 10.0], [41.0, 41.1], [-70.0, -70.0], [1.0, 1.0])))
    # A runtime change that breaks the trajectory is refused with a reason.
    result = node.set_parameters([Parameter("waypoint_times_seconds", value=[5.0, 1.0])])[0]
    assert not result.successful and "increase strictly" in result.reason
    assert node.get_parameter("waypoint_times_seconds").value == [0.0, 10.0]


def test_configure_without_waypoints_fails_with_reason(ros):
    node = ros.add(TrajectoryNode(node_name="traj_empty", context=ros.context))
    assert node.trigger_configure() == TransitionCallbackReturn.FAILURE


def test_waypoint_validator_is_pure_and_sees_merged_values():
    good = {"waypoint_times_seconds": [0.0, 10.0], "waypoint_latitudes": [41.0, 41.1],
            "waypoint_longitudes": [-70.0, -70.0], "waypoint_depths": [1.0, 1.0],
            "publish_rate_hz": 2.0}
    assert check_waypoints(good) is None
    assert check_waypoints({name: None for name in good}) is None  # nothing set yet
    assert "same length" in check_waypoints({**good, "waypoint_depths": [1.0]})
    assert "out of range" in check_waypoints({**good, "waypoint_latitudes": [41.0, 95.0]})
    assert good["waypoint_depths"] == [1.0, 1.0]


def test_waypoints_set_at_runtime_on_an_empty_node(ros):
    node = ros.add(TrajectoryNode(node_name="traj_late", context=ros.context))
    # One array alone cannot make a trajectory; all four together (atomically) can.
    result = node.set_parameters([Parameter("waypoint_times_seconds", value=[0.0])])[0]
    assert not result.successful and "same length" in result.reason
    result = node.set_parameters_atomically(waypoint_parameters([0.0], [41.0], [-70.0], [3.0]))
    assert result.successful, result.reason
    assert node.trigger_configure() == TransitionCallbackReturn.SUCCESS
    assert node.trigger_activate() == TransitionCallbackReturn.SUCCESS
    assert node.published_count == 1
    assert node.trigger_deactivate() == TransitionCallbackReturn.SUCCESS
    assert node.trigger_cleanup() == TransitionCallbackReturn.SUCCESS
    assert len(node._configured) == 0 and len(node._activated) == 0


def test_course_over_ground_follows_the_leg_under_way():
    from acomms_bringup.description.scenario_types import Position, Trajectory, Waypoint
    north_then_east_then_hold = Trajectory((
        Waypoint(0, Position(41.0, -70.0, 0)), Waypoint(100, Position(41.01, -70.0, 0)),
        Waypoint(200, Position(41.01, -69.99, 0)), Waypoint(300, Position(41.01, -69.99, 5))))
    assert north_then_east_then_hold.course_deg_at(-10) == pytest.approx(0.0)
    assert north_then_east_then_hold.course_deg_at(50) == pytest.approx(0.0)
    assert north_then_east_then_hold.course_deg_at(150) == pytest.approx(90.0, abs=0.01)
    # Diving in place keeps the last course; so does the time after the last waypoint.
    assert north_then_east_then_hold.course_deg_at(250) == pytest.approx(90.0, abs=0.01)
    assert north_then_east_then_hold.course_deg_at(1e6) == pytest.approx(90.0, abs=0.01)
    south_west = Trajectory((Waypoint(0, Position(41.0, -70.0, 0)),
                             Waypoint(10, Position(41.0, -70.0, 0)),
                             Waypoint(20, Position(40.99, -70.0132, 0))))
    assert 180.0 < south_west.course_deg_at(5) < 270.0  # a hold first: the next leg's course
    held = Trajectory((Waypoint(0, Position(41.0, -70.0, 0)), Waypoint(9, Position(41.0, -70, 3))))
    assert held.course_deg_at(5) == 0.0


def test_heading_topic_publishes_the_course_with_each_fix(ros):
    node = ros.add(TrajectoryNode(namespace="/traj_heading", context=ros.context,
                                  parameter_overrides=[
        *waypoint_parameters([0.0, 100.0], [41.0, 41.0], [-70.0, -69.99], [2.0, 2.0]),
        Parameter("heading_topic", value="heading")]))
    headings = []
    ros.helper.create_subscription(Float64, "/traj_heading/heading", headings.append, 10)
    assert node.trigger_configure() == TransitionCallbackReturn.SUCCESS
    assert ros.spin_until(lambda: node._heading_publisher.get_subscription_count() > 0,
                          timeout=5.0)
    assert node.trigger_activate() == TransitionCallbackReturn.SUCCESS
    assert ros.spin_until(lambda: headings, timeout=5.0)
    assert headings[-1].data == pytest.approx(90.0, abs=0.01)  # due east
    node.trigger_deactivate()
    node.trigger_cleanup()
    assert node._heading_publisher is None


def test_no_heading_topic_no_heading_publisher(ros):
    node = ros.add(TrajectoryNode(namespace="/traj_plain", context=ros.context,
                                  parameter_overrides=waypoint_parameters(
                                      [0.0, 1.0], [41.0, 41.0], [-70.0, -70.0], [1.0, 1.0])))
    assert node.trigger_configure() == TransitionCallbackReturn.SUCCESS
    assert node._heading_publisher is None
    assert not [t for t, _ in node.get_publisher_names_and_types_by_node(
        "trajectory_node", "/traj_plain") if t.endswith("heading")]
