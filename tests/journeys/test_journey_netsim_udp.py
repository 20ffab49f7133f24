"""Journey: README "Seed bridges II: netsim and narrow UDP links".

netsim: the README's three commands (netsim_manager, netsim_client_node, acomms_driver_node),
then configure + activate through the lifecycle services from rclpy as the README says: the
manager accepts the client's position report (UPDATE_ACCEPTED) and the driver's handshake with
the emulated Micromodem behind port 62000 completes. UDP: two `udp_link_driver` ends pointed at
each other carry a packet from one `queue_tx_packet` to the other `packet_rx`.
"""

from __future__ import annotations

import socket
import time

from journey_ros_tools import configure_and_activate, doc_block, free_port
from journey_support import Background, documented
from sensor_msgs.msg import NavSatFix
from std_msgs.msg import Int32

from acomms_core.ros.testing import RosHarness
from acomms_interfaces.msg import Packet, ReceivedPacket
from acomms_interfaces.srv import QueryModemSrc, QueueTxPacket

NETSIM_MANAGER = "netsim_manager --config acomms_sim/config/netsim_manager.yaml &"


def _commands(block: str) -> list[str]:
    """The block's commands: continuation lines joined, comments and trailing `&` dropped."""
    joined = block.replace("\\\n", " ")
    commands = []
    for line in joined.splitlines():
        command = line.split("#", 1)[0].strip().rstrip("&").strip()
        if command:
            commands.append(" ".join(command.split()))
    return commands


def _port_open(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


def test_netsim_manager_client_and_driver(tmp_path):
    manager_cmd, client_cmd, driver_cmd = _commands(doc_block(NETSIM_MANAGER))
    assert manager_cmd == documented(NETSIM_MANAGER).rstrip(" &")
    assert not _port_open(61999), "something else holds netsim's manager port 61999"
    with Background(manager_cmd, log_path=tmp_path / "manager.log") as manager:
        deadline = time.monotonic() + 20.0
        while not _port_open(62000) and manager.process.poll() is None:
            assert time.monotonic() < deadline, "netsim_manager does not serve modem port 62000"
            time.sleep(0.2)
        with Background(client_cmd, log_path=tmp_path / "client.log") as client, \
                Background(driver_cmd, log_path=tmp_path / "driver.log") as driver, \
                RosHarness() as ros:
            statuses = []
            ros.helper.create_subscription(Int32, "/netsim_response_status",
                                           lambda m: statuses.append(m.data), 10)
            configure_and_activate(ros, "/netsim_client_node")
            configure_and_activate(ros, "/acomms_driver_node")
            fix_pub = ros.helper.create_publisher(NavSatFix, "/fix", 10)
            assert ros.spin_until(lambda: fix_pub.publish(NavSatFix(
                latitude=41.5, longitude=-70.6, altitude=-10.0)) or 1 in statuses, 20.0), (
                statuses, client.stop() or client.output[-2000:])
            # outside env_bounds (latitude 41..42): "answers status 1-4 as netsim does"
            assert ros.spin_until(lambda: fix_pub.publish(NavSatFix(
                latitude=45.0, longitude=-70.6, altitude=-10.0)) or 4 in statuses, 20.0), (
                statuses)
            query = ros.helper.create_client(QueryModemSrc, "/query_modem_src")
            deadline = time.monotonic() + 20.0
            while (src := ros.call(query, QueryModemSrc.Request()).src) == -1:
                assert time.monotonic() < deadline, driver.stop() or driver.output[-2000:]
                ros.spin_for(0.5)
            assert src == 1   # the emulated modem behind 62000 (sim_env_pair src 1)
        assert "UPDATE_ACCEPTED" in client.output, client.output[-2000:]   # its log lines
        assert "OUT_OF_DEFINED_REGION" in client.output, client.output[-2000:]
        for process in (client, driver):   # Ctrl-C: status 0, no traceback
            assert process.process.returncode == 0, process.output[-3000:]
            assert "Traceback" not in process.output, process.output[-3000:]
    assert manager.process.returncode == 0, manager.output[-2000:]
    # "Refused and dropped clients are counted in the exit summary" (with the modem ports')
    assert "'connections': " in manager.output and "modem_src_1_connections" in manager.output, \
        manager.output[-2000:]
    # "each on its configured TCP port (62000-62003 in the example)"
    assert [f"modem SRC {src} on tcp port {62000 + src - 1}" in manager.output
            for src in (1, 2, 3, 4)] == [True] * 4, manager.output[-2000:]


def test_udp_link_drivers_carry_a_packet(tmp_path):
    documented("`udp_link_driver`")
    port_a, port_b = free_port(socket.SOCK_DGRAM), free_port(socket.SOCK_DGRAM)
    ends = {"/a": (1, port_a, port_b), "/b": (2, port_b, port_a)}
    drivers = [Background(f"udp_link_driver --ros-args -r __ns:={ns} -p SRC:={src} "
                          f"-p local_port:={local} -p remote_port:={remote} "
                          "-p link_rate_bps:=9600.0", log_path=tmp_path / f"{ns[1:]}.log")
               for ns, (src, local, remote) in ends.items()]
    try:
        with RosHarness() as ros:
            received = []
            ros.helper.create_subscription(ReceivedPacket, "/b/packet_rx", received.append, 10)
            # README: a lifecycle node nobody configures says so once, 3 s after start
            for driver in drivers:   # both (a loaded machine may start one seconds later)
                assert driver.wait_for_output("unconfigured: waiting for a lifecycle manager",
                                              20.0), driver.stop() or driver.output
            for ns in ends:
                configure_and_activate(ros, f"{ns}/udp_link_driver")
            request = QueueTxPacket.Request()
            request.packet.src, request.packet.dest = 1, 2
            request.packet.packet_type = Packet.PACKET_TYPE_FDP
            request.packet.miniframe_rate = request.packet.dataframe_rate = 1
            request.packet.miniframe_bytes = list(b"journey")
            request.packet.dataframe_bytes = list(range(64))
            answer = ros.call(ros.helper.create_client(QueueTxPacket, "/a/queue_tx_packet"),
                              request, timeout=20.0)
            assert answer.success, drivers[0].stop() or drivers[0].output[-1500:]
            assert ros.spin_until(lambda: bool(received), timeout=20.0)
            packet = received[0].packet
            assert (packet.src, bytes(packet.miniframe_bytes), list(packet.dataframe_bytes)) == (
                1, b"journey", list(range(64)))
            assert received[0].cst.snr_in == 30.0   # docs: a configured nominal SNR
    finally:
        for driver in drivers:
            driver.stop()
    for driver in drivers:
        assert driver.process.returncode == 0, driver.output[-2000:]
        assert driver.output.count("unconfigured: waiting for a lifecycle manager") == 1
        assert "Traceback" not in driver.output, driver.output[-3000:]
