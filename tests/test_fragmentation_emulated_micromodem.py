"""A fragmented message over two emulated Micromodems (issue 15): queue and dispatch nodes on
acomms_driver_node + micromodem_emulator (SimChannelBackend); the test link plays the MACs
(get_next_packet_data -> queue_tx_packet, taking turns). Acks cross the modems too."""

from __future__ import annotations

import textwrap

from rclpy.parameter import Parameter
from std_msgs.msg import String

from acomms_core.nodes.message_queue_node import MessageQueueNode
from acomms_core.nodes.packet_dispatch_node import PacketDispatchNode
from acomms_core.ros.testing import RosHarness
from acomms_driver.nodes.acomms_driver_node import AcommsDriverNode
from acomms_interfaces.msg import FragmentationStatus, Packet, ReceivedPacket
from acomms_interfaces.srv import GetNextPacketData, QueueTxPacket
from acomms_sim.emulator.micromodem_emulator import EmulatorNetwork
from acomms_sim.physics.geodesy import offset_position

SRCS = {"a": 1, "b": 2}
CODECS = """\
- codec_name: big
  packet_codec: ros
  miniframe_header: [0xac]
  message_codecs:
    - id: 50
      ros_type: std_msgs/msg/String
      subscribe_topic: to_acomms/report
      publish_topic: from_acomms/report
      default_dest: 2
      allow_fragmentation: true
      fragment_always: true
      checksum: crc32
      fields: {data: {codec: string, max_length: 2000}}
"""
TEXT = "".join(f"survey line {i:03d} complete; " for i in range(30))   # ~800 bytes


def _node(ros, cls, name, config, **values):
    overrides = [Parameter(k, value=v) for k, v in
                 {"codec_config_file": config, "src": SRCS[name], **values}.items()]
    node = ros.add(cls(context=ros.context, namespace=f"/{name}", parameter_overrides=overrides))
    ros.configure_and_activate(node)
    return node


def test_fragments_and_acks_cross_emulated_micromodems(tmp_path):
    config = tmp_path / "codecs.yaml"
    config.write_text(textwrap.dedent(CODECS))
    modems = []
    for src in SRCS.values():
        lat, lon = offset_position(41.5, -70.6, 500.0 * (src - 1), 0.0)
        modems.append({"src": src, "latitude": lat, "longitude": lon, "depth": 10.0,
                       "tcp_port": 0})
    network = EmulatorNetwork({"channel": {"sound_speed_mps": 1500.0, "ambient_noise_db": 50.0,
                                           "seed": 3}, "modems": modems}, airtime_scale=0.02)
    try:
        with RosHarness() as ros:
            drivers = {}
            for name, server in zip(SRCS, network.servers, strict=True):
                values = {"modem_connection_type": "tcp", "modem_remote_host": "127.0.0.1",
                          "modem_remote_port": server.port,
                          "modem_log_dir": str(tmp_path / name), "reconnect_initial_s": 0.1}
                drivers[name] = ros.add(AcommsDriverNode(
                    context=ros.context, namespace=f"/{name}",
                    parameter_overrides=[Parameter(k, value=v) for k, v in values.items()]))
                ros.configure_and_activate(drivers[name])
            assert ros.spin_until(lambda: all(d.client.connected for d in drivers.values()),
                                  10.0), "drivers never connected"
            for name in SRCS:
                _node(ros, MessageQueueNode, name, str(config), update_rate=10.0)
                _node(ros, PacketDispatchNode, name, str(config))
            inbox, statuses, heard = [], [], {n: [] for n in SRCS}
            for name in SRCS:
                ros.helper.create_subscription(ReceivedPacket, f"/{name}/packet_rx",
                                               heard[name].append, 10)
            ros.helper.create_subscription(String, "/b/from_acomms/report", inbox.append, 10)
            ros.helper.create_subscription(FragmentationStatus, "/a/fragmentation_status",
                                           statuses.append, 50)
            pub = ros.helper.create_publisher(String, "/a/to_acomms/report", 10)
            assert ros.spin_until(lambda: pub.get_subscription_count() > 0, 10.0)
            pub.publish(String(data=TEXT))
            clients = {n: (ros.helper.create_client(GetNextPacketData,
                                                    f"/{n}/get_next_packet_data"),
                           ros.helper.create_client(QueueTxPacket, f"/{n}/queue_tx_packet"))
                       for n in SRCS}

            def completed() -> bool:
                return any(s.state == FragmentationStatus.STATE_COMPLETED for s in statuses)

            for _ in range(12):
                for name, other in (("a", "b"), ("b", "a")):
                    before = len(heard[other])
                    if _send_one(ros, *clients[name]):   # on the air, then received
                        ros.spin_until(lambda o=other, n=before: len(heard[o]) > n, 3.0)
                if ros.spin_until(completed, timeout=0.2):
                    break
            assert completed(), [(s.acked_blocks, s.payload_size_blocks) for s in statuses]
            assert ros.spin_until(lambda: inbox, 5.0)
            assert [m.data for m in inbox] == [TEXT]
    finally:
        network.close()


def _send_one(ros, queue_client, modem_client) -> bool:
    """One packet from this vehicle's queue through its modem (rate 1 FDP), as a MAC would."""
    data = ros.call(queue_client, GetNextPacketData.Request(num_miniframe_bytes=32,
                                                            num_dataframe_bytes=192))
    if data.num_messages == 0:
        return False
    packet = Packet(dest=data.dest, packet_type=Packet.PACKET_TYPE_FDP, miniframe_rate=1,
                    dataframe_rate=1, miniframe_bytes=data.miniframe_bytes,
                    dataframe_bytes=data.dataframe_bytes)
    response = ros.call(modem_client, QueueTxPacket.Request(
        queue=QueueTxPacket.Request.QUEUE_IMMEDIATE, packet=packet))
    assert response.success
    return True
