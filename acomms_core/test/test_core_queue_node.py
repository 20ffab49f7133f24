"""message_queue_node through its ROS interface: topics, services, parameters, lifecycle."""

from __future__ import annotations

import pytest
from core_ros_helpers import collector, publisher, queue_node, request
from core_samples import EXAMPLE_CONFIG
from lifecycle_msgs.msg import State
from rclpy.lifecycle import TransitionCallbackReturn
from rclpy.parameter import Parameter
from std_msgs.msg import String, UInt8

from acomms_core.codecs import load_codec_config
from acomms_core.nodes.message_queue_node import MessageQueueNode
from acomms_core.ros.testing import RosHarness
from acomms_interfaces.msg import NeighborReachability, QueueCounters, QueueStatus
from acomms_interfaces.srv import GetNextPacketData, PriorityUpdate, QueueActive

NS = "/auv1"
CONFIG = load_codec_config(EXAMPLE_CONFIG)


def _decode(response):
    packet = CONFIG.packet_codecs[0]
    result = packet.packet_codec.decode(bytes(response.miniframe_bytes),
                                        bytes(response.dataframe_bytes), packet.codecs_by_id())
    return [(i, m.data) for i, m in result.messages]


@pytest.fixture
def ros():
    with RosHarness() as harness:
        yield harness


@pytest.fixture
def node(ros):
    return queue_node(ros, NS, EXAMPLE_CONFIG, default_dest=7)


def _client(ros, srv, name):
    return ros.helper.create_client(srv, f"{NS}/{name}")


def _queue(ros, node, topic, msg_type, values, count_before=None):
    pub = publisher(ros, msg_type, f"{NS}/{topic}")
    target = (count_before or 0) + len(values)
    for value in values:
        pub.publish(msg_type(data=value))
    assert ros.spin_until(lambda: node.queues.counts.messages_received >= target, timeout=10.0)


def test_bad_config_refuses_configure_with_a_reason(ros, tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("- codec_name: x\n  message_codecs:\n    - {id: 1, ros_type: std_msgs/Nope}\n")
    for path in (str(bad), ""):
        node = ros.add(MessageQueueNode(context=ros.context, namespace=NS,
                                        parameter_overrides=[Parameter("codec_config_file",
                                                                       value=path)]))
        assert node.trigger_configure() == TransitionCallbackReturn.FAILURE
        assert node._state_machine.current_state[0] == State.PRIMARY_STATE_UNCONFIGURED


def test_packs_highest_priority_first_several_per_packet(ros, node):
    _queue(ros, node, "to_acomms/status_byte", UInt8, [1, 2, 3])       # priority 10, fifo
    _queue(ros, node, "to_acomms/command", String, ["go", "stop"], 3)  # priority 60, fifo
    client = _client(ros, GetNextPacketData, "get_next_packet_data")
    response = request(client, ros, mini=72, data=0)
    assert response.num_messages == 5 and response.dest == 121  # the config's default_dest
    assert _decode(response) == [(104, "go"), (104, "stop"), (105, 1), (105, 2), (105, 3)]
    assert response.num_miniframe_bytes == len(response.miniframe_bytes) <= 72
    assert len(response.queued_message_ids) == 5
    assert request(client, ros).num_messages == 0  # emptied, never an error


def test_budget_minimum_priority_tags_and_dest_filters(ros, node):
    _queue(ros, node, "to_acomms/status_byte", UInt8, [9])
    _queue(ros, node, "to_acomms/command", String, ["abcdefghij"], 1)
    client = _client(ros, GetNextPacketData, "get_next_packet_data")
    assert request(client, ros, mini=3, minimum_priority=20).num_messages == 0
    assert request(client, ros, mini=72, exclude_tags=["command"],
                   match_dest=True, dest=8).num_messages == 0
    response = request(client, ros, mini=3)  # the string does not fit 3 bytes; the byte does
    assert _decode(response) == [(105, 9)]
    response = request(client, ros, mini=72, require_tags=["command"], match_dest=True, dest=121)
    assert _decode(response) == [(104, "abcdefghij")]


def test_concurrent_callers_are_all_served(ros, node):
    values = list(range(10))
    _queue(ros, node, "to_acomms/status_byte", UInt8, values)
    clients = [_client(ros, GetNextPacketData, "get_next_packet_data") for _ in range(5)]
    for client in clients:
        assert client.wait_for_service(timeout_sec=5.0)
    futures = [client.call_async(GetNextPacketData.Request(num_miniframe_bytes=3))
               for client in clients for _ in range(3)]
    assert ros.spin_until(lambda: all(f.done() for f in futures), timeout=10.0)
    packed = [v for f in futures for _, v in _decode(f.result())]
    assert sorted(packed) == values  # every message exactly once, no caller refused
    assert node.queues.counts.packet_requests == 15


def test_priority_update_and_queue_active_services(ros, node):
    _queue(ros, node, "to_acomms/status_byte", UInt8, [5])
    _queue(ros, node, "to_acomms/command", String, ["hi"], 1)
    priority = _client(ros, PriorityUpdate, "priority_update")
    active = _client(ros, QueueActive, "queue_active")
    assert ros.call(priority, PriorityUpdate.Request(topic_name="to_acomms/status_byte",
                                                     priority_desired=99)).response
    assert not ros.call(priority, PriorityUpdate.Request(topic_name="nope",
                                                         priority_desired=1)).response
    client = _client(ros, GetNextPacketData, "get_next_packet_data")
    assert _decode(request(client, ros, mini=3)) == [(105, 5)]
    assert ros.call(active, QueueActive.Request(topic_name="to_acomms/command",
                                                set_active=False)).success
    assert request(client, ros).num_messages == 0
    ros.call(active, QueueActive.Request(topic_name="to_acomms/command", set_active=True))
    assert _decode(request(client, ros)) == [(104, "hi")]


def test_status_counters_and_reachability(ros, node):
    statuses = collector(ros, QueueStatus, f"{NS}/queue_status")
    counters = collector(ros, QueueCounters, f"{NS}/queue_counters")
    node.set_parameters([Parameter("update_rate", value=20.0)])
    _queue(ros, node, "to_acomms/status_byte", UInt8, [1, 2])
    assert ros.spin_until(lambda: statuses and statuses[-1].total_message_count == 2, 5.0)
    summary = {s.topic: s for s in statuses[-1].queue_summaries}["to_acomms/status_byte"]
    assert (summary.message_count, summary.priority, summary.total_bits_in_queue) == (2, 10, 16)
    assert ros.spin_until(lambda: counters and counters[-1].messages_queued == 2, 5.0)
    reach = publisher(ros, NeighborReachability, f"{NS}/neighbor_reachability")
    reach.publish(NeighborReachability(dest=121, reachable=False))
    assert ros.spin_until(lambda: node.queues.destination_reachable.get(121) is False, 5.0)
    client = _client(ros, GetNextPacketData, "get_next_packet_data")
    assert request(client, ros).num_messages == 0


def test_parameters_are_validated_and_take_effect(ros, node):
    results = node.set_parameters([Parameter("default_priority", value=-5)])
    assert not results[0].successful
    assert node.set_parameters([Parameter("default_dest", value=33)])[0].successful
    assert {q.dest for q in node.queues.queues.values()} == {121}  # config gives 121 everywhere
    assert node.set_parameters([Parameter("max_packet_bytes", value=2)])[0].successful
    _queue(ros, node, "to_acomms/command", String, ["too long for two bytes"])
    assert node.queues.counts.rejected_too_large == 1


def test_queue_contents_survive_deactivate_activate(ros, node):
    _queue(ros, node, "to_acomms/status_byte", UInt8, [4, 5])
    assert node.trigger_deactivate() == TransitionCallbackReturn.SUCCESS
    assert node.trigger_activate() == TransitionCallbackReturn.SUCCESS
    client = _client(ros, GetNextPacketData, "get_next_packet_data")
    assert _decode(request(client, ros)) == [(105, 4), (105, 5)]
