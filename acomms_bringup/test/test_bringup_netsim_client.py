"""netsim_client_node against our netsim manager, end to end: two vehicles report positions
from their NavSatFix topics, the manager accepts them and places their emulated Micromodems, and
a packet queued on one vehicle's acomms_driver_node arrives at the other's across the simulated
channel. A third vehicle with an unconfigured modem port is answered with status 2."""

from __future__ import annotations

import pytest
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from rclpy.parameter import Parameter
from sensor_msgs.msg import NavSatFix
from std_msgs.msg import Int32

from acomms_bringup.nodes.netsim_client_node import NetsimClientNode, speed_and_heading
from acomms_core.ros.testing import RosHarness
from acomms_driver.nodes.acomms_driver_node import AcommsDriverNode
from acomms_interfaces.msg import Packet, ReceivedPacket
from acomms_interfaces.srv import QueueTxPacket
from acomms_sim.netsim.manager import NetsimManager
from acomms_sim.netsim.manager_config import parse_config

WAIT_S = 10.0
POSITIONS = {"a": (41.5, -70.6, 10.0), "b": (41.505, -70.6, 20.0), "c": (41.5, -70.61, 5.0)}
DATA = b"netsim end to end"


@pytest.fixture(scope="module")
def manager():
    pair = {"modem_tcp_port": 0, "endpoint_ip_address": "127.0.0.1", "environment_id": 1}
    manager = NetsimManager(parse_config({
        "manager": {"port": 0}, "airtime_scale": 0.05,
        "channel": {"ambient_noise_db": 50.0, "seed": 2},
        "env_bounds": [{"environment_id": 1, "lat_min": 41.0, "lat_max": 42.0,
                        "lon_min": -71.0, "lon_max": -70.0, "depth_max": 100.0}],
        "sim_env_pair": [{**pair, "src": 1}, {**pair, "src": 2}]})).start()
    yield manager
    manager.close()


def _client(ros: RosHarness, name: str, manager_port: int, modem_port: int):
    values = {"manager_port": manager_port, "modem_tcp_port": modem_port,
              "modem_location_topic": "fix", "location_topic_type": "navsatfix",
              "report_period_s": 0.1, "reconnect_initial_s": 0.05, "reconnect_max_s": 0.2,
              "diagnostics_period_s": 0.2}
    node = ros.add(NetsimClientNode(
        context=ros.context, namespace=name,
        parameter_overrides=[Parameter(k, value=v) for k, v in values.items()]))
    ros.configure_and_activate(node)
    return node


def _driver(ros: RosHarness, name: str, port: int, tmp_path):
    values = {"modem_connection_type": "tcp", "modem_remote_host": "127.0.0.1",
              "modem_remote_port": port, "modem_log_dir": str(tmp_path / name),
              "reconnect_initial_s": 0.1, "reconnect_max_s": 0.5}
    node = ros.add(AcommsDriverNode(
        context=ros.context, namespace=name,
        parameter_overrides=[Parameter(k, value=v) for k, v in values.items()]))
    ros.configure_and_activate(node)
    return node


def test_client_moves_modems_and_a_packet_crosses(manager, tmp_path):
    ports = manager.modem_ports
    unknown_port = 1 if 1 not in ports.values() else 2
    with RosHarness() as ros:
        helper = ros.helper
        fixes = {n: helper.create_publisher(NavSatFix, f"/{n}/fix", 10) for n in POSITIONS}
        statuses = {n: [] for n in POSITIONS}
        for name in POSITIONS:
            helper.create_subscription(Int32, f"/{name}/netsim_response_status",
                                       lambda m, n=name: statuses[n].append(m.data), 10)
        received, diagnostics = [], []
        helper.create_subscription(ReceivedPacket, "/b/packet_rx", received.append, 10)
        helper.create_subscription(DiagnosticArray, "/diagnostics", diagnostics.append, 50)
        clients = {"a": _client(ros, "a", manager.port, ports[1]),
                   "b": _client(ros, "b", manager.port, ports[2]),
                   "c": _client(ros, "c", manager.port, unknown_port)}

        def publish_fixes():
            for name, (lat, lon, depth) in POSITIONS.items():
                fix = NavSatFix(latitude=lat, longitude=lon, altitude=-depth)
                fixes[name].publish(fix)
            return all(statuses.values())

        assert ros.spin_until(publish_fixes, WAIT_S), statuses
        assert statuses["a"][-1] == 1 and statuses["b"][-1] == 1
        assert statuses["c"][-1] == 2  # UPDATE_FAILED_INVALID_MODEM_TCP_PORT
        assert manager.counters["nav_accepted"] >= 2
        assert clients["a"].counters["reports_sent"] >= 1

        def diagnosed(name: str, level: int) -> bool:
            return any(status.name.startswith(f"/{name}/netsim_client_node")
                       and status.level == level for m in diagnostics for status in m.status)

        assert ros.spin_until(lambda: diagnosed("a", DiagnosticStatus.OK)
                              and diagnosed("c", DiagnosticStatus.WARN), WAIT_S)

        drivers = {name: _driver(ros, name, ports[src], tmp_path)
                   for name, src in (("a", 1), ("b", 2))}
        assert ros.spin_until(lambda: all(d.client.connected and d.client.modem_src > 0
                                          for d in drivers.values()), WAIT_S)
        client = helper.create_client(QueueTxPacket, "/a/queue_tx_packet")
        packet = Packet(dest=2, packet_type=Packet.PACKET_TYPE_FDP, miniframe_rate=1,
                        dataframe_rate=1, dataframe_bytes=DATA)
        response = ros.call(client, QueueTxPacket.Request(
            queue=QueueTxPacket.Request.QUEUE_IMMEDIATE, packet=packet), WAIT_S)
        assert response.success
        assert ros.spin_until(lambda: any(bytes(m.packet.dataframe_bytes) == DATA
                                          for m in received), WAIT_S), "no packet_rx at b"
        assert received[-1].packet.src == 1


def test_speed_and_heading_from_two_fixes():
    speed, heading = speed_and_heading((41.5, -70.6), (41.5009, -70.6), 10.0)
    assert heading == pytest.approx(0.0, abs=0.1) and speed == pytest.approx(10.0, rel=0.01)
    speed, heading = speed_and_heading((41.5, -70.6), (41.5, -70.599), 1.0)
    assert heading == pytest.approx(90.0, abs=0.1) and speed > 0
    assert speed_and_heading(None, (41.5, -70.6), 1.0) == (0.0, 0.0)
