"""cola2 struct: golden bytes built by hand with Python `struct`, both senders, both byte orders,
and the compact codec's size and resolution (ROS-free except for the message classes)."""

import math
import pathlib
import struct

import pytest
import yaml
from bitstring import ConstBitStream

from acomms_bringup.bridges import cola2_struct as cs
from acomms_bringup.bridges.cola2_bridge import message_to_struct, struct_to_message
from acomms_core.codecs import MessageCodec
from acomms_interfaces.msg import Cola2UsblFix, Cola2VehicleStatus

CONFIG = pathlib.Path(__file__).resolve().parents[1] / "config" / "cola2_codecs.yaml"
STATUS = cs.Cola2Struct(b"S", 1_763_900_000.25, 41.9857, 3.0291, 12.5, 1.5707, 7)
USBL = cs.Cola2Struct(b"U", 1_763_900_003.5, 41.98571, 3.02905, 12.25, 2.5, -3, b"\x01\x02xyz")


@pytest.mark.parametrize("order,prefix", [("little", "<"), ("big", ">")])
@pytest.mark.parametrize("item", [STATUS, USBL], ids=["S", "U"])
def test_pack_matches_hand_built_struct(order, prefix, item):
    golden = struct.pack(prefix + "cdddffi", item.sender, item.time_s, item.latitude_deg,
                         item.longitude_deg, item.depth_m, item.value, item.code) + item.custom
    assert len(golden) == 37 + len(item.custom)
    assert cs.pack(item, order) == golden
    back = cs.unpack(golden, order, expect=item.sender)
    assert back.sender == item.sender and back.custom == item.custom
    assert (back.time_s, back.latitude_deg, back.longitude_deg) == (
        item.time_s, item.latitude_deg, item.longitude_deg)       # doubles: exact
    assert back.depth_m == pytest.approx(item.depth_m, abs=1e-6)   # floats: float32
    assert back.value == pytest.approx(item.value, rel=1e-7) and back.code == item.code
    assert cs.pack(back, order) == golden                          # byte for byte again


def test_struct_is_37_bytes_packed_and_orders_differ():
    assert cs.STRUCT_BYTES == 37
    assert cs.pack(STATUS, "little") != cs.pack(STATUS, "big")
    assert cs.pack(STATUS, "little")[0:1] == b"S"


def test_bad_input_is_refused_with_a_reason():
    with pytest.raises(cs.Cola2StructError, match="shorter than the 37-byte"):
        cs.unpack(b"S" + bytes(20))
    with pytest.raises(cs.Cola2StructError, match="expected b'U'"):
        cs.unpack(cs.pack(STATUS), expect=b"U")
    with pytest.raises(cs.Cola2StructError, match="neither"):
        cs.unpack(b"X" + bytes(36))
    with pytest.raises(cs.Cola2StructError, match="byte_order"):
        cs.pack(STATUS, "middle")
    with pytest.raises(cs.Cola2StructError, match="cannot pack"):
        cs.pack(cs.Cola2Struct(b"S", 0, 0, 0, 0, 0, 2**31))


def _codec(ros_id, without=()):
    entry = next(m for m in yaml.safe_load(CONFIG.read_text())[0]["message_codecs"]
                 if m["id"] == ros_id)
    cls = Cola2VehicleStatus if ros_id == 40 else Cola2UsblFix
    return MessageCodec(cls, {k: v for k, v in entry["fields"].items() if k not in without})


def test_compact_navigation_content_fits_15_bytes_at_stated_resolution():
    codec = _codec(40)
    msg = struct_to_message(cs.Cola2Struct(b"S", 1_763_900_000.4, 41.98573449, 3.02912345,
                                           123.456, 271.34, 5))
    bits, _ = codec.encode(msg)
    nav_bits = len(_codec(40, without=("status_code", "custom")).encode(msg)[0])
    assert nav_bits == 118 and math.ceil(nav_bits / 8) <= 15
    decoded = codec.decode(ConstBitStream(bits))
    back = message_to_struct(decoded, b"S")
    assert back.time_s == pytest.approx(1_763_900_000, abs=0.5 + 1e-9)      # 1 s
    assert back.latitude_deg == pytest.approx(41.98573449, abs=0.5e-6)      # 0.1 m
    assert back.longitude_deg == pytest.approx(3.02912345, abs=0.5e-6)
    assert back.depth_m == pytest.approx(123.456, abs=0.005 + 1e-6)         # 0.01 m
    assert back.value == pytest.approx(271.34, abs=0.05 + 1e-6)             # 0.1 deg
    assert back.code == 5


def test_compact_usbl_round_trip_keeps_command_and_custom_bytes():
    codec = _codec(41)
    msg = struct_to_message(USBL)
    bits, _ = codec.encode(msg)
    decoded = codec.decode(ConstBitStream(bits))
    back = message_to_struct(decoded, b"U")
    assert back.code == -3 and back.custom == USBL.custom
    assert back.value == pytest.approx(2.5, abs=0.005)


def test_odometry_pose_gives_position_and_compass_heading():
    from geometry_msgs.msg import Pose

    from acomms_bringup.bridges.cola2_vehicle_bridge import odometry_navigation
    from acomms_sim.physics.geodesy import EnuOrigin

    pose = Pose()
    pose.position.x, pose.position.y, pose.position.z = 0.0, 1000.0, -30.0   # 1 km north
    pose.orientation.z, pose.orientation.w = math.sin(math.pi / 4), math.cos(math.pi / 4)
    latitude, longitude, depth, heading = odometry_navigation(pose, EnuOrigin(41.0, 3.0))
    from pyproj import Geod

    north = Geod(ellps="WGS84").fwd(3.0, 41.0, 0.0, 1000.0)[1]  # 1 km north on WGS84
    assert latitude == pytest.approx(north, abs=1e-7)
    assert longitude == pytest.approx(3.0, abs=1e-9) and depth == pytest.approx(30.0)
    assert heading == pytest.approx(0.0, abs=1e-9)   # yaw 90 deg (facing north) = heading 0
