"""cola2_topside_bridge: the ship end of the cola2 bridge (see `cola2_bridge`).

The 'U' position comes from the latest of two sources: a ready-made NavSatFix of the AUV
(`usbl_topic`), or a USBL fix of the AUV's modem (`usbl_fix_topic`, acomms_interfaces/UsblFix)
combined with the ship's GPS (`ship_fix_topic`) and heading (`heading_topic`, `heading_type`)
and the transducer's mounting (`usbl_position`), as cola2's topside does. USBL fixes are counted
as used or refused (wrong address, stale inputs, no position) in the diagnostics, once per
measurement: the modem reports a measurement with a position as USBLLONG followed by USBLANGLES
(same remote and measurement time); that USBLANGLES adds nothing and is counted apart
(`usbl_angles_with_position`). Only a measurement without a position (a USBLANGLES alone, or a
USBLLONG without finite coordinates) is refused as `usbl_refused_no_position`.
"""

from __future__ import annotations

import math
import sys

from sensor_msgs.msg import Imu, NavSatFix
from std_msgs.msg import Float64, Int32

from acomms_bringup.bridges.cola2_bridge import Cola2Bridge, fix_message
from acomms_bringup.bridges.cola2_struct import SENDER_USBL, SENDER_VEHICLE, Cola2Struct
from acomms_bringup.bridges.usbl_position import (
    FRAMES,
    UsblMounting,
    UsblRefused,
    auv_position,
    heading_from_quaternion,
    stale_reason,
)
from acomms_core.ros.ros_support import ParameterSpec, run_node, stamp_seconds
from acomms_interfaces.msg import UsblFix

HEADING_TYPES = ("float64_deg", "imu")

TOPSIDE_PARAMETERS = (
    ParameterSpec("usbl_topic", "usbl/fix", "sensor_msgs/NavSatFix: the USBL fix of the AUV "
                  "(altitude = -depth).", read_only=True),
    ParameterSpec("command_topic", "usbl/command", "std_msgs/Int32: a command for the AUV, "
                  "sent with the next command_repeats structs.", read_only=True),
    ParameterSpec("command_repeats", 3, "Structs that carry a new command (a struct waiting "
                  "for the link is replaced by a newer one).", minimum=1, maximum=1000,
                  read_only=True),
    ParameterSpec("idle_command", 0, "Command code sent when no new command is waiting.",
                  minimum=-2147483648, maximum=2147483647, read_only=True),
    ParameterSpec("default_accuracy_m", 5.0, "USBL accuracy sent when the fix has no "
                  "covariance, m.", minimum=0.0, maximum=10000.0, read_only=True),
    ParameterSpec("usbl_fix_topic", "usbl_fix", "acomms_interfaces/UsblFix from the ship's "
                  "USBL modem driver; a fix of usbl_address becomes the next 'U' position.",
                  read_only=True),
    ParameterSpec("usbl_address", -1, "Modem address of the AUV in USBL fixes (-1: "
                  "remote_address); fixes of other modems are refused and counted.",
                  minimum=-1, maximum=255, read_only=True),
    ParameterSpec("usbl_frame", "enu", "Relative position used: enu (the fix's motion-"
                  "compensated east/north/up) | head (x forward, y starboard, z down in the "
                  "head frame, turned by usbl_yaw_offset_deg and the ship's heading).",
                  read_only=True),
    ParameterSpec("ship_fix_topic", "ship/fix", "sensor_msgs/NavSatFix: the ship's GPS "
                  "antenna.", read_only=True),
    ParameterSpec("heading_topic", "ship/heading", "The ship's heading (see heading_type).",
                  read_only=True),
    ParameterSpec("heading_type", "float64_deg", "float64_deg (std_msgs/Float64, degrees "
                  "clockwise from true north) | imu (sensor_msgs/Imu, ENU orientation).",
                  read_only=True),
    ParameterSpec("usbl_forward_m", 0.0, "Transducer ahead of the GPS antenna, m.",
                  minimum=-500.0, maximum=500.0, read_only=True),
    ParameterSpec("usbl_starboard_m", 0.0, "Transducer to starboard of the GPS antenna, m.",
                  minimum=-500.0, maximum=500.0, read_only=True),
    ParameterSpec("usbl_down_m", 0.0, "Transducer depth below the sea surface, m.",
                  minimum=-50.0, maximum=500.0, read_only=True),
    ParameterSpec("usbl_yaw_offset_deg", 0.0, "Head x axis, degrees clockwise from the bow "
                  "(usbl_frame head).", minimum=-360.0, maximum=360.0, read_only=True),
    ParameterSpec("usbl_max_age_s", 5.0, "Oldest ship fix, heading or USBL fix (node clock, "
                  "at the fix's arrival) combined into a position; older ones are refused.",
                  minimum=0.0, maximum=3600.0, read_only=True),
)


class Cola2TopsideBridge(Cola2Bridge):
    OUTGOING = SENDER_USBL
    INCOMING = SENDER_VEHICLE
    SIDE_PARAMETERS = TOPSIDE_PARAMETERS

    def __init__(self, node_name: str = "cola2_topside_bridge", **kwargs):
        self.position = None   # (time_s, latitude, longitude, depth_m, accuracy_m) of the 'U'
        self.ship_fix = self.heading = None   # (received_s, message) / (received_s, degrees)
        self.command = None
        self.command_left = 0
        self.positioned = None   # (remote, measurement time) of the latest USBLLONG
        super().__init__(node_name, **kwargs)
        self.counts.update({"usbl_fixes_used": 0, "usbl_refused_address": 0,
                            "usbl_refused_stale": 0, "usbl_refused_no_position": 0,
                            "usbl_angles_with_position": 0})

    def check_parameters(self, values: dict) -> str | None:
        for name, allowed in (("usbl_frame", FRAMES), ("heading_type", HEADING_TYPES)):
            if values.get(name) not in allowed:
                return f"{name}: must be one of {', '.join(allowed)}, got {values.get(name)!r}"
        return super().check_parameters(values)

    def configure_side(self, values: dict) -> None:
        self.mounting = UsblMounting(values["usbl_forward_m"], values["usbl_starboard_m"],
                                     values["usbl_down_m"], values["usbl_yaw_offset_deg"])
        self.usbl_address = (values["remote_address"] if values["usbl_address"] < 0
                             else values["usbl_address"])
        self._fix_pub = self.configured.publisher(NavSatFix, "vehicle_fix")
        self._heading_pub = self.configured.publisher(Float64, "vehicle_heading")
        self._status_pub = self.configured.publisher(Int32, "vehicle_status_code")

    def activate_side(self) -> None:
        self.activated.subscription(NavSatFix, self.values["usbl_topic"], self.on_usbl)
        self.activated.subscription(Int32, self.values["command_topic"], self.on_command)
        values = self.values
        self.activated.subscription(UsblFix, values["usbl_fix_topic"], self.on_usbl_fix)
        self.activated.subscription(NavSatFix, values["ship_fix_topic"], self.on_ship_fix)
        if values["heading_type"] == "imu":
            self.activated.subscription(Imu, values["heading_topic"], self.on_imu)
        else:
            self.activated.subscription(Float64, values["heading_topic"], self.on_heading)

    def now_s(self) -> float:
        return self.get_clock().now().nanoseconds * 1e-9

    def on_usbl(self, msg: NavSatFix) -> None:
        self.position = (stamp_seconds(msg.header.stamp), msg.latitude, msg.longitude,
                         -msg.altitude, self.accuracy_m(msg))

    def on_ship_fix(self, msg: NavSatFix) -> None:
        self.ship_fix = (self.now_s(), msg)

    def on_heading(self, msg: Float64) -> None:
        self.heading = (self.now_s(), float(msg.data) % 360.0)

    def on_imu(self, msg: Imu) -> None:
        q = msg.orientation
        self.heading = (self.now_s(), heading_from_quaternion(q.x, q.y, q.z, q.w))

    def on_usbl_fix(self, msg: UsblFix) -> None:
        measurement = (msg.remote_address, msg.measurement_time_s)
        if msg.source == UsblFix.SOURCE_USBLLONG:
            self.positioned = measurement
        elif measurement == self.positioned:   # the angles of a measurement already handled
            self.counts["usbl_angles_with_position"] += 1
            return
        if msg.remote_address != self.usbl_address:
            self.refuse("address", f"fix of modem {msg.remote_address}, the AUV is "
                        f"{self.usbl_address}")
            return
        now, fix_s = self.now_s(), stamp_seconds(msg.header.stamp)
        reason = stale_reason(now, {"usbl fix": fix_s, "ship fix": self.ship_fix and
                                    self.ship_fix[0], "heading": self.heading and
                                    self.heading[0]}, self.values["usbl_max_age_s"])
        if reason is not None:
            self.refuse("stale", reason)
            return
        ship = self.ship_fix[1]
        vector = ((msg.east_m, msg.north_m, msg.up_m) if self.values["usbl_frame"] == "enu"
                  else (msg.x_m, msg.y_m, msg.z_m))
        usbl_sigma = (msg.accuracy_m if math.isfinite(msg.accuracy_m) and msg.accuracy_m > 0
                      else self.values["default_accuracy_m"])
        gps_sigma = (0.0 if ship.position_covariance_type == NavSatFix.COVARIANCE_TYPE_UNKNOWN
                     else self.accuracy_m(ship))
        try:
            pos = auv_position(vector, self.values["usbl_frame"], ship.latitude, ship.longitude,
                               self.heading[1], self.mounting, usbl_sigma, gps_sigma)
        except UsblRefused as exc:
            self.refuse("no_position", str(exc))
            return
        self.counts["usbl_fixes_used"] += 1
        self.position = (fix_s, pos.latitude, pos.longitude, pos.depth_m, pos.accuracy_m)

    def refuse(self, kind: str, reason: str) -> None:
        self.counts[f"usbl_refused_{kind}"] += 1
        self.get_logger().warning(f"USBL fix refused: {reason}", throttle_duration_sec=10.0)

    def on_command(self, msg: Int32) -> None:
        self.command = int(msg.data)
        self.command_left = self.values["command_repeats"]

    def accuracy_m(self, fix: NavSatFix) -> float:
        if fix.position_covariance_type == NavSatFix.COVARIANCE_TYPE_UNKNOWN:
            return self.values["default_accuracy_m"]
        return math.sqrt(max(fix.position_covariance[0], fix.position_covariance[4], 0.0))

    def build_outgoing(self) -> Cola2Struct | None:
        fix = self.position
        if fix is None and self.command_left <= 0:
            return None
        command = self.values["idle_command"]
        if self.command_left > 0:
            command, self.command_left = self.command, self.command_left - 1
        if fix is None:   # a command before any fix: position unknown (NaN)
            return Cola2Struct(SENDER_USBL, math.nan, math.nan, math.nan, math.nan, math.nan,
                               command)
        return Cola2Struct(SENDER_USBL, *fix, command)

    def handle_incoming(self, item: Cola2Struct) -> None:
        self._fix_pub.publish(fix_message(item, self.get_clock().now().to_msg()))
        self._heading_pub.publish(Float64(data=float(item.value)))
        self._status_pub.publish(Int32(data=int(item.code)))


def main(args=None):
    return run_node(Cola2TopsideBridge, args)


if __name__ == "__main__":
    sys.exit(main())
