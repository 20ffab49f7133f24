"""evologics_driver_node through its topics: two emulated S2C modems on ptys, one driver each.
A packet queued at the USBL side is received at the other, the sender publishes `transmit` and an
`ack`, the USBL side publishes `usbl_fix` / `usbl_position` within the emulator's error model,
raw lines are published hex-escaped and the link counters reach /diagnostics."""

import math

import pytest
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import PointStamped
from rclpy.parameter import Parameter
from std_msgs.msg import String

from acomms_core.ros.testing import RosHarness
from acomms_driver.nodes.evologics_driver_node import EvologicsDriverNode, check_parameters, escaped
from acomms_interfaces.msg import ModemAck, Packet, ReceivedPacket, TransmittedPacket, UsblFix
from acomms_interfaces.srv import QueueTxPacket
from acomms_sim.emulator import evologics_emulator as emulator
from acomms_sim.emulator.usbl_errors import UsblErrorModel

WAIT_S = 15.0
TOPICS = {"packet_rx": ReceivedPacket, "transmit": TransmittedPacket, "ack": ModemAck,
          "usbl_fix": UsblFix, "usbl_position": PointStamped, "raw/to_modem": String,
          "raw/from_modem": String}


@pytest.fixture(scope="module")
def drivers():
    specs = [emulator.parse_modem("1:0,0,2:usbl"), emulator.parse_modem("2:400,300,30")]
    backend, served = emulator.start_modems(specs, usbl_seed=11)
    got = {name: {topic: [] for topic in TOPICS} for name in ("ship", "auv")}
    diagnostics = []
    with RosHarness() as ros:
        nodes = {}
        for name, (_, server) in zip(got, served, strict=True):
            values = {"modem_serial_port": server.path, "reconnect_initial_s": 0.1,
                      "diagnostics_period_s": 0.2}
            nodes[name] = ros.add(EvologicsDriverNode(
                context=ros.context, namespace=name,
                parameter_overrides=[Parameter(k, value=v) for k, v in values.items()]))
            ros.configure_and_activate(nodes[name])
            for topic, msg_type in TOPICS.items():
                ros.helper.create_subscription(msg_type, f"/{name}/{topic}",
                                               got[name][topic].append, 50)
        ros.helper.create_subscription(DiagnosticArray, "/diagnostics", diagnostics.append, 50)
        assert ros.spin_until(lambda: all(n.session.connected for n in nodes.values()), WAIT_S)
        yield {"ros": ros, "nodes": nodes, "got": got, "backend": backend,
               "served": served, "diagnostics": diagnostics}
    for model, server in served:
        server.close()
        model.close()
    backend.close()


def _queue(ros, name, packet):
    client = ros.helper.create_client(QueueTxPacket, f"/{name}/queue_tx_packet")
    return ros.call(client, QueueTxPacket.Request(packet=packet), WAIT_S)


def test_packet_received_acknowledged_and_located(drivers):
    ros, got = drivers["ros"], drivers["got"]
    payload = b"\x00\n\r\xffhello"
    response = _queue(ros, "ship", Packet(dest=2, dataframe_bytes=payload))
    assert response.success
    assert ros.spin_until(lambda: got["auv"]["packet_rx"] and got["ship"]["ack"]
                          and got["ship"]["usbl_position"], WAIT_S)
    received = got["auv"]["packet_rx"][0]
    assert bytes(received.packet.dataframe_bytes) == payload and received.packet.src == 1
    assert received.packet.dest == 2 and received.ack_requested
    sent = got["ship"]["transmit"][0]
    assert bytes(sent.packet.dataframe_bytes) == payload and sent.xst.dest == 2
    ack = got["ship"]["ack"][0]
    assert ack.ack and ack.src == 2 and ack.dest == 1
    true_e, true_n, true_u = drivers["backend"].relative_enu(1, 2)
    true_range = math.sqrt(true_e ** 2 + true_n ** 2 + true_u ** 2)
    sigma_range, sigma_bearing, _ = UsblErrorModel().sigmas(true_range)
    fix = next(f for f in got["ship"]["usbl_fix"] if f.source == UsblFix.SOURCE_USBLLONG)
    assert fix.remote_address == 2
    assert abs(fix.range_m - true_range) < 5 * sigma_range
    assert abs(fix.bearing_rad - math.atan2(true_e, true_n)) < 5 * sigma_bearing
    assert fix.accuracy_m > 0 and fix.header.frame_id == "usbl"
    position = got["ship"]["usbl_position"][0].point
    assert math.dist((position.x, position.y, position.z), (true_e, true_n, true_u)) < \
        5 * fix.accuracy_m
    assert any(m.data.startswith("AT*SENDIM,9,2,ack,\\x00\\x0a\\x0d\\xffhello")
               for m in got["ship"]["raw/to_modem"])
    assert any("RECVIM" in m.data for m in got["auv"]["raw/from_modem"])


def test_large_packet_goes_as_burst_and_bad_packets_are_refused(drivers):
    ros, got = drivers["ros"], drivers["got"]
    data = bytes(range(200))
    assert _queue(ros, "auv", Packet(dest=1, dataframe_bytes=data)).success
    assert ros.spin_until(lambda: any(bytes(m.packet.dataframe_bytes) == data
                                      for m in got["ship"]["packet_rx"]), WAIT_S)
    assert any(m.data.startswith("AT*SEND,200,1,") for m in got["auv"]["raw/to_modem"])
    assert not _queue(ros, "auv", Packet(dest=1, dataframe_bytes=bytes(1025))).success
    assert not _queue(ros, "auv", Packet(dest=1, miniframe_bytes=b"x",
                                         dataframe_bytes=b"y")).success


def test_hostile_lines_are_counted_on_diagnostics(drivers):
    ros, nodes = drivers["ros"], drivers["nodes"]
    drivers["served"][1][1].write_bytes(b"\xff\xfe\r\nUSBLLONG,oops\r\n" + b"A" * 3000 + b"\n")
    name = nodes["auv"].get_fully_qualified_name()

    def counters():
        values = {}
        for msg in drivers["diagnostics"]:
            for status in msg.status:
                if status.name.startswith(name):
                    values = {kv.key: kv.value for kv in status.values}
        return values

    assert ros.spin_until(lambda: counters().get("reader_refused_too_long") == "1"
                          and counters().get("reader_refused_not_ascii") == "1", WAIT_S)
    assert counters()["reader_refused_bad_fields"] == "1"
    assert nodes["auv"].session.connected


def test_validator_and_escaping():
    values = {"modem_connection_type": "udp", "reconnect_initial_s": 1.0, "reconnect_max_s": 2.0}
    assert "serial, tcp" in check_parameters(values)
    assert escaped(b"OK\r\n\\") == "OK\\x0d\\x0a\\x5c"
