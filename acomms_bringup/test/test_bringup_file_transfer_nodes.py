"""file_transfer_node: send_file answers success only once the receiver acknowledged every
block; the receiver writes the file into its directory and refuses traversal (issue 15)."""

from __future__ import annotations

import hashlib
import subprocess
import textwrap
from types import SimpleNamespace

from rclpy.parameter import Parameter

from acomms_bringup.file_transfer.file_transfer_node import FileTransferNode
from acomms_core.nodes.message_queue_node import MessageQueueNode
from acomms_core.nodes.packet_dispatch_node import PacketDispatchNode
from acomms_core.ros.testing import RosHarness
from acomms_interfaces.msg import FileTransfer, FragmentationStatus, Packet, ReceivedPacket
from acomms_interfaces.srv import GetNextPacketData, SendFile

CODECS = """\
- codec_name: files
  packet_codec: ros
  miniframe_header: [0xac]
  message_codecs:
    - id: 60
      ros_type: acomms_interfaces/msg/FileTransfer
      subscribe_topic: to_acomms/file
      publish_topic: from_acomms/file
      default_dest: 2
      allow_fragmentation: true
      fragment_always: true
      fields:
        dest: {codec: dest}
        src: {codec: src}
        name: {codec: string, max_length: 64}
        data: {codec: bytes, max_length: 4000}
        sha256: {codec: bytes, max_length: 32}
"""


def _add(ros, cls, namespace, **values):
    node = ros.add(cls(context=ros.context, namespace=namespace,
                       parameter_overrides=[Parameter(k, value=v) for k, v in values.items()]))
    ros.configure_and_activate(node)
    return node


def _relay(ros, client, rx_pub, src) -> None:
    """One packet of this vehicle's queue delivered to the other vehicle's packet_rx."""
    response = ros.call(client, GetNextPacketData.Request(num_miniframe_bytes=72,
                                                          num_dataframe_bytes=192))
    if response.num_messages:
        rx_pub.publish(ReceivedPacket(packet=Packet(
            src=src, dest=response.dest, packet_type=Packet.PACKET_TYPE_FDP,
            miniframe_bytes=response.miniframe_bytes,
            dataframe_bytes=response.dataframe_bytes)))


def test_send_file_succeeds_when_acknowledged_and_receiver_stays_in_its_directory(tmp_path):
    config = tmp_path / "codecs.yaml"
    config.write_text(textwrap.dedent(CODECS))
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    payload = bytes(range(256)) * 3
    (tmp_path / "survey.bin").write_bytes(payload)
    with RosHarness() as ros:
        for index, ns in ((1, "/auv1"), (2, "/auv2")):
            common = {"codec_config_file": str(config), "src": index}
            _add(ros, MessageQueueNode, ns, update_rate=10.0, **common)
            _add(ros, PacketDispatchNode, ns, **common)
        _add(ros, FileTransferNode, "/auv1", send_directories=[str(tmp_path)])
        receiver = _add(ros, FileTransferNode, "/auv2", receive_directory=str(inbox))
        clients = [ros.helper.create_client(GetNextPacketData, f"/auv{i}/get_next_packet_data")
                   for i in (1, 2)]
        rx = [ros.helper.create_publisher(ReceivedPacket, f"/auv{i}/packet_rx", 50)
              for i in (1, 2)]
        send = ros.helper.create_client(SendFile, "/auv1/send_file")
        assert send.wait_for_service(timeout_sec=10.0)
        refused = ros.call(send, SendFile.Request(dest=2, path=str(tmp_path / "missing")))
        assert not refused.success and "missing" in refused.message
        future = send.call_async(SendFile.Request(dest=2, path=str(tmp_path / "survey.bin")))
        for _ in range(40):
            _relay(ros, clients[0], rx[1], 1)
            ros.spin_until(lambda: False, timeout=0.05)
            _relay(ros, clients[1], rx[0], 2)
            if ros.spin_until(future.done, timeout=0.1):
                break
        assert future.done(), receiver.counts
        result = future.result()
        assert result.success and result.blocks > 1, result
        assert (inbox / "survey.bin").read_bytes() == payload
        assert receiver.counts["files_received"] == 1
        evil = ros.helper.create_publisher(FileTransfer, "/auv2/from_acomms/file", 10)
        assert ros.spin_until(lambda: evil.get_subscription_count() > 0, 10.0)
        evil.publish(FileTransfer(name="../escape.bin", data=list(payload),
                                  sha256=list(hashlib.sha256(payload).digest())))
        assert ros.spin_until(lambda: receiver.counts["files_path_refused"] == 1, 10.0)
        assert not (tmp_path / "escape.bin").exists()
        assert sorted(p.name for p in inbox.iterdir()) == ["survey.bin"]
        # the command-line tool: progress, and exit 0 once everything was acknowledged
        (tmp_path / "plan.txt").write_bytes(payload[:500])
        tool = subprocess.Popen(["acomms_send_file", "2", str(tmp_path / "plan.txt"),
                                 "--namespace", "/auv1", "--timeout", "60"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            for _ in range(400):
                _relay(ros, clients[0], rx[1], 1)
                ros.spin_until(lambda: False, timeout=0.05)
                _relay(ros, clients[1], rx[0], 2)
                if ros.spin_until(lambda: tool.poll() is not None, timeout=0.1):
                    break
            out, err = tool.communicate(timeout=30)
        finally:
            tool.kill()
        assert tool.returncode == 0, err
        assert "blocks acknowledged" in out and "sent:" in out
        assert (inbox / "plan.txt").read_bytes() == payload[:500]


SIM_2031 = 1_938_000_000.0   # the queue nodes' simulated clock: 2031, years from the wall clock


class _SimClock:
    """/clock from SIM_2031 on, 0.5 simulated s per step."""

    def __init__(self, ros):
        from rosgraph_msgs.msg import Clock

        self.ros, self.now, self.msg = ros, SIM_2031, Clock
        self.pub = ros.helper.create_publisher(Clock, "/clock", 10)

    def step(self) -> None:
        from acomms_core.ros.ros_support import seconds_to_time_msg

        self.now += 0.5
        self.pub.publish(self.msg(clock=seconds_to_time_msg(self.now)))
        self.ros.spin_until(lambda: False, timeout=0.05)


def _sim_stack(ros, config, inbox):
    """Queue and dispatch nodes on a simulated clock; file_transfer_node on the wall clock."""
    clock = _SimClock(ros)
    for index, ns in ((1, "/auv1"), (2, "/auv2")):
        common = {"codec_config_file": str(config), "src": index, "use_sim_time": True}
        _add(ros, MessageQueueNode, ns, update_rate=10.0, **common)
        _add(ros, PacketDispatchNode, ns, **common)
    for _ in range(10):
        clock.step()
    sender = _add(ros, FileTransferNode, "/auv1", send_directories=[str(inbox.parent)])
    receiver = _add(ros, FileTransferNode, "/auv2", receive_directory=str(inbox))
    return clock, sender, receiver


def test_file_session_found_across_clocks_and_sender_known_without_src_field(tmp_path):
    """main measured: a sim-stamped status compared with the wall clock was never the file's;
    the receiver logged "from 0" with a codec config that has no src field."""
    config = tmp_path / "codecs.yaml"
    config.write_text(textwrap.dedent(CODECS).replace("        src: {codec: src}\n", ""))
    inbox = tmp_path / "inbox"
    payload, other = bytes(range(200)) * 4, bytes(600)
    (tmp_path / "survey.bin").write_bytes(payload)
    heard, progress = [], []
    with RosHarness() as ros:
        clock, sender, receiver = _sim_stack(ros, config, inbox)
        ros.helper.create_subscription(FileTransfer, "/auv2/from_acomms/file", heard.append, 10)
        ros.helper.create_subscription(FragmentationStatus, "/auv1/send_file_progress",
                                       progress.append, 50)
        older = ros.helper.create_publisher(FileTransfer, "/auv1/to_acomms/file", 10)
        assert ros.spin_until(lambda: older.get_subscription_count() > 0, 10.0)
        older.publish(FileTransfer(dest=2, name="older.bin", data=list(other),
                                   sha256=list(hashlib.sha256(other).digest())))
        for _ in range(100):                                 # heard open, to dest 2
            clock.step()
            if sender._sessions.open:
                break
        assert sender._sessions.open, sender.counts
        older_key = next(iter(sender._sessions.open))
        send = ros.helper.create_client(SendFile, "/auv1/send_file")
        assert send.wait_for_service(timeout_sec=10.0)
        future = send.call_async(SendFile.Request(dest=2, path=str(tmp_path / "survey.bin")))
        clients = [ros.helper.create_client(GetNextPacketData, f"/auv{i}/get_next_packet_data")
                   for i in (1, 2)]
        rx = [ros.helper.create_publisher(ReceivedPacket, f"/auv{i}/packet_rx", 50)
              for i in (1, 2)]
        for _ in range(80):
            clock.step()
            _relay(ros, clients[0], rx[1], 1)
            ros.spin_until(lambda: False, timeout=0.05)
            _relay(ros, clients[1], rx[0], 2)
            if ros.spin_until(future.done, timeout=0.1):
                break
        assert future.done() and future.result().success, (sender.counts, receiver.counts)
        assert ros.spin_until(lambda: len(heard) == 2, 10.0)
    assert (inbox / "survey.bin").read_bytes() == payload
    assert {msg.src for msg in heard} == {1}                 # the packet's SRC, not 0
    sessions = {(s.sequence_num, s.unix_time) for s in progress}
    assert len(sessions) == 1 and older_key.session_id not in {s for s, _ in sessions}
    assert 0 <= progress[0].unix_time - SIM_2031 < 100       # the simulated clock's session
    assert progress[-1].state == FragmentationStatus.STATE_COMPLETED
    assert future.result().blocks == progress[-1].payload_size_blocks


def test_a_failed_send_then_a_successful_one_are_both_logged(tmp_path):
    """rclpy refuses a logging call site whose severity changes between calls; the outcome line
    of a failed transfer and of a later successful one must both be logged without raising."""
    with RosHarness() as ros:
        node = _add(ros, FileTransferNode, "/auv1", receive_directory=str(tmp_path))
        for success in (False, True, False):
            node._transfer = SimpleNamespace(dest=2, response=SendFile.Response())
            node._finish(success, "outcome")   # raised "Logger severity cannot be changed"
            assert node._transfer is None
