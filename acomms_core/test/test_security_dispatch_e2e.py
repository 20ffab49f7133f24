"""Through the ROS interfaces: queue (SRC 1) -> direct packet -> dispatch of another vehicle.

The issue's attack: a rogue modem puts "ABORT: SURFACE NOW" on the channel claiming SRC 3, and a
recorded packet is replayed. With an authenticated packet codec neither is published; both are
counted on dispatch_status. A valid packet is published exactly once.
"""

from __future__ import annotations

import core_ros_helpers as helpers
import yaml
from lifecycle_msgs.msg import State
from rclpy.lifecycle import TransitionCallbackReturn
from rclpy.parameter import Parameter
from security_support import (
    KEY_1,
    ROGUE_KEY,
    seal,
    secured_codec,
    secured_entry,
    unwritable_dir,
    write_key_file,
)
from std_msgs.msg import String, UInt8

from acomms_core.nodes.message_queue_node import MessageQueueNode
from acomms_core.ros.testing import RosHarness
from acomms_core.security.state import forget_sender_counters
from acomms_interfaces.msg import DispatchStatus, ReceivedPacket
from acomms_interfaces.srv import GetNextPacketData

ABORT = "ABORT: SURFACE NOW"


def _config(tmp_path, key_file) -> str:
    plain = {"codec_name": "telemetry", "miniframe_header": [0xAC], "message_codecs": [
        {"id": 20, "ros_type": "std_msgs/UInt8", "publish_topic": "depth_cm", "accept_src": [1],
         "fields": {"data": {"codec": "uint8"}}}]}
    path = tmp_path / "codecs.yaml"
    path.write_text(yaml.safe_dump([secured_entry(key_file), plain]))
    return str(path)


def test_forged_and_replayed_packets_are_counted_never_published(tmp_path):
    forget_sender_counters()
    key_file = write_key_file(tmp_path / "fleet.keys", [(1, KEY_1, None)])
    config = _config(tmp_path, key_file)
    state = str(tmp_path / "state")
    with RosHarness() as ros:
        sender = helpers.queue_node(ros, "/auv1", config, src=1, security_state_dir=state,
                                    security_fresh_key_ids=[1], default_dest=9)
        helpers.dispatch_node(ros, "/auv2", config, security_state_dir=state)
        commands = helpers.collector(ros, String, "/auv2/command")
        depth = helpers.collector(ros, UInt8, "/auv2/depth_cm")
        status = helpers.collector(ros, DispatchStatus, "/auv2/dispatch_status")
        rx = helpers.publisher(ros, ReceivedPacket, "/auv2/packet_rx")
        helpers.publisher(ros, String, "/auv1/command_out").publish(String(data=ABORT))
        assert ros.spin_until(lambda: sender.queues.counts.messages_queued == 1, 10.0)
        client = ros.helper.create_client(GetNextPacketData, "/auv1/get_next_packet_data")
        response = helpers.request(client, ros, mini=40, data=0)
        assert response.num_messages == 1 and response.miniframe_bytes[0] == 0xA5
        packet_rx = helpers.received_packet
        assert response.dest == 9
        valid = packet_rx(1, 9, response.miniframe_bytes, response.dataframe_bytes)
        readdressed = packet_rx(1, 12, response.miniframe_bytes, response.dataframe_bytes)

        # the rogue knows the format and the key id, not the key
        rogue_keys = write_key_file(tmp_path / "rogue.keys", [(1, ROGUE_KEY, None)])
        rogue, _ = secured_codec(rogue_keys, src=3, state_dir=tmp_path / "rogue")
        forged = packet_rx(3, 2, *seal(rogue, [(5, String(data=ABORT))]))
        relabelled = packet_rx(3, 9, response.miniframe_bytes, response.dataframe_bytes)
        sent = [forged, relabelled, readdressed, valid, valid,
                packet_rx(3, 2, [0xAC, 20, 7], []), packet_rx(1, 2, [0xAC, 20, 8], [])]
        for count, packet in enumerate(sent, start=1):
            rx.publish(packet)
            assert ros.spin_until(lambda n=count: len(status) >= n, 10.0)
        last = status[-1]
        # forged, relabelled and re-addressed (dest 9 -> 12) fail; the valid one is accepted
        # once (its counter was not marked seen by the re-addressed copy)
        assert (last.auth_failed, last.packets_authenticated, last.auth_replayed) == (3, 1, 1)
        assert last.source_refused == 1 and last.packets_received == 7
        assert ros.spin_until(lambda: commands and depth, 5.0)
        ros.spin_for(0.3)
        assert [m.data for m in commands] == [ABORT]   # published once: not forged, not replayed
        assert [m.data for m in depth] == [8]          # accept_src [1]: SRC 3's plaintext refused


def test_queue_refuses_to_configure_an_authenticated_codec_without_its_src(tmp_path):
    key_file = write_key_file(tmp_path / "fleet.keys", [(1, KEY_1, None)])
    config = _config(tmp_path, key_file)
    with RosHarness() as ros:
        node = ros.add(MessageQueueNode(
            context=ros.context, namespace="/auv9", parameter_overrides=[
                Parameter("codec_config_file", value=config),
                Parameter("security_state_dir", value=str(tmp_path / "s"))]))
        assert node.trigger_configure() == TransitionCallbackReturn.FAILURE
        assert node._state_machine.current_state[0] == State.PRIMARY_STATE_UNCONFIGURED


def test_nodes_refuse_an_unwritable_state_dir_and_a_lost_counter_state_with_the_reason(
        tmp_path):
    """main accepted both at configure; the queue then failed every get_next_packet_data."""
    from acomms_core.nodes.packet_dispatch_node import PacketDispatchNode

    forget_sender_counters()
    config = _config(tmp_path, write_key_file(tmp_path / "fleet.keys", [(1, KEY_1, None)]))
    cases = [(MessageQueueNode, {"src": 1, "security_fresh_key_ids": [1],
                                 "security_state_dir": unwritable_dir(tmp_path)}, "not writable"),
             (PacketDispatchNode, {"security_state_dir": unwritable_dir(tmp_path)},
              "not writable"),
             (MessageQueueNode, {"src": 1, "security_state_dir": str(tmp_path / "lost")},
              "security_fresh_key_ids")]
    with RosHarness() as ros:
        for index, (cls, values, reason) in enumerate(cases):
            node = ros.add(cls(context=ros.context, namespace=f"/v{index}", parameter_overrides=[
                Parameter("codec_config_file", value=config)]
                + [Parameter(k, value=v) for k, v in values.items()]))
            logged = []
            node.get_logger().error = logged.append
            assert node.trigger_configure() == TransitionCallbackReturn.FAILURE
            assert len(logged) == 1 and "configure refused" in logged[0], logged
            assert reason in logged[0], logged
