"""Sample messages for core_all_codecs_config.yaml and a tolerant comparison (test helper)."""

from __future__ import annotations

import math
import pathlib

from builtin_interfaces.msg import Time
from geometry_msgs.msg import Point32, Polygon, Pose, PoseStamped
from nav_msgs.msg import Path
from sensor_msgs.msg import BatteryState, NavSatFix, PointCloud2, PointField
from std_msgs.msg import (
    ByteMultiArray,
    Header,
    MultiArrayDimension,
    UInt8MultiArray,
    UInt64MultiArray,
)

from acomms_interfaces.msg import NeighborReachability

ALL_CODECS_CONFIG = str(pathlib.Path(__file__).with_name("core_all_codecs_config.yaml"))
EXAMPLE_CONFIG = str(pathlib.Path(__file__).resolve().parents[1] / "config"
                     / "example_codec_config.yaml")


def sample_messages(src: int = 1) -> dict:
    """{codec id: (subscribe topic, message sent, message expected after decoding, tolerances)}."""
    fix = NavSatFix()
    fix.header.stamp = Time(sec=1_700_000_000, nanosec=250_000_000)
    fix.header.frame_id = "gps"
    fix.status.status = -1
    fix.status.service = 5
    fix.latitude, fix.longitude, fix.altitude = 41.525, -70.671234, 12.5
    fix.position_covariance = [0.5, 0.0, 0.0, 0.0, 1.25, 0.0, 0.0, 0.0, 4.0]
    fix.position_covariance_type = 2

    battery = BatteryState(
        voltage=12.34, temperature=20.0, current=-1.5, charge=12.25, capacity=530.0,
        design_capacity=200.0, percentage=42.0, power_supply_status=2, power_supply_health=3,
        power_supply_technology=2, present=True, cell_voltage=[3.7, 3.85], location="Stern",
        serial_number="ab12-x")
    battery_expected = BatteryState(
        voltage=12.34, temperature=20.0, current=-1.5, charge=12.25, capacity=530.0,
        design_capacity=200.0, percentage=42.0, power_supply_status=2, power_supply_health=3,
        power_supply_technology=2, present=True, cell_voltage=[3.7, 3.85], location="stern",
        serial_number="AB12-X")

    table = UInt8MultiArray(data=bytes(range(10)))
    table.layout.dim = [MultiArrayDimension(label="rows", size=2, stride=6),
                        MultiArrayDimension(label="cols", size=3, stride=3)]
    table.layout.data_offset = 99
    table_expected = UInt8MultiArray(data=bytes(range(10)))
    table_expected.layout.dim = list(table.layout.dim)
    table_expected.layout.data_offset = src  # metadata codec 'src': from the received packet

    compressed = ByteMultiArray(data=[bytes([b]) for b in b"hello hello hello acomms"])

    polygon = Polygon(points=[Point32(x=1.5, y=-2.5, z=9.0), Point32(x=100.2, y=0.0, z=1.0)])
    polygon_expected = Polygon(points=[Point32(x=1.5, y=-2.5), Point32(x=100.2, y=0.0)])

    path = Path(poses=[PoseStamped(), PoseStamped()])
    path.poses[0].pose.position.x, path.poses[0].pose.position.y = 1234.0, 70000.0
    path.poses[0].pose.position.z = -5e9
    path.poses[1].pose.position.x = -3.0
    path.poses[1].pose.orientation.z = 0.7  # not in the config: arrives as the default
    path_expected = Path(poses=[PoseStamped(), PoseStamped()])
    path_expected.poses[0].pose.position.x, path_expected.poses[0].pose.position.y = 1234.0, 7e4
    path_expected.poses[0].pose.position.z = -5e9
    path_expected.poses[1].pose.position.x = -3.0

    big = UInt64MultiArray(data=[2**64 - 1, 5])

    cloud = PointCloud2(height=3, point_step=16, width=5, row_step=20, data=[1, 2, 3],
                        is_bigendian=True, is_dense=True,
                        fields=[PointField(name="x", offset=0, datatype=7, count=1)])

    reach = NeighborReachability(dest=42, reachable=True, fastest_rate=5)

    header = Header(stamp=Time(sec=1_700_000_123), frame_id="base_link")
    header_expected = Header(stamp=Time(sec=1_700_000_123), frame_id="link")

    pose = Pose()
    pose.position.x, pose.orientation.w = 1e-9, 0.5

    return {
        1: ("to_acomms/fix", fix, fix, {"latitude": 3e-5, "longitude": 2e-6, "stamp": 1e-3}),
        2: ("to_acomms/battery", battery, battery_expected,
            {"voltage": 0.011, "temperature": 0.24, "cell_voltage": 0.0011}),
        3: ("to_acomms/bytes", table, table_expected, {}),
        4: ("to_acomms/compressed", compressed, compressed, {}),
        5: ("to_acomms/polygon", polygon, polygon_expected, {"x": 0.11, "y": 0.11}),
        6: ("to_acomms/path", path, path_expected, {}),
        7: ("to_acomms/u64", big, big, {}),
        8: ("to_acomms/cloud", cloud, cloud, {}),
        9: ("to_acomms/reachability", reach, reach, {}),
        10: ("to_acomms/header", header, header_expected, {}),
        11: ("to_acomms/pose", pose, pose, {}),
    }


def message_to_dict(value):
    """Nested plain Python values of an rclpy message (lists for arrays)."""
    if hasattr(value, "get_fields_and_field_types"):
        return {name: message_to_dict(getattr(value, name))
                for name in value.get_fields_and_field_types()}
    if hasattr(value, "tolist"):
        value = value.tolist()
    if isinstance(value, (list, tuple)):
        return [message_to_dict(v) for v in value]
    return value


def _compare(expected, actual, tolerances, path, problems, relative=1e-9):
    if isinstance(expected, dict):
        if set(expected) == {"sec", "nanosec"}:
            expected = expected["sec"] + expected["nanosec"] * 1e-9
            actual = actual["sec"] + actual["nanosec"] * 1e-9
        else:
            for key in expected:
                _compare(expected[key], actual.get(key), tolerances, f"{path}.{key}", problems,
                         relative)
            return
    if isinstance(expected, (list, tuple, bytes)) and not isinstance(expected, str):
        expected, actual = list(expected), list(actual or [])
        if len(expected) != len(actual):
            problems.append(f"{path}: {len(actual)} elements, expected {len(expected)}")
            return
        for i, (e, a) in enumerate(zip(expected, actual, strict=True)):
            _compare(e, a, tolerances, f"{path}[{i}]", problems, relative)
        return
    if isinstance(expected, float) or isinstance(actual, float):
        if math.isnan(expected) and math.isnan(actual):
            return
        name = path.split(".")[-1].split("[")[0]
        tolerance = tolerances.get(name, 0.0) + relative * max(1.0, abs(expected))
        if not (expected == actual
                or math.isclose(expected, actual, abs_tol=tolerance, rel_tol=0)):
            problems.append(f"{path}: {actual!r} != {expected!r} (tolerance {tolerance})")
    elif expected != actual:
        problems.append(f"{path}: {actual!r} != {expected!r}")


def differences(expected, actual, tolerances=None, relative=1e-9) -> list[str]:
    """Field-by-field differences beyond the per-field (absolute) tolerance plus `relative` times
    the value (empty list: equal; NaN equals NaN)."""
    problems: list[str] = []
    _compare(message_to_dict(expected), message_to_dict(actual), tolerances or {},
             "", problems, relative)
    return problems
