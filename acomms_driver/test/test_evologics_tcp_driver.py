"""evologics_driver_node over TCP against evologics_emulator's TCP ports: binary payloads (CR/LF,
"+++", NUL) cross intact as instant message and as burst; when the emulator's TCP server goes
away the driver retries with doubling delays, and once the server is back on its port the driver
reconnects by itself and packets flow again."""

import re

import pytest
from rcl_interfaces.msg import Log
from rclpy.parameter import Parameter
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

from acomms_core.ros.testing import RosHarness
from acomms_driver.nodes.evologics_driver_node import EvologicsDriverNode
from acomms_interfaces.msg import ModemAck, Packet, ReceivedPacket
from acomms_interfaces.srv import QueueTxPacket
from acomms_sim.emulator import evologics_emulator as emulator

WAIT_S = 15.0
RECONNECT = {"reconnect_initial_s": 0.1, "reconnect_max_s": 0.8}
BINARY = b"\r\n+++AT\x00\n\r+++\xff"


@pytest.fixture(scope="module")
def link():
    specs = [emulator.parse_modem("1:0,0,2:usbl"), emulator.parse_modem("2:400,300,30")]
    backend, served = emulator.start_modems(specs, usbl_seed=5, tcp=emulator.TcpServing(0))
    got = {"rx": [], "ack": [], "rosout": []}
    with RosHarness() as ros:
        nodes = {}
        for name, (_, server) in zip(("ship", "auv"), served, strict=True):
            values = {"modem_connection_type": "tcp", "modem_remote_host": "127.0.0.1",
                      "modem_remote_port": server.port, **RECONNECT}
            nodes[name] = ros.add(EvologicsDriverNode(
                context=ros.context, namespace=name,
                parameter_overrides=[Parameter(k, value=v) for k, v in values.items()]))
            ros.configure_and_activate(nodes[name])
        ros.helper.create_subscription(ReceivedPacket, "/auv/packet_rx", got["rx"].append, 50)
        ros.helper.create_subscription(ModemAck, "/ship/ack", got["ack"].append, 50)
        ros.helper.create_subscription(Log, "/rosout", got["rosout"].append, QoSProfile(
            depth=1000, durability=DurabilityPolicy.TRANSIENT_LOCAL,
            reliability=ReliabilityPolicy.RELIABLE))
        assert ros.spin_until(lambda: all(n.session.connected for n in nodes.values()), WAIT_S)
        yield {"ros": ros, "nodes": nodes, "got": got, "served": served}
    emulator.stop_modems(backend, served)


def _send_and_receive(link, payload: bytes) -> ReceivedPacket:
    ros, got = link["ros"], link["got"]
    client = ros.helper.create_client(QueueTxPacket, "/ship/queue_tx_packet")
    request = QueueTxPacket.Request(packet=Packet(dest=2, dataframe_bytes=payload))
    assert ros.call(client, request, WAIT_S).success

    def received():
        return [m for m in got["rx"] if bytes(m.packet.dataframe_bytes) == payload]

    assert ros.spin_until(received, WAIT_S), f"{payload!r} never arrived at the auv"
    return received()[0]


@pytest.mark.parametrize("payload", [BINARY, BINARY * 10], ids=["instant", "burst"])
def test_binary_payload_crosses_intact_over_tcp(link, payload):
    acks = len(link["got"]["ack"])
    received = _send_and_receive(link, payload)
    assert received.packet.src == 1 and received.packet.dest == 2
    assert link["ros"].spin_until(lambda: len(link["got"]["ack"]) > acks, WAIT_S)
    assert link["got"]["ack"][-1].ack
    assert not any(k.startswith("reader_refused") and v
                   for n in link["nodes"].values() for k, v in n.session.all_counters().items())


def _delays(link) -> list[float]:
    """The reconnect delays the ship's driver logged, in order."""
    return [float(match.group(1)) for m in link["got"]["rosout"] if m.name.startswith("ship")
            for match in [re.search(r"reconnecting in ([\d.]+) s", m.msg)] if match]


def test_reconnects_with_backoff_after_the_emulator_server_restarts(link):
    ros, ship = link["ros"], link["nodes"]["ship"]
    model, server = link["served"][0]
    port, logged = server.port, len(_delays(link))
    server.close()  # the emulator's TCP server goes away ...
    assert ros.spin_until(lambda: not ship.session.connected, WAIT_S)
    failures = ship.session.counters["connect_failures"]
    assert ros.spin_until(lambda: ship.session.counters["connect_failures"] >= failures + 3,
                          WAIT_S), "the driver stopped retrying"
    restarted = emulator.RawTcpServer(model, port)  # ... and comes back on its port
    restarted.start()
    link["served"][0] = (model, restarted)
    assert ros.spin_until(lambda: ship.session.connected, WAIT_S), "no reconnection"
    assert ros.spin_until(lambda: len(_delays(link)) >= logged + 4, WAIT_S)
    delays = _delays(link)[logged:]
    assert delays[:4] == [0.1, 0.2, 0.4, 0.8], delays  # doubling up to reconnect_max_s
    assert _send_and_receive(link, b"after the restart\r\n").packet.src == 1
    assert restarted.counters["connections"] == 1
