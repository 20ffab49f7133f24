"""acomms_driver_node's transmit options through ROS against the emulator (issues 13 and 16):
the acknowledgement flag ($CAACK / $CACDR on `ack`, the flag on ReceivedPacket), ros_acomms'
`txf` topic and `query_modem_param` service, the PPS / TXTRIG transmit queues, clock sources in
/diagnostics, JANUS packets."""

import json
import time

import pytest
from std_msgs.msg import Header
from test_driver_node import DriverUnderTest, base_params, connection_params, host_lines

from acomms_core.ros.testing import RosHarness
from acomms_driver.micromodem import nmea
from acomms_interfaces.msg import ModemAck, Packet
from acomms_interfaces.srv import QueryModemParam, QueueTxPacket
from acomms_sim.emulator.micromodem_emulator import TcpServer
from acomms_sim.emulator.micromodem_model import LoopbackBackend, MicromodemModel

NS = "auv1"


@pytest.fixture
def pair():
    """Modem 1 served to the driver over TCP, modem 2 driven in-process."""
    backend = LoopbackBackend(delay_s=0.05)
    a = MicromodemModel(1, backend, airtime_scale=0.02)
    b = MicromodemModel(2, backend, airtime_scale=0.02)
    server = TcpServer(a)
    server.start()
    yield a, b, server
    server.close()
    a.close()
    b.close()
    backend.close()


def _start(ros, server, tmp_path, **extra):
    driver = DriverUnderTest(ros, base_params(tmp_path, **connection_params(server), **extra))
    driver.acks, driver.txf = [], []
    ros.helper.create_subscription(ModemAck, f"/{NS}/ack", driver.acks.append, 10)
    ros.helper.create_subscription(Header, f"/{NS}/txf", driver.txf.append, 10)
    ros.configure_and_activate(driver.node)
    driver.wait_connected()
    return driver


def _queue(driver, packet, queue=QueueTxPacket.Request.QUEUE_IMMEDIATE, request_ack=False):
    return driver.ros.call(driver.queue_client, QueueTxPacket.Request(
        queue=queue, packet=packet, request_ack=request_ack), 5.0)


def _fdp(data: bytes, mini: bytes = b"") -> Packet:
    return Packet(dest=2, packet_type=Packet.PACKET_TYPE_FDP, miniframe_rate=1,
                  dataframe_rate=1, miniframe_bytes=mini, dataframe_bytes=data)


def test_acks_txf_and_query_modem_param(pair, tmp_path):
    a, b, server = pair
    with RosHarness() as ros:
        driver = _start(ros, server, tmp_path, query_modem_param_timeout_s=0.5)
        # FDP with the ack flag: $CCTFP ack field 1; modem 2 acknowledges -> $CACDR -> ack
        assert _queue(driver, _fdp(bytes(range(80)), b"\x05"), request_ack=True).success
        assert ros.spin_until(lambda: driver.acks and driver.tx, 5.0)
        assert any(line.startswith("CCTFP,0,0,2,1,1,1,0,05,") for line in host_lines(a))
        ack = driver.acks[0]
        assert (ack.ack_type, ack.src, ack.dest, ack.ack) == (ModemAck.ACK_TYPE_FDP, 2, 1, True)
        assert (ack.miniframe_ack, ack.dataframe_ack, ack.minirate) == (0b1, 0b11, 1)
        assert ack.timestamp.sec > 1_600_000_000 and ack.frame_num == -1
        assert driver.txf and driver.txf[0].stamp.sec > 1_600_000_000  # ros_acomms' txf
        # legacy PSK with the ack flag: one $CAACK per frame
        assert _queue(driver, Packet(dest=2, packet_type=Packet.PACKET_TYPE_LEGACY_PSK,
                                     dataframe_rate=1, dataframe_bytes=bytes(100)),
                      request_ack=True).success
        assert ros.spin_until(lambda: len(driver.acks) == 3, 5.0)
        legacy = driver.acks[1:]
        assert [(m.ack_type, m.frame_num, m.dataframe_ack) for m in legacy] == [
            (ModemAck.ACK_TYPE_LEGACY, 1, 0b10), (ModemAck.ACK_TYPE_LEGACY, 2, 0b100)]
        assert len(driver.txf) == 2
        # a packet heard with the ack flag set carries it on ReceivedPacket; without, not
        b.handle_line(nmea.format_sentence("CCTFP", [1, 1, 1, 1, 0, "", "aa" * 10]))
        assert ros.spin_until(lambda: driver.rx, 5.0)
        time.sleep(0.1)
        b.handle_line(nmea.format_sentence("CCTFP", [1, 1, 1, 0, 0, "", "bb" * 10]))
        assert ros.spin_until(lambda: len(driver.rx) == 2, 5.0)
        assert [m.ack_requested for m in driver.rx] == [True, False]

        client = ros.helper.create_client(QueryModemParam, f"/{NS}/query_modem_param")
        one = ros.call(client, QueryModemParam.Request(param="pwramp.txlevel"), 5.0)
        assert (one.success, one.value, one.reason) == (True, "2", "")
        group = ros.call(client, QueryModemParam.Request(param="pwramp"), 5.0)
        values = json.loads(group.value)
        assert values["pwramp.txlevel"] == "2" and "pwramp.vbat" in values
        missing = ros.call(client, QueryModemParam.Request(param="no.such"), 5.0)
        assert not missing.success and "no $CACFG reply" in missing.reason
        bad = ros.call(client, QueryModemParam.Request(param="SRC,1"), 5.0)
        assert not bad.success and "bad parameter name" in bad.reason


def test_pps_and_txtrig_queues_and_clock_sources(pair, tmp_path):
    a, b, server = pair
    with RosHarness() as ros:
        driver = _start(ros, server, tmp_path)
        # the handshake's $CCTMQ names the clock sources before any reception
        assert ros.spin_until(lambda: driver.diagnostics.get("pps_source") == "RTC", 5.0)
        assert "CCTMQ" in host_lines(a)
        # PPS: $CCTFP with queue 2; the modem starts it at its next whole second
        assert _queue(driver, _fdp(b"on the pulse"), QueueTxPacket.Request.QUEUE_PPS).success
        assert ros.spin_until(lambda: driver.tx, 5.0)
        assert any(line.startswith("CCTFP,2,0,2,1,1,0,0,,") for line in host_lines(a))
        start = driver.tx[0].xst.time
        assert start.nanosec < 2_000_000 or start.nanosec > 998_000_000  # XST: microseconds
        # TXTRIG: held by the modem until its trigger input pulses
        assert _queue(driver, _fdp(b"on the trigger"), QueueTxPacket.Request.QUEUE_TXTRIG,
                      ).success
        assert ros.spin_until(lambda: any(line.startswith("CCTFP,3,0,")
                                          for line in host_lines(a)), 5.0)
        assert not ros.spin_until(lambda: len(driver.tx) == 2, 0.5)
        assert a.pulse_txtrig()
        assert ros.spin_until(lambda: len(driver.tx) == 2, 5.0)
        assert bytes(driver.tx[1].packet.dataframe_bytes) == b"on the trigger"
        assert a.counters["tx_released_pps"] == 1 and a.counters["tx_released_txtrig"] == 1
        # a triggered queue needs a $CCTFP packet; an unknown queue is refused
        legacy = Packet(dest=2, packet_type=Packet.PACKET_TYPE_LEGACY_PSK, dataframe_rate=1,
                        dataframe_bytes=b"x")
        assert not _queue(driver, legacy, QueueTxPacket.Request.QUEUE_PPS).success
        assert not _queue(driver, _fdp(b"x"), 7).success
        # clock sources: from the clock-status bits of the next $CACST
        a.pps_source = "EXT"
        b.handle_line(nmea.format_sentence("CCTFP", [1, 1, 1, 0, 0, "", "cc"]))
        assert ros.spin_until(lambda: driver.diagnostics.get("pps_source") == "EXT", 5.0)
        assert driver.diagnostics["clock_source"] == "RTC"


def test_janus_packets(pair, tmp_path):
    a, b, server = pair
    with RosHarness() as ros:
        driver = _start(ros, server, tmp_path, use_janus_packets=True)
        cargo = b"JANUS cargo"
        auto = Packet(dest=2, dataframe_rate=1, dataframe_bytes=cargo)
        assert _queue(driver, auto, request_ack=True).success
        assert ros.spin_until(lambda: driver.tx and driver.acks, 5.0)
        assert f"CCTJN,0,2,1,,{cargo.hex().upper()}" in host_lines(a)
        assert driver.acks[0].ack_type == ModemAck.ACK_TYPE_FDP and driver.acks[0].src == 2
        assert not _queue(driver, Packet(dest=2, dataframe_rate=1, miniframe_bytes=b"m",
                                         dataframe_bytes=cargo)).success
        b.handle_line(nmea.format_sentence("CCTJN", [0, 1, 1, "", b"from two".hex()]))
        assert ros.spin_until(lambda: driver.rx, 5.0)
        rx = driver.rx[0]
        assert (rx.packet.packet_type, rx.packet.src, rx.packet.dest) == (
            Packet.PACKET_TYPE_JANUS, 2, 1)
        assert bytes(rx.packet.dataframe_bytes) == b"from two" and rx.ack_requested
        assert list(rx.databytes_valid) == [0, 8] and rx.cst.src == 2
        assert driver.set_parameter("use_janus_packets", False).successful
        janus = Packet(dest=2, packet_type=Packet.PACKET_TYPE_JANUS, dataframe_bytes=b"j")
        assert not _queue(driver, janus).success
