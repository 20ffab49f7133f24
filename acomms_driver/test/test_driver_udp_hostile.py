"""Issue 28 through ROS: one hostile datagram no longer deafens udp_link_driver; refusals are
counted on /diagnostics, which turns ERROR while receiving is impossible."""

from __future__ import annotations

import socket

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from rclpy.parameter import Parameter
from test_driver_udp_link import _FailingSocket  # a socket whose recv fails (interface gone)

from acomms_core.ros.testing import RosHarness
from acomms_driver.udp import datagram
from acomms_driver.udp.udp_link_driver import UdpLinkDriver
from acomms_interfaces.msg import ReceivedPacket
from acomms_interfaces.srv import PingModem

WAIT_S = 10.0


def _raw(src: int, dest: int, mini: bytes = b"", data: bytes = b"", kind: int = 1) -> bytes:
    return datagram.HEADER.pack(datagram.MAGIC, kind, src, dest, 3, 1, 5, len(mini)) + mini + data


def _status(diagnostics: list) -> tuple[int, str, dict]:
    status = diagnostics[-1].status[0]
    return status.level, status.message, {kv.key: kv.value for kv in status.values}


def test_oversized_datagrams_are_refused_counted_and_the_driver_keeps_receiving():
    peer = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    peer.bind(("127.0.0.1", 0))
    with RosHarness() as ros:
        values = {"SRC": 2, "remote_port": peer.getsockname()[1], "diagnostics_period_s": 0.1,
                  "max_reply_queue_length": 5}
        driver = ros.add(UdpLinkDriver(context=ros.context, namespace="/hostile",
                                       parameter_overrides=[Parameter(k, value=v)
                                                            for k, v in values.items()]))
        ros.configure_and_activate(driver)
        received, diagnostics = [], []
        ros.helper.create_subscription(ReceivedPacket, "/hostile/packet_rx", received.append, 10)
        ros.helper.create_subscription(DiagnosticArray, "/diagnostics", diagnostics.append, 10)
        assert ros.spin_until(lambda: ros.helper.count_publishers("/hostile/packet_rx"), WAIT_S)
        port = driver.link.port
        # what raised OverflowError in udp_rx (int16 databytes_valid) and deafened the driver
        peer.sendto(_raw(3, 2, data=bytes(32768)), ("127.0.0.1", port))
        peer.sendto(_raw(3, 2, mini=bytes(65000)), ("127.0.0.1", port))
        # representable, but past the profile's 2048 dataframe bytes at rate 5
        peer.sendto(_raw(3, 2, data=bytes(2049)), ("127.0.0.1", port))
        peer.sendto(_raw(3, 2, data=b"hello"), ("127.0.0.1", port))
        assert ros.spin_until(lambda: received, WAIT_S), dict(driver.link.counters)
        assert bytes(received[0].packet.dataframe_bytes) == b"hello"
        assert list(received[0].databytes_valid) == [0, 5]
        assert ros.spin_until(lambda: diagnostics and _status(diagnostics)[2].get(
            "refused_oversize") == "2", WAIT_S)
        level, message, values = _status(diagnostics)
        assert level == DiagnosticStatus.OK and message == "up"
        assert values["refused_profile"] == "1" and values["packets_received"] == "1"

        real = driver.link._sock
        driver.link._sock = _FailingSocket(real)  # e.g. the interface went away
        assert ros.spin_until(lambda: _status(diagnostics)[0] == DiagnosticStatus.ERROR, WAIT_S)
        assert _status(diagnostics)[1] == "cannot receive: receive failing: [Errno 100] " \
                                          "network is down"
        driver.link._sock = real
        assert ros.spin_until(lambda: _status(diagnostics)[0] == DiagnosticStatus.OK, WAIT_S)
        peer.sendto(_raw(3, 2, data=b"again"), ("127.0.0.1", port))
        assert ros.spin_until(lambda: len(received) == 2, WAIT_S)
        assert driver.link.settings.max_reply_queue_length == 5
    peer.close()


def test_a_ping_payload_past_the_micromodem_limit_is_refused_without_sending():
    with RosHarness() as ros:
        driver = ros.add(UdpLinkDriver(context=ros.context, namespace="/pinger",
                                       parameter_overrides=[Parameter("remote_port", value=9)]))
        ros.configure_and_activate(driver)
        client = ros.helper.create_client(PingModem, "/pinger/ping_modem")
        assert ros.wait_for_service(client, WAIT_S)
        response = ros.call(client, PingModem.Request(dest=3, hexdata=bytes(33),
                                                      timeout_sec=1.0), WAIT_S)
        assert response.timed_out and driver.link.counters["pings_sent"] == 0
        assert driver.link.counters["datagrams_sent"] == 0
