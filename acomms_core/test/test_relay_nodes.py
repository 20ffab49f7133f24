"""Relaying (issue 32) through the ROS interfaces: topside queue (SRC 3) -> packet heard by the
gateway's queue node (SRC 2, relay routes 1:1) -> forwarded packet from its
get_next_packet_data -> the AUV's dispatch publishes the command once, from SRC 3, though it
got both the direct and the relayed copy; relay counters on relay_status and /diagnostics."""

from __future__ import annotations

import core_ros_helpers as helpers
import yaml
from diagnostic_msgs.msg import DiagnosticArray
from std_msgs.msg import String

from acomms_core.ros.testing import RosHarness
from acomms_interfaces.msg import ReceivedPacket
from acomms_interfaces.srv import GetNextPacketData

CODECS = [{"codec_name": "relayed", "miniframe_header": [0xA7], "relayable": True,
           "relay_hop_limit": 2, "message_codecs": [
               {"id": 3, "ros_type": "std_msgs/String", "subscribe_topic": "command_out",
                "publish_topic": "command", "default_dest": 1, "priority": 50,
                "fields": {"data": {"codec": "string", "max_length": 32}}}]},
          {"codec_name": "plain", "miniframe_header": [0xAC], "message_codecs": [
              {"id": 9, "ros_type": "std_msgs/String", "subscribe_topic": "note_out",
               "publish_topic": "note", "default_dest": 1, "priority": 10,
               "fields": {"data": {"codec": "string", "max_length": 32}}}]}]


def _counters(diagnostics: DiagnosticArray) -> dict:
    (status,) = diagnostics.status
    return {kv.key: int(kv.value) for kv in status.values}


def test_gateway_forwards_and_the_auv_publishes_each_command_once(tmp_path):
    config = tmp_path / "codecs.yaml"
    config.write_text(yaml.safe_dump(CODECS))
    with RosHarness() as ros:
        topside = helpers.queue_node(ros, "/topside", str(config), src=3)
        gateway = helpers.queue_node(ros, "/gateway", str(config), src=2, relay_enabled=True,
                                     relay_routes=["1:1"], relay_priority=5)
        helpers.dispatch_node(ros, "/auv", str(config))
        commands = helpers.collector(ros, String, "/auv/command")
        relay_status = helpers.collector(ros, DiagnosticArray, "/gateway/relay_status")
        diagnostics = helpers.collector(ros, DiagnosticArray, "/diagnostics")
        gateway_rx = helpers.publisher(ros, ReceivedPacket, "/gateway/packet_rx")
        auv_rx = helpers.publisher(ros, ReceivedPacket, "/auv/packet_rx")
        helpers.publisher(ros, String, "/topside/command_out").publish(String(data="leg 2"))
        helpers.publisher(ros, String, "/gateway/note_out").publish(String(data="own"))
        assert ros.spin_until(lambda: topside.queues.counts.messages_queued == 1
                              and gateway.queues.counts.messages_queued == 1, 10.0)
        top_client = ros.helper.create_client(GetNextPacketData, "/topside/get_next_packet_data")
        sent = helpers.request(top_client, ros, mini=32, data=0)
        assert sent.num_messages == 1 and sent.dest == 1
        heard = helpers.received_packet(3, 1, sent.miniframe_bytes, sent.dataframe_bytes)
        n = len(sent.miniframe_bytes)
        gateway_rx.publish(helpers.received_packet(3, 1, sent.miniframe_bytes,
                                                   sent.dataframe_bytes, [0, n - 1]))
        gateway_rx.publish(heard)
        gateway_rx.publish(heard)        # heard twice (e.g. a multipath copy): one forward
        assert ros.spin_until(lambda: len(relay_status) >= 3, 10.0)
        counts = _counters(relay_status[-1])
        assert (counts["relayed"], counts["duplicates_dropped"], counts["relay_backlog"],
                counts["partial_not_relayed"]) == (1, 1, 1, 1)
        assert any(s.name.endswith("relay") for d in diagnostics for s in d.status)

        gw_client = ros.helper.create_client(GetNextPacketData, "/gateway/get_next_packet_data")
        own = helpers.request(gw_client, ros, mini=32, data=0)   # priority 10 > relay's 5
        assert own.num_messages == 1 and bytes(own.miniframe_bytes)[0] == 0xAC
        forwarded = helpers.request(gw_client, ros, mini=32, data=0)
        assert forwarded.dest == 1 and forwarded.num_messages == 1
        assert bytes(forwarded.miniframe_bytes)[:5] == bytes([0xA7, 0x11, 3, 1, 0])
        assert bytes(forwarded.miniframe_bytes)[5:] == bytes(sent.miniframe_bytes)[5:]

        auv_rx.publish(heard)                                   # the direct copy
        auv_rx.publish(helpers.received_packet(2, 1, forwarded.miniframe_bytes,
                                               forwarded.dataframe_bytes))
        assert ros.spin_until(lambda: commands, 10.0)
        assert ros.spin_until(lambda: any(s.name.endswith("relay receiver")
                                          for d in diagnostics for s in d.status), 10.0)
        ros.spin_for(0.3)
        assert [m.data for m in commands] == ["leg 2"]


def test_relay_refuses_bad_routes_and_needs_src(tmp_path):
    config = tmp_path / "codecs.yaml"
    config.write_text(yaml.safe_dump(CODECS))
    with RosHarness() as ros:
        try:
            helpers.queue_node(ros, "/g", str(config), src=2, relay_enabled=True,
                               relay_routes=["1-1"])
        except ValueError as exc:
            assert "dest:next_hop" in str(exc)
        else:
            raise AssertionError("a bad route was accepted")
