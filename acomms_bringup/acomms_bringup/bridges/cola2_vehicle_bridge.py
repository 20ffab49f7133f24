"""cola2_vehicle_bridge: the AUV end of the cola2 bridge (see `cola2_bridge`).

A received 'U' is published on `usbl_update` (NavSatFix, stamped with the fix's time), not on
`usbl_fix`: that name is the USBL modem driver's (evologics_driver_node, acomms_interfaces/UsblFix,
which cola2_topside_bridge reads by default), and a driver and this bridge share the AUV's
namespace. cola2_comms itself publishes the update on navigator/usbl, so no cola2 name is lost."""

from __future__ import annotations

import math
import sys

from nav_msgs.msg import Odometry
from sensor_msgs.msg import NavSatFix
from std_msgs.msg import Float64, Int32
from std_srvs.srv import Trigger

from acomms_bringup.bridges.cola2_bridge import Cola2Bridge, fix_message
from acomms_bringup.bridges.cola2_struct import SENDER_USBL, SENDER_VEHICLE, Cola2Struct
from acomms_core.ros.ros_support import (
    ParameterSpec,
    run_node,
    seconds_to_time_msg,
    stamp_seconds,
)
from acomms_sim.physics.geodesy import EnuOrigin, enu_to_geodetic

NAVIGATION_TYPES = ("navsatfix", "odometry")
USBL_UPDATE_TOPIC = "usbl_update"  # every received 'U' (NavSatFix); see the module docstring
VEHICLE_PARAMETERS = (
    ParameterSpec("navigation_type", "navsatfix", "navsatfix (NavSatFix, depth = -altitude, "
                  "heading from heading_topic) | odometry (local ENU about the origin, heading "
                  "from the orientation).", read_only=True),
    ParameterSpec("navigation_topic", "navigation/fix", "The navigator's position topic.",
                  read_only=True),
    ParameterSpec("heading_topic", "navigation/heading", "std_msgs/Float64 heading, degrees "
                  "clockwise from north (navsatfix only).", read_only=True),
    ParameterSpec("enu_origin_latitude", 0.0, "Latitude of the odometry frame's origin.",
                  minimum=-89.999, maximum=89.999, read_only=True),
    ParameterSpec("enu_origin_longitude", 0.0, "Longitude of the odometry frame's origin.",
                  minimum=-180.0, maximum=180.0, read_only=True),
    ParameterSpec("safety_status_topic", "safety_status", "std_msgs/Int32 status code of the "
                  "safety supervisor.", read_only=True),
    ParameterSpec("command_services", [""], "'code:service' entries: call this std_srvs/"
                  "Trigger service when a 'U' struct carries that command code.",
                  parameter_type="string_array", read_only=True),
)


def parse_command_services(entries) -> dict[int, str]:
    """{code: service name}; ValueError naming the bad entry."""
    services = {}
    for entry in entries or ():
        if not entry:
            continue
        code, sep, name = entry.partition(":")
        try:
            services[int(code)] = name.strip()
        except ValueError:
            raise ValueError(f"command_services: {entry!r} is not 'code:service'") from None
        if not sep or not name.strip():
            raise ValueError(f"command_services: {entry!r} names no service")
    return services


def odometry_navigation(pose, origin: EnuOrigin) -> tuple[float, float, float, float]:
    """(latitude, longitude, depth_m, heading_deg) of a local ENU pose (x east, y north, z up;
    yaw counter-clockwise from east) about origin; ValueError for a point that is no position."""
    p, q = pose.position, pose.orientation
    latitude, longitude, depth = enu_to_geodetic(p.x, p.y, p.z, origin)
    yaw = math.atan2(2.0 * (q.w * q.z + q.x * q.y), 1.0 - 2.0 * (q.y * q.y + q.z * q.z))
    return latitude, longitude, depth, (90.0 - math.degrees(yaw)) % 360.0


class Cola2VehicleBridge(Cola2Bridge):
    OUTGOING = SENDER_VEHICLE
    INCOMING = SENDER_USBL
    SIDE_PARAMETERS = VEHICLE_PARAMETERS

    def __init__(self, node_name: str = "cola2_vehicle_bridge", **kwargs):
        self.navigation = None      # (time_s, latitude, longitude, depth_m, heading_deg | None)
        self.heading_deg = None
        self.status_code = 0
        self.command_clients = {}
        super().__init__(node_name, **kwargs)

    def check_parameters(self, values: dict) -> str | None:
        if values.get("navigation_type") not in NAVIGATION_TYPES:
            return f"navigation_type: must be one of {', '.join(NAVIGATION_TYPES)}"
        try:
            parse_command_services(values.get("command_services"))
        except ValueError as exc:
            return str(exc)
        return super().check_parameters(values)

    def configure_side(self, values: dict) -> None:
        self.origin = EnuOrigin(values["enu_origin_latitude"], values["enu_origin_longitude"])
        self._fix_pub = self.configured.publisher(NavSatFix, USBL_UPDATE_TOPIC)
        self._position_pub = self.configured.publisher(NavSatFix, "usbl_fix_position")
        self._command_pub = self.configured.publisher(Int32, "usbl_command")
        self.command_clients = {code: self.configured.client(Trigger, name) for code, name in
                         parse_command_services(values["command_services"]).items()}

    def activate_side(self) -> None:
        values = self.values
        if values["navigation_type"] == "navsatfix":
            self.activated.subscription(NavSatFix, values["navigation_topic"], self.on_fix)
            self.activated.subscription(Float64, values["heading_topic"], self.on_heading)
        else:
            self.activated.subscription(Odometry, values["navigation_topic"], self.on_odometry)
        self.activated.subscription(Int32, values["safety_status_topic"], self.on_status)

    def on_fix(self, msg: NavSatFix) -> None:
        self.navigation = (stamp_seconds(msg.header.stamp), msg.latitude, msg.longitude,
                           -msg.altitude, None)

    def on_heading(self, msg: Float64) -> None:
        self.heading_deg = float(msg.data) % 360.0

    def on_odometry(self, msg: Odometry) -> None:
        try:
            self.navigation = (stamp_seconds(msg.header.stamp),
                               *odometry_navigation(msg.pose.pose, self.origin))
        except ValueError as exc:
            self.get_logger().warning(f"odometry ignored: {exc}")

    def on_status(self, msg: Int32) -> None:
        self.status_code = int(msg.data)

    def build_outgoing(self) -> Cola2Struct | None:
        if self.navigation is None:
            return None
        time_s, latitude, longitude, depth, heading = self.navigation
        heading = heading if heading is not None else (self.heading_deg or 0.0)
        return Cola2Struct(SENDER_VEHICLE, time_s, latitude, longitude, depth, heading,
                           self.status_code)

    def handle_incoming(self, item: Cola2Struct) -> None:
        # stamped with the fix's time, as cola2_comms stamps its navigator's USBL update
        stamp = (seconds_to_time_msg(item.time_s) if math.isfinite(item.time_s) and item.time_s > 0
                 else self.get_clock().now().to_msg())
        fix = fix_message(item, stamp, item.value)
        self._fix_pub.publish(fix)
        if all(math.isfinite(v) for v in (item.latitude_deg, item.longitude_deg, item.depth_m)):
            self._position_pub.publish(fix)   # for the navigator: only a 'U' with a position
        self._command_pub.publish(Int32(data=int(item.code)))
        client = self.command_clients.get(int(item.code))
        if client is None:
            return
        if not client.service_is_ready():
            self.get_logger().error(f"command {item.code}: service {client.srv_name} is not "
                                    "available")
            return
        client.call_async(Trigger.Request()).add_done_callback(
            lambda future: self._command_done(item.code, client.srv_name, future))

    def _command_done(self, code: int, name: str, future) -> None:
        result = future.result()
        if result is None or not result.success:
            self.get_logger().error(f"command {code}: {name} failed: "
                                    f"{getattr(result, 'message', 'no answer')}")


def main(args=None):
    return run_node(Cola2VehicleBridge, args)


if __name__ == "__main__":
    sys.exit(main())
