"""Fragment sessions through message_queue_node and packet_dispatch_node over ROS (issue 15).

Two vehicles in one process; the test link stands in for MAC + modems and drops every third
packet of the sender. The large message must come out of the receiver's dispatch node once and
equal; acks travel back through the receiver's queue; counters and statuses are published.
"""

from __future__ import annotations

from core_ros_helpers import collector, dispatch_node, publisher, queue_node, received_packet
from fragmentation_support import text_of, write_config
from std_msgs.msg import String

from acomms_core.ros.testing import RosHarness
from acomms_interfaces.msg import (
    DispatchStatus,
    EncodedAck,
    FragmentationStatus,
    QueueCounters,
    ReceivedPacket,
)
from acomms_interfaces.srv import GetNextPacketData


def _carry(ros, client, rx, src, keep) -> bool:
    response = ros.call(client, GetNextPacketData.Request(num_miniframe_bytes=72,
                                                          num_dataframe_bytes=192))
    if response.num_messages == 0:
        return False
    if keep:
        rx.publish(received_packet(src, response.dest, response.miniframe_bytes,
                                   response.dataframe_bytes))
    return True


def test_large_message_crosses_two_stacks_with_losses(tmp_path):
    config = write_config(tmp_path)
    text = text_of(2500, 5)     # 2188 bytes: more than max_packet_bytes
    with RosHarness() as ros:
        queue_a = queue_node(ros, "/auv1", config, src=1, update_rate=20.0)
        dispatch_node(ros, "/auv1", config, src=1)
        queue_node(ros, "/auv2", config, src=2)
        dispatch_b = dispatch_node(ros, "/auv2", config, src=2)
        inbox = collector(ros, String, "/auv2/from_acomms/blob")
        acks = collector(ros, EncodedAck, "/auv2/fragment_acks_out")
        statuses = collector(ros, FragmentationStatus, "/auv1/fragmentation_status")
        incoming = collector(ros, FragmentationStatus, "/auv2/fragmentation_status")
        dispatch_status = collector(ros, DispatchStatus, "/auv2/dispatch_status")
        counters = collector(ros, QueueCounters, "/auv1/queue_counters")
        clients = [ros.helper.create_client(GetNextPacketData, f"/auv{i}/get_next_packet_data")
                   for i in (1, 2)]
        rx = [publisher(ros, ReceivedPacket, f"/auv{i}/packet_rx") for i in (1, 2)]
        publisher(ros, String, "/auv1/blob").publish(String(data=text))
        assert ros.spin_until(lambda: queue_a.queues.counts.messages_queued == 1, 10.0)
        sent = 0
        for _ in range(60):
            if _carry(ros, clients[0], rx[1], 1, keep=sent % 3 != 1):
                sent += 1
            ros.spin_until(lambda: False, timeout=0.05)
            _carry(ros, clients[1], rx[0], 2, keep=True)
            done = ros.spin_until(lambda: any(s.state == FragmentationStatus.STATE_COMPLETED
                                              for s in statuses), timeout=0.1)
            if done:
                break
        assert done, (sent, dict(queue_a.queues.fragmentation.counters()))
        assert ros.spin_until(lambda: inbox, 5.0)
        assert [m.data for m in inbox] == [text]
        assert acks and all(a.dest == 1 for a in acks)
        assert any(not s.outgoing for s in incoming)
        assert ros.spin_until(lambda: counters and counters[-1].fragment_sessions_completed == 1,
                              5.0)
        assert counters[-1].fragment_blocks_resent > 0
        assert dispatch_status[-1].fragment_messages_reassembled == 1
        assert dispatch_b.fragmentation.receiver.counts["reassembly_failures"] == 0
