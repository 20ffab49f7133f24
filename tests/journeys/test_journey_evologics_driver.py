"""Journey: docs/guide/drivers.md "EvoLogics S2C driver and emulator".

The block's four commands as a user types them (the emulator's --link-dir in this test's own
directory): two emulated S2C modems on ptys, one evologics_driver_node each, the
lifecycle_manager activating both. Then, as the page says, a packet queued on
/ship/queue_tx_packet for dest 2 arrives on /auv/packet_rx, the ship publishes an ack and a
usbl_fix of modem 2. The TCP block the same way (`--tcp-port 0` for the documented 9200, the
drivers on the ports the emulator printed), and its exit summary counts each driver's connection.
"""

from __future__ import annotations

import contextlib
import re

from journey_ros_tools import doc_block
from journey_support import Background, documented

from acomms_core.ros.testing import RosHarness
from acomms_interfaces.msg import ModemAck, Packet, ReceivedPacket, UsblFix
from acomms_interfaces.srv import QueueTxPacket

MARKER = "evologics_emulator --modem 1:0,0,2:usbl --modem 2:400,300,30 --link-dir /tmp/s2c &"
MARKER_TCP = ("evologics_emulator --modem 1:0,0,2:usbl --modem 2:400,300,30 --tcp-port 9200 &")
WAIT_S = 30.0


def _commands(block: str) -> list[str]:
    return [line.split("#", 1)[0].strip().rstrip("&").strip() for line in block.splitlines()
            if line.strip() and not line.startswith("source ")]


def test_emulator_two_drivers_and_a_packet(tmp_path):
    commands = _commands(doc_block(MARKER))
    assert commands[0] == documented(MARKER).rstrip(" &") and len(commands) == 4
    commands = [c.replace("/tmp/s2c", str(tmp_path / "s2c")) for c in commands]
    with contextlib.ExitStack() as stack:
        emulator = stack.enter_context(Background(commands[0], log_path=tmp_path / "emu.log"))
        assert emulator.wait_for_output("(link", 20.0), "the emulator printed no links"
        _packet_ack_and_fix(stack, commands[1:], tmp_path)


def test_emulator_on_tcp_ports_two_drivers_and_a_packet(tmp_path):
    commands = _commands(doc_block(MARKER_TCP))
    assert commands[0] == documented(MARKER_TCP).rstrip(" &") and len(commands) == 4
    with contextlib.ExitStack() as stack:
        emulator = stack.enter_context(Background(
            commands[0].replace("--tcp-port 9200", "--tcp-port 0"), log_path=tmp_path / "emu.log"))
        assert emulator.wait_for_output("address 2: tcp", 20.0), "the emulator printed no ports"
        ports = re.findall(r"address \d+(?: \(usbl\))?: tcp 127\.0\.0\.1:(\d+)",
                           (tmp_path / "emu.log").read_text())
        nodes = [c.replace("9200", ports[0]).replace("9201", ports[1]) for c in commands[1:]]
        assert all("modem_remote_port:=920" in c for c in commands[1:3])
        _packet_ack_and_fix(stack, nodes, tmp_path)
    for port in ports:
        assert re.search(rf"address \d port {port}: connections 1\b", emulator.output), \
            emulator.output


def _packet_ack_and_fix(stack: contextlib.ExitStack, commands: list[str], tmp_path) -> None:
    """Start the drivers and the lifecycle_manager; a packet ship -> auv, its ack, a fix."""
    for index, command in enumerate(commands):
        stack.enter_context(Background(command, log_path=tmp_path / f"node{index}.log"))
    ros = stack.enter_context(RosHarness())
    got = {"rx": [], "ack": [], "usbl": []}
    subscriptions = [
        ros.helper.create_subscription(ReceivedPacket, "/auv/packet_rx", got["rx"].append, 10),
        ros.helper.create_subscription(ModemAck, "/ship/ack", got["ack"].append, 10),
        ros.helper.create_subscription(UsblFix, "/ship/usbl_fix", got["usbl"].append, 10)]
    # The drivers run in other processes: a packet sent before this process has discovered their
    # publishers would be received unseen (volatile topics), so wait for them first.
    assert ros.spin_until(lambda: all(s.get_publisher_count() for s in subscriptions), WAIT_S), \
        "the drivers' packet_rx / ack / usbl_fix publishers were never discovered"
    client = ros.helper.create_client(QueueTxPacket, "/ship/queue_tx_packet")
    request = QueueTxPacket.Request(packet=Packet(dest=2, dataframe_bytes=b"journey"))

    def accepted() -> bool:  # refused until the lifecycle_manager has activated the driver
        try:
            return ros.call(client, request, timeout=3.0).success
        except TimeoutError:
            return False

    assert ros.spin_until(accepted, WAIT_S), "the ship's driver never took the packet"
    assert ros.spin_until(lambda: got["rx"] and got["ack"] and got["usbl"], WAIT_S), got
    assert bytes(got["rx"][0].packet.dataframe_bytes) == b"journey"
    assert got["ack"][0].ack and got["usbl"][0].remote_address == 2
