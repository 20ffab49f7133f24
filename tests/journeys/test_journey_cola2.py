"""Journey: README "Bridges / cola2". Compact mode in a scenario (the shipped
`acomms_bringup/config/cola2_compact.yaml`): the AUV's 'S' navigation reaches the ship and the
ship's 'U' USBL fix reaches the AUV, as the summary's bridge counters show. Byte-exact mode, the
README's shell block: the bridge stands in for the message queue, serves the MAC's
`get_next_packet_data` with the 37-byte 'S' struct and turns a received 'U' packet into
`usbl_update`."""

from __future__ import annotations

import shlex
import signal
import time

from journey_ros_tools import doc_block
from journey_support import Background, documented, run_summary, shell
from sensor_msgs.msg import NavSatFix

from acomms_bringup.bridges import cola2_struct
from acomms_core.ros.testing import RosHarness
from acomms_interfaces.msg import ReceivedPacket
from acomms_interfaces.srv import GetNextPacketData


def test_compact_scenario_carries_s_to_the_ship_and_u_to_the_auv(tmp_path):
    command = documented("acomms_run acomms_bringup/config/cola2_compact.yaml --warp max")
    result = shell(f"{command} --out {tmp_path / 'run'}", timeout_s=110)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "Bridges" in result.stdout, result.stdout[-3000:]
    bridges = run_summary(tmp_path / "run")["bridges"]
    auv, ship = bridges["/auv/cola2_vehicle_bridge"], bridges["/ship/cola2_topside_bridge"]
    # 'S' every 20 s from the AUV's navigation; 'U' every 30 s from the ship's USBL fix
    assert auv["structs_built"] >= 5 and ship["structs_built"] >= 4, bridges
    assert 0 < ship["compact_received"] == ship["structs_received"] <= auv["structs_built"]
    assert 0 < auv["compact_received"] == auv["structs_received"] <= ship["structs_built"]
    assert ship["structs_received"] >= auv["structs_built"] // 2, bridges   # a quiet channel


def _request(ros, client, deadline):
    """The MAC's question; None when unanswered for 3 s (not up yet, or a request lost while
    DDS discovery is still matching the service on a loaded machine: asked again)."""
    request = GetNextPacketData.Request(num_miniframe_bytes=32, num_dataframe_bytes=64)
    try:
        return ros.call(client, request, timeout=min(3.0, max(0.5, deadline - time.monotonic())))
    except TimeoutError:
        return None


def test_byte_exact_block_serves_the_struct_and_reads_packets(tmp_path):
    block = doc_block("cola2_vehicle_bridge --ros-args -r __ns:=/auv -p wire_mode:=byte_exact")
    with Background(f"bash -c {shlex.quote(block)}", log_path=tmp_path / "block.log") as run, \
            RosHarness() as ros:
        fix_pub = ros.helper.create_publisher(NavSatFix, "/auv/navigation/fix", 10)
        fixes = []
        ros.helper.create_subscription(NavSatFix, "/auv/usbl_update", fixes.append, 10)
        rx_pub = ros.helper.create_publisher(ReceivedPacket, "/auv/packet_rx", 10)
        packets = ros.helper.create_client(GetNextPacketData, "/auv/get_next_packet_data")
        deadline = time.monotonic() + 60.0
        answer = None
        while time.monotonic() < deadline:
            fix_pub.publish(NavSatFix(latitude=41.52, longitude=-70.67, altitude=-12.5))
            answer = _request(ros, packets, deadline)
            if answer is not None and answer.num_messages:
                break
            ros.spin_for(1.0)
        assert answer is not None and answer.num_messages == 1, run.stop() or run.output[-3000:]
        payload = bytes(answer.miniframe_bytes) + bytes(answer.dataframe_bytes)
        assert len(payload) == cola2_struct.STRUCT_BYTES == 37 and answer.dest == 3
        status = cola2_struct.unpack(payload, "little", cola2_struct.SENDER_VEHICLE)
        assert (status.latitude_deg, status.longitude_deg, status.depth_m) == (
            41.52, -70.67, 12.5)

        usbl = cola2_struct.Cola2Struct(cola2_struct.SENDER_USBL, 1.7e9, 41.53, -70.66, 30.0,
                                        2.0, 0)
        received = ReceivedPacket()
        received.packet.src, received.packet.dest = 3, 1
        received.packet.dataframe_bytes = list(cola2_struct.pack(usbl))
        assert ros.spin_until(lambda: rx_pub.publish(received) or bool(fixes), timeout=15.0)
        assert (fixes[0].latitude, fixes[0].longitude, fixes[0].altitude) == (41.53, -70.66,
                                                                             -30.0)
        assert fixes[0].position_covariance[0] == 4.0   # accuracy 2 m, squared
        # the block's `&` job ignores SIGINT (a non-interactive shell's background job): end the
        # block as a service manager would, with SIGTERM to its process group
        run.stop(signal.SIGTERM)
    assert "Traceback" not in run.output and "error" not in run.output.lower(), run.output
