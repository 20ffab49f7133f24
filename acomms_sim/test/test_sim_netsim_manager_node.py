"""netsim_manager_node: a ReceiveStats push is published, counters (the TCP servers' too) reach
/diagnostics, and a bad config file fails configure with the reason."""

from __future__ import annotations

import socket

import yaml
from diagnostic_msgs.msg import DiagnosticArray
from rclpy.lifecycle import TransitionCallbackReturn
from rclpy.parameter import Parameter

from acomms_core.ros.ros_support import lifecycle_state_label
from acomms_core.ros.testing import RosHarness
from acomms_interfaces.msg import NetsimReceiveStats
from acomms_sim.netsim import wire
from acomms_sim.netsim.manager_node import NetsimManagerNode
from acomms_sim.netsim.proto import netsim_pb2

WAIT_S = 10.0
CONFIG = {
    "manager": {"port": 61999}, "airtime_scale": 0.05,
    "env_bounds": [{"environment_id": 1, "lat_min": 41.0, "lat_max": 42.0, "lon_min": -71.0,
                    "lon_max": -70.0, "depth_max": 100.0}],
    "sim_env_pair": [{"modem_tcp_port": 0, "endpoint_ip_address": "127.0.0.1",
                      "environment_id": 1, "src": src} for src in (1, 2)],
}


def _node(ros: RosHarness, config_file: str):
    return ros.add(NetsimManagerNode(context=ros.context, parameter_overrides=[
        Parameter("config_file", value=config_file), Parameter("manager_port", value=0),
        Parameter("diagnostics_period_s", value=0.2)]))


def test_receive_stats_are_published_and_counters_diagnosed(tmp_path):
    path = tmp_path / "netsim.yaml"
    path.write_text(yaml.safe_dump(CONFIG))
    with RosHarness() as ros:
        stats, diagnostics = [], []
        ros.helper.create_subscription(NetsimReceiveStats, "/netsim_receive_stats",
                                       stats.append, 10)
        ros.helper.create_subscription(DiagnosticArray, "/diagnostics", diagnostics.append, 50)
        node = _node(ros, str(path))
        ros.configure_and_activate(node)
        ports = node.manager.modem_ports
        request = netsim_pb2.NetSimManagerRequest(id=12)
        request.stats.add(modem_tcp_port=ports[2], tx_modem_tcp_port=ports[1],
                          packet_success=True, mm_stats=b"\x08\x01")
        with socket.create_connection(("127.0.0.1", node.manager.port), 2.0) as sock:
            sock.sendall(b"junk\n" + wire.encode_line(request))
            assert ros.spin_until(lambda: stats, WAIT_S)
        msg = stats[0]
        assert (msg.request_id, msg.modem_tcp_port, msg.tx_modem_tcp_port) == \
            (12, ports[2], ports[1])
        assert msg.packet_success and bytes(msg.mm_stats) == b"\x08\x01"
        assert msg.peer_address == "127.0.0.1"

        # a second connection to a modem port replaces the first (counted per modem)
        drivers = [socket.create_connection(("127.0.0.1", ports[1]), 2.0) for _ in range(2)]
        expected = {"bad_framing": "1", "connections": "1", "modem_src_1_clients_replaced": "1"}

        def diagnosed() -> bool:
            return any(s.name.endswith("netsim manager") and
                       expected.items() <= {kv.key: kv.value for kv in s.values}.items()
                       for m in diagnostics for s in m.status)

        assert ros.spin_until(diagnosed, WAIT_S)
        for sock in drivers:
            sock.close()


def test_bad_config_file_fails_configure(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump({**CONFIG, "env_bounds": []}))
    with RosHarness() as ros:
        node = _node(ros, str(path))
        assert node.trigger_configure() == TransitionCallbackReturn.FAILURE
        assert lifecycle_state_label(node) == "unconfigured"
