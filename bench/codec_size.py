"""Encoded size of acomms codecs vs ROS 2 CDR size (rclpy.serialization.serialize_message).

For each message: CDR bytes, acomms bits/bytes with the default (lossless) codec for the type,
and with a tuned field config like one would write for an acoustic link. Run:

    source env.sh && python bench/codec_size.py
"""

from __future__ import annotations

import math

from builtin_interfaces.msg import Time
from geometry_msgs.msg import Pose
from nav_msgs.msg import Odometry
from rclpy.serialization import serialize_message
from sensor_msgs.msg import NavSatFix
from std_msgs.msg import Header

from acomms_core.codecs import MessageCodec

STAMP = {"codec": "time", "precision": 1}
UNIT_QUATERNION = {"codec": "linspace", "min_value": -1.0, "max_value": 1.0, "num_bits": 10}


def _header():
    return Header(stamp=Time(sec=1_763_700_000, nanosec=123_456_789), frame_id="base_link")


def _pose():
    pose = Pose()
    pose.position.x, pose.position.y, pose.position.z = 1234.56, -789.01, 42.3
    pose.orientation.z, pose.orientation.w = 0.3826834, 0.9238795
    return pose


def _fix():
    fix = NavSatFix(header=_header(), latitude=41.5246, longitude=-70.6712, altitude=-12.4)
    fix.status.status, fix.status.service = 0, 1
    fix.position_covariance = [2.5, 0, 0, 0, 2.5, 0, 0, 0, 9.0]
    fix.position_covariance_type = 2
    return fix


def _nav_status():
    """A vehicle's navigation status: local position, depth, attitude, velocity."""
    odom = Odometry(header=_header(), child_frame_id="auv1")
    odom.pose.pose = _pose()
    odom.twist.twist.linear.x, odom.twist.twist.linear.y = 1.52, -0.07
    odom.twist.twist.linear.z = 0.12
    odom.twist.twist.angular.z = 0.01
    return odom


CASES = [
    ("std_msgs/Header", _header(), {
        "stamp": STAMP,
        "frame_id": {"codec": "string", "max_length": 16, "bits_per_char": 6}}),
    ("geometry_msgs/Pose", _pose(), {
        "position": {"codec": "msg", "fields": {
            axis: {"codec": "float", "min_value": -5000, "max_value": 5000, "precision": 1}
            for axis in "xyz"}},
        "orientation": {"codec": "msg", "fields": {a: UNIT_QUATERNION for a in "xyzw"}}}),
    ("sensor_msgs/NavSatFix", _fix(), {
        "header": {"codec": "msg", "fields": {"stamp": STAMP}},
        "latitude": {"codec": "float", "min_value": -90, "max_value": 90, "precision": 5},
        "longitude": {"codec": "float", "min_value": -180, "max_value": 180, "precision": 5},
        "altitude": {"codec": "float", "min_value": -100, "max_value": 100, "precision": 1},
        "status": {"codec": "msg", "fields": {"status": {"codec": "integer", "min_value": -1,
                                                         "max_value": 2}}}}),
    ("nav status (nav_msgs/Odometry)", _nav_status(), {
        "header": {"codec": "msg", "fields": {"stamp": STAMP}},
        "pose": {"codec": "msg", "fields": {"pose": {"codec": "msg", "fields": {
            "position": {"codec": "msg", "fields": {
                "x": {"codec": "float", "min_value": -5000, "max_value": 5000, "precision": 1},
                "y": {"codec": "float", "min_value": -5000, "max_value": 5000, "precision": 1},
                "z": {"codec": "float", "min_value": -10, "max_value": 6000, "precision": 1}}},
            "orientation": {"codec": "msg", "fields": {a: UNIT_QUATERNION for a in "xyzw"}}}}}},
        "twist": {"codec": "msg", "fields": {"twist": {"codec": "msg", "fields": {
            "linear": {"codec": "msg", "fields": {
                a: {"codec": "float", "min_value": -5, "max_value": 5, "precision": 2}
                for a in "xyz"}},
            "angular": {"codec": "msg", "fields": {
                "z": {"codec": "linspace", "min_value": -1, "max_value": 1, "num_bits": 8}}}}}}},
    }),
]


def main() -> None:
    header = (f"{'message':32} {'CDR B':>6} {'default bits':>12} {'default B':>9} "
              f"{'tuned bits':>10} {'tuned B':>7} {'tuned/CDR':>9}")
    print(header)
    print("-" * len(header))
    for name, msg, tuned_fields in CASES:
        cdr = len(serialize_message(msg))
        default_bits = len(MessageCodec(type(msg)).encode(msg)[0])
        tuned_bits = len(MessageCodec(type(msg), tuned_fields).encode(msg)[0])
        print(f"{name:32} {cdr:6d} {default_bits:12d} {math.ceil(default_bits / 8):9d} "
              f"{tuned_bits:10d} {math.ceil(tuned_bits / 8):7d} {tuned_bits / 8 / cdr:9.1%}")
    print("\ndefault: lossless codec inferred from the type (strings <= 128 chars, 7-bit ASCII);"
          "\ntuned: field config with the precision an acoustic link needs; CDR includes its "
          "4-byte encapsulation header.")


if __name__ == "__main__":
    main()
