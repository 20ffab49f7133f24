"""cola2_topside_bridge: the ship end of the cola2 bridge (see `cola2_bridge`)."""

from __future__ import annotations

import math
import sys

from sensor_msgs.msg import NavSatFix
from std_msgs.msg import Float64, Int32

from acomms_bringup.bridges.cola2_bridge import Cola2Bridge, fix_message
from acomms_bringup.bridges.cola2_struct import SENDER_USBL, SENDER_VEHICLE, Cola2Struct
from acomms_core.ros.ros_support import ParameterSpec, run_node, stamp_seconds

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
)


class Cola2TopsideBridge(Cola2Bridge):
    OUTGOING = SENDER_USBL
    INCOMING = SENDER_VEHICLE
    SIDE_PARAMETERS = TOPSIDE_PARAMETERS

    def __init__(self, node_name: str = "cola2_topside_bridge", **kwargs):
        self.usbl_fix = None
        self.command = None
        self.command_left = 0
        super().__init__(node_name, **kwargs)

    def configure_side(self, values: dict) -> None:
        self._fix_pub = self.configured.publisher(NavSatFix, "vehicle_fix")
        self._heading_pub = self.configured.publisher(Float64, "vehicle_heading")
        self._status_pub = self.configured.publisher(Int32, "vehicle_status_code")

    def activate_side(self) -> None:
        self.activated.subscription(NavSatFix, self.values["usbl_topic"], self.on_usbl)
        self.activated.subscription(Int32, self.values["command_topic"], self.on_command)

    def on_usbl(self, msg: NavSatFix) -> None:
        self.usbl_fix = msg

    def on_command(self, msg: Int32) -> None:
        self.command = int(msg.data)
        self.command_left = self.values["command_repeats"]

    def accuracy_m(self, fix: NavSatFix) -> float:
        if fix.position_covariance_type == NavSatFix.COVARIANCE_TYPE_UNKNOWN:
            return self.values["default_accuracy_m"]
        return math.sqrt(max(fix.position_covariance[0], fix.position_covariance[4], 0.0))

    def build_outgoing(self) -> Cola2Struct | None:
        fix = self.usbl_fix
        if fix is None and self.command_left <= 0:
            return None
        command = self.values["idle_command"]
        if self.command_left > 0:
            command, self.command_left = self.command, self.command_left - 1
        if fix is None:   # a command before any fix: position unknown (NaN)
            return Cola2Struct(SENDER_USBL, math.nan, math.nan, math.nan, math.nan, math.nan,
                               command)
        return Cola2Struct(SENDER_USBL, stamp_seconds(fix.header.stamp), fix.latitude,
                           fix.longitude, -fix.altitude, self.accuracy_m(fix), command)

    def handle_incoming(self, item: Cola2Struct) -> None:
        self._fix_pub.publish(fix_message(item, self.get_clock().now().to_msg()))
        self._heading_pub.publish(Float64(data=float(item.value)))
        self._status_pub.publish(Int32(data=int(item.code)))


def main(args=None):
    return run_node(Cola2TopsideBridge, args)


if __name__ == "__main__":
    sys.exit(main())
