"""MessageQueues without ROS: ordering, limits, filters, expiry, concurrency."""

from __future__ import annotations

import threading

import pytest
from std_msgs.msg import String, UInt8, UInt8MultiArray

from acomms_core.codecs import RosPacketCodec, parse_codec_config
from acomms_core.queue.message_queue import MessageQueues, PacketRequest


def _config(*entries):
    return parse_codec_config([{"codec_name": "test", "miniframe_header": [0xAC],
                                "message_codecs": list(entries)}], "test.yaml")


def _uint8(codec_id, topic, **extra):
    return {"id": codec_id, "ros_type": "std_msgs/UInt8", "subscribe_topic": topic,
            "fields": {"data": {"codec": "uint8"}}, **extra}


def _string(codec_id, topic, **extra):
    return {"id": codec_id, "ros_type": "std_msgs/String", "subscribe_topic": topic,
            "fields": {"data": {"codec": "string", "max_length": 200}}, **extra}


def _sent(queues, request=None, now=0.0):
    """[(codec id, value)] of every message packed, one packet per call, until empty."""
    codecs = {m.id: m.codec for m in queues.config.message_codecs}
    out = []
    while True:
        packet = queues.next_packet(request or PacketRequest(4, 0), now)
        if packet.num_messages == 0:
            return out
        result = RosPacketCodec().decode(packet.miniframe_bytes, packet.dataframe_bytes, codecs)
        out += [(i, m.data) for i, m in result.messages]


def test_fifo_lifo_and_maxsize():
    queues = MessageQueues(_config(_uint8(1, "fifo", queue_maxsize=3, priority=5),
                                   _uint8(2, "lifo", queue_order="lifo", queue_maxsize=3,
                                          priority=5)))
    outcomes = [queues.add("fifo", UInt8(data=v), 0.0) for v in range(5)]
    assert outcomes.count("dropped_queue_full") == 2
    for v in range(5):
        queues.add("lifo", UInt8(data=v), 0.0)
    assert queues.counts.dropped_queue_full == 4
    # equal priority: LIFO queue first (newest first), then FIFO (oldest first), as ros_acomms
    assert _sent(queues) == [(2, 4), (2, 3), (2, 2), (1, 0), (1, 1), (1, 2)]


def test_priority_order_and_priority_update():
    queues = MessageQueues(_config(_uint8(1, "low", priority=1), _uint8(2, "high", priority=9)))
    for v in range(2):
        queues.add("low", UInt8(data=v), 0.0)
        queues.add("high", UInt8(data=10 + v), 0.0)
    assert queues.next_packet(PacketRequest(3, 0), 0.0).codec_ids == [2]
    assert queues.set_priority("low", 20) and not queues.set_priority("nope", 1)
    assert _sent(queues, PacketRequest(6, 0)) == [(1, 0), (1, 1), (2, 11)]


def test_several_messages_per_packet_and_budget_respected():
    queues = MessageQueues(_config(_uint8(1, "a")))
    for v in range(10):
        queues.add("a", UInt8(data=v), 0.0)
    packet = queues.next_packet(PacketRequest(4, 5), 0.0)
    assert packet.num_messages == 4  # (4 - 1 header + 5) bytes / 2 bytes per message
    assert len(packet.miniframe_bytes) <= 4 and len(packet.dataframe_bytes) <= 5


def test_smaller_message_fills_the_gap_behind_a_big_one():
    queues = MessageQueues(_config(_string(1, "text", priority=9), _uint8(2, "byte", priority=1)))
    queues.add("text", String(data="x" * 20), 0.0)
    queues.add("byte", UInt8(data=7), 0.0)
    packet = queues.next_packet(PacketRequest(4, 0), 0.0)
    assert packet.codec_ids == [2]
    assert queues.next_packet(PacketRequest(40, 0), 0.0).codec_ids == [1]


def test_filters_dest_tags_priority_active_reachability():
    queues = MessageQueues(_config(_uint8(1, "a", default_dest=5, tags=["nav"], priority=3),
                                   _uint8(2, "b", default_dest=6, priority=7)),
                           default_dest=121)
    queues.add("a", UInt8(data=1), 0.0)
    queues.add("b", UInt8(data=2), 0.0)
    assert queues.next_packet(PacketRequest(10, 0, match_dest=True, dest=9), 0.0).num_messages == 0
    assert queues.next_packet(PacketRequest(10, 0, minimum_priority=8), 0.0).num_messages == 0
    assert queues.next_packet(PacketRequest(10, 0, require_tags=("x",)), 0.0).num_messages == 0
    queues.set_active("b", False)
    queues.set_reachable(5, False)
    assert queues.next_packet(PacketRequest(10, 0), 0.0).num_messages == 0
    queues.set_reachable(5, True)
    packet = queues.next_packet(PacketRequest(10, 0, exclude_tags=("other",)), 0.0)
    assert (packet.codec_ids, packet.dest) == ([1], 5)
    queues.set_active("b", True)
    packet = queues.next_packet(PacketRequest(10, 0, match_dest=True, dest=6), 0.0)
    assert (packet.codec_ids, packet.dest) == ([2], 6)


def test_one_destination_per_packet():
    queues = MessageQueues(_config(_uint8(1, "a", default_dest=5, priority=9),
                                   _uint8(2, "b", default_dest=6, priority=5),
                                   _uint8(3, "c", default_dest=5, priority=1)))
    for topic in "abc":
        queues.add(topic, UInt8(data=1), 0.0)
    packet = queues.next_packet(PacketRequest(20, 0), 0.0)
    assert (packet.dest, packet.codec_ids) == (5, [1, 3])


def test_inactive_queue_ignores_arrivals_and_ttl_expires():
    queues = MessageQueues(_config(_uint8(1, "a", is_active=False),
                                   _uint8(2, "b", ttl_seconds=10.0)))
    assert queues.add("a", UInt8(data=1), 0.0) == "ignored_inactive"
    queues.add("b", UInt8(data=1), 0.0)
    queues.add("b", UInt8(data=2), 8.0)
    assert _sent(queues, now=15.0) == [(2, 2)]
    assert queues.counts.expired_ttl == 1 and queues.counts.ignored_inactive == 1


def test_message_that_can_never_fit_is_refused_on_arrival():
    queues = MessageQueues(_config(_string(1, "text"), _uint8(2, "byte")), max_packet_bytes=10)
    assert queues.add("text", String(data="y" * 50), 0.0) == "rejected_too_large"
    assert queues.add("text", String(data="ok"), 0.0) == "queued"
    assert queues.counts.rejected_too_large == 1
    assert "at most" in queues.counts.last_error


def test_encode_failure_is_counted():
    # A value the codec cannot encode (issue 12: non-ASCII is no longer one, it is sent as '?').
    queues = MessageQueues(_config(_string(1, "text"), {
        "id": 2, "ros_type": "std_msgs/UInt8MultiArray", "subscribe_topic": "three",
        "fields": {"data": {"codec": "fixed_len_array", "element_type": "uint8", "length": 3}}}))
    assert queues.add("three", UInt8MultiArray(data=[1, 2]), 0.0) == "encode_failures"
    assert queues.counts.encode_failures == 1 and "fixed_len_array" in queues.counts.last_error
    assert queues.add("text", String(data="caf\u00e9"), 0.0) == "queued"
    assert queues.counts.encode_failures == 1 and queues.counts.non_ascii_replaced == 1


def test_status_snapshot():
    queues = MessageQueues(_config(_uint8(1, "a", priority=4, default_dest=3)))
    queues.add("a", UInt8(data=1), 0.0)
    status = queues.status(0.0)
    assert status["total_message_count"] == 1 and status["highest_priority"] == 4
    assert status["queued_dest_addresses"] == [3]
    assert status["queue_summaries"][0]["next_message_size_bits"] == 8


@pytest.mark.timeout(60)
def test_concurrent_callers_each_get_distinct_messages():
    queues = MessageQueues(_config(_uint8(1, "a", queue_maxsize=2000)))
    for v in range(1000):
        queues.add("a", UInt8(data=v % 256), float(v))
    seqs, lock = [], threading.Lock()

    def drain():
        while True:
            packet = queues.next_packet(PacketRequest(7, 0), 0.0)
            if packet.num_messages == 0:
                return
            with lock:
                seqs.extend(packet.message_seqs)

    threads = [threading.Thread(target=drain) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert sorted(seqs) == list(range(1, 1001))


def test_node_defaults_apply_only_where_the_config_gives_none():
    queues = MessageQueues(_config(_uint8(1, "a"), _uint8(2, "b", default_dest=4, priority=2)),
                           default_dest=121, default_priority=10)
    queues.set_defaults(default_dest=9, default_priority=30)
    assert (queues.queues["a"].dest, queues.queues["a"].priority) == (9, 30)
    assert (queues.queues["b"].dest, queues.queues["b"].priority) == (4, 2)
