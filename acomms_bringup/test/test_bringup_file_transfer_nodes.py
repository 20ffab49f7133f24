"""file_transfer_node: send_file answers success only once the receiver acknowledged every
block; the receiver writes the file into its directory and refuses traversal (issue 15)."""

from __future__ import annotations

import hashlib
import subprocess
import textwrap

from rclpy.parameter import Parameter

from acomms_bringup.file_transfer.file_transfer_node import FileTransferNode
from acomms_core.nodes.message_queue_node import MessageQueueNode
from acomms_core.nodes.packet_dispatch_node import PacketDispatchNode
from acomms_core.ros.testing import RosHarness
from acomms_interfaces.msg import FileTransfer, Packet, ReceivedPacket
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
        _add(ros, FileTransferNode, "/auv1")
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
