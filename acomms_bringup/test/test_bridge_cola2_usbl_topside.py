"""cola2 topside bridge: a USBL fix of the AUV + ship GPS + heading -> the next 'U' position;
the vehicle bridge hands the received 'U' position to the navigator on usbl_fix_position."""

import math

import pytest
from rclpy.parameter import Parameter
from sensor_msgs.msg import Imu, NavSatFix
from std_msgs.msg import Float64

from acomms_bringup.bridges.cola2_topside_bridge import Cola2TopsideBridge
from acomms_bringup.bridges.cola2_vehicle_bridge import Cola2VehicleBridge
from acomms_core.ros.testing import RosHarness
from acomms_interfaces.msg import Cola2UsblFix, UsblFix
from acomms_sim.physics.geodesy import EnuOrigin, enu_to_geodetic

SHIP = (41.9857, 3.0291)
AUV_ADDRESS = 3


class Topside:
    def __init__(self, ros, namespace, extra=()):
        self.ros, h, self.ns = ros, ros.helper, namespace
        self.node = ros.add(Cola2TopsideBridge(
            context=ros.context, namespace=namespace, parameter_overrides=[
                Parameter("wire_mode", value="compact"), Parameter("period_s", value=0.1),
                Parameter("remote_address", value=AUV_ADDRESS), *extra]))
        self.got = []
        self.measurements = 0
        h.create_subscription(Cola2UsblFix, f"{namespace}/to_acomms/cola2_usbl",
                              self.got.append, 10)
        self.pub = {name: h.create_publisher(cls, f"{namespace}/{name}", 10) for name, cls in (
            ("usbl_fix", UsblFix), ("ship/fix", NavSatFix), ("ship/heading", Float64),
            ("ship/imu", Imu))}
        ros.configure_and_activate(self.node)

    def ship_inputs(self, heading=None, imu_yaw_deg=None):
        fix = NavSatFix(latitude=SHIP[0], longitude=SHIP[1])
        fix.position_covariance = [2.25, 0, 0, 0, 2.25, 0, 0, 0, 4.0]
        fix.position_covariance_type = NavSatFix.COVARIANCE_TYPE_DIAGONAL_KNOWN
        self.pub["ship/fix"].publish(fix)
        if heading is not None:
            self.pub["ship/heading"].publish(Float64(data=heading))
        if imu_yaw_deg is not None:
            half = math.radians(imu_yaw_deg) / 2.0
            imu = Imu()
            imu.orientation.z, imu.orientation.w = math.sin(half), math.cos(half)
            self.pub["ship/imu"].publish(imu)
        assert self.ros.spin_until(lambda: self.node.ship_fix is not None and (
            heading is None and imu_yaw_deg is None or self.node.heading is not None), 10.0)

    def usbl_fix(self, enu=(math.nan,) * 3, xyz=(math.nan,) * 3, address=AUV_ADDRESS,
                 age_s=0.0, source=UsblFix.SOURCE_USBLLONG, measured_s=None):
        """A fix as the driver publishes it; measured_s: the modem's measurement time (default:
        a new measurement each call)."""
        self.measurements += 1
        msg = UsblFix(remote_address=address, accuracy_m=2.0, source=source,
                      measurement_time_s=float(self.measurements if measured_s is None
                                               else measured_s))
        msg.east_m, msg.north_m, msg.up_m = enu
        msg.x_m, msg.y_m, msg.z_m = xyz
        stamp = self.node.get_clock().now().nanoseconds * 1e-9 - age_s
        msg.header.stamp.sec, msg.header.stamp.nanosec = int(stamp), int(stamp % 1 * 1e9)
        self.pub["usbl_fix"].publish(msg)
        return stamp

    def wait_counts(self, **expected):
        counts = self.node.counts
        assert self.ros.spin_until(lambda: all(counts.get(f"usbl_{k}") == v for k, v in
                                               expected.items()), 10.0), counts

    def wait_position(self, predicate):
        assert self.ros.spin_until(lambda: self.got and predicate(self.got[-1]), 10.0)
        return self.got[-1]


def test_usbl_fix_with_gps_heading_and_lever_arm_becomes_the_next_u():
    with RosHarness() as ros:
        top = Topside(ros, "/ship", [Parameter("usbl_forward_m", value=10.0),
                                     Parameter("usbl_down_m", value=2.0)])
        top.usbl_fix(enu=(300.0, 400.0, -50.0))       # before any GPS / heading
        top.wait_counts(refused_stale=1, fixes_used=0)
        top.ship_inputs(heading=90.0)
        top.usbl_fix(enu=(300.0, 400.0, -50.0), address=AUV_ADDRESS + 1)
        top.wait_counts(refused_address=1, fixes_used=0)
        top.usbl_fix(enu=(300.0, 400.0, -50.0), age_s=60.0)
        top.wait_counts(refused_stale=2, fixes_used=0)
        top.usbl_fix(source=UsblFix.SOURCE_USBLANGLES)   # angles alone: no position
        top.wait_counts(refused_no_position=1, fixes_used=0)
        assert top.got == []                           # no fix, no command: nothing sent
        stamp = top.usbl_fix(enu=(300.0, 400.0, -50.0))
        top.wait_counts(fixes_used=1)
        u = top.wait_position(lambda m: math.isfinite(m.latitude_deg))
        # heading east: the 10 m lever arm forward is east of the antenna
        lat, lon, _ = enu_to_geodetic(310.0, 400.0, 0.0, EnuOrigin(*SHIP))
        assert (u.latitude_deg, u.longitude_deg) == pytest.approx((lat, lon), abs=1e-9)
        assert u.depth_m == pytest.approx(52.0)
        assert u.accuracy_m == pytest.approx(2.5)      # hypot(USBL 2 m, GPS 1.5 m)
        assert u.time_s == pytest.approx(stamp, abs=1e-6)


def test_the_angles_of_a_measurement_with_a_position_are_not_refused():
    """The modem reports a measurement as USBLLONG then USBLANGLES (same remote, same
    measurement time): one fix used, nothing refused; a USBLANGLES alone is refused."""
    angles = UsblFix.SOURCE_USBLANGLES
    with RosHarness() as ros:
        top = Topside(ros, "/ship3")
        top.ship_inputs(heading=0.0)
        top.usbl_fix(enu=(300.0, 400.0, -50.0), measured_s=10.0)
        top.usbl_fix(source=angles, measured_s=10.0)
        top.usbl_fix(enu=(310.0, 400.0, -50.0), measured_s=12.0)
        top.usbl_fix(source=angles, measured_s=12.0)
        top.wait_counts(fixes_used=2, angles_with_position=2, refused_no_position=0)
        top.usbl_fix(source=angles, measured_s=13.0)      # no USBLLONG for it
        top.usbl_fix(source=angles, measured_s=12.0, address=AUV_ADDRESS + 1)  # another modem
        top.wait_counts(fixes_used=2, angles_with_position=2, refused_no_position=1,
                        refused_address=1)


def test_head_frame_with_imu_heading_and_yaw_offset():
    with RosHarness() as ros:
        top = Topside(ros, "/ship2", [Parameter("usbl_frame", value="head"),
                                      Parameter("heading_type", value="imu"),
                                      Parameter("heading_topic", value="ship/imu"),
                                      Parameter("usbl_yaw_offset_deg", value=90.0)])
        top.ship_inputs(imu_yaw_deg=90.0)   # ENU yaw 90 deg: bow north, heading 0
        top.usbl_fix(xyz=(200.0, 0.0, 30.0))   # head x looks to starboard: east
        top.wait_counts(fixes_used=1)
        u = top.wait_position(lambda m: math.isfinite(m.latitude_deg))
        lat, lon, _ = enu_to_geodetic(200.0, 0.0, 0.0, EnuOrigin(*SHIP))
        assert (u.latitude_deg, u.longitude_deg) == pytest.approx((lat, lon), abs=1e-9)
        assert u.depth_m == pytest.approx(30.0)


def test_bad_frame_parameter_is_refused():
    with RosHarness() as ros:
        with pytest.raises(ValueError, match="usbl_frame"):
            Cola2TopsideBridge(context=ros.context, parameter_overrides=[
                Parameter("usbl_frame", value="ned")])


def test_vehicle_publishes_the_u_position_for_the_navigator():
    with RosHarness() as ros:
        h = ros.helper
        vehicle = ros.add(Cola2VehicleBridge(context=ros.context, namespace="/auv",
                                             parameter_overrides=[
                                                 Parameter("wire_mode", value="compact")]))
        fixes, positions = [], []
        h.create_subscription(NavSatFix, "/auv/usbl_update", fixes.append, 10)
        h.create_subscription(NavSatFix, "/auv/usbl_fix_position", positions.append, 10)
        pub = h.create_publisher(Cola2UsblFix, "/auv/from_acomms/cola2_usbl", 10)
        ros.configure_and_activate(vehicle)
        nan = math.nan
        pub.publish(Cola2UsblFix(time_s=nan, latitude_deg=nan, longitude_deg=nan, depth_m=nan,
                                 accuracy_m=nan, command=4))   # a command before any fix
        assert ros.spin_until(lambda: len(fixes) == 1, 10.0)
        pub.publish(Cola2UsblFix(time_s=1.0, latitude_deg=41.99, longitude_deg=3.03,
                                 depth_m=20.0, accuracy_m=3.0))
        assert ros.spin_until(lambda: len(fixes) == 2 and positions, 10.0)
        assert len(positions) == 1
        got = positions[0]
        assert (got.latitude, got.longitude, got.altitude) == (41.99, 3.03, -20.0)
        assert got.position_covariance[0] == pytest.approx(9.0)
