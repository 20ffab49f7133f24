"""Dynamic queues without ROS (acomms_core.queue.dynamic_queue): what is asked, what is taken."""

from __future__ import annotations

from std_msgs.msg import UInt8

from acomms_core.codecs import CodecConfigError, RosPacketCodec, parse_codec_config
from acomms_core.queue.dynamic_queue import (
    DEQUEUED,
    MAX_QUERIES_PER_PACKET,
    QUEUED,
    TRANSMITTED,
    DynamicQueues,
    Offer,
    PacketBuild,
    largest_message_bits,
)
from acomms_core.queue.message_queue import MessageQueues, PacketRequest


def _config(*entries):
    return parse_codec_config([{"codec_name": "test", "miniframe_header": [0xAC],
                                "message_codecs": list(entries)}], "test.yaml")


def _static(codec_id, topic, priority):
    return {"id": codec_id, "ros_type": "std_msgs/UInt8", "subscribe_topic": topic,
            "priority": priority, "fields": {"data": {"codec": "uint8"}}}


def _dynamic(codec_id, service, **extra):
    return {"id": codec_id, "ros_type": "std_msgs/UInt8", "dynamic_queue_service": service,
            "dynamic_update_topic": f"{service}_update", "publish_topic": f"out{codec_id}",
            "fields": {"data": {"codec": "uint8"}}, **extra}


def _offer(message_id, value, priority, **extra):
    return Offer(message_id=message_id, dest_address=extra.pop("dest", 0), priority=priority,
                 data=bytes([value]), data_size_in_bits=8, **extra)


class Server:
    """A scripted dynamic queue: its messages [(id, value, priority)], honouring the query."""

    def __init__(self, messages, **offer_extra):
        self.messages = list(messages)
        self.queries = []
        self.extra = offer_extra

    def __call__(self, query):
        self.queries.append(query)
        for message_id, value, priority in self.messages:
            if message_id not in query.exclude_message_ids and 8 <= query.max_size_in_bits:
                return _offer(message_id, value, priority, **self.extra)
        return None


def _run(queues, dynamic, servers, request):
    build = PacketBuild(queues, dynamic, request, 0.0)
    while not build.done:
        build.answer({q.queue.service: servers[q.queue.service](q) for q in build.queries})
    codecs = {m.id: m.codec for m in queues.config.message_codecs}
    packet = build.result
    decoded = RosPacketCodec().decode(packet.miniframe_bytes, packet.dataframe_bytes, codecs)
    return packet, [(i, m.data) for i, m in decoded.messages]


def test_priority_merge_static_wins_ties_and_repeated_queries():
    config = _config(_static(1, "static", 10), _dynamic(2, "dyn"))
    queues, dynamic = MessageQueues(config, default_dest=5), DynamicQueues(config, 5)
    queues.add("static", UInt8(data=100), 0.0)
    server = Server([(7, 1, 20), (8, 2, 10), (9, 3, 5)])
    packet, sent = _run(queues, dynamic, {"dyn": server}, PacketRequest(10, 0))
    # 20 first (dynamic), then the static 10 before the dynamic 10 (tie), then the 5
    assert sent == [(2, 1), (1, 100), (2, 2), (2, 3)]
    assert packet.dynamic_messages == [("dyn", 7), ("dyn", 8), ("dyn", 9)]
    assert packet.dest == 5 and packet.num_messages == 4
    # after the fourth message 8 bits are left: too few for any message, so no fourth query
    assert [q.exclude_message_ids for q in server.queries] == [[], [7], [7, 8]]
    assert queues.counts.messages_sent == 4 and dynamic.counts["dynamic_messages_sent"] == 3


def test_room_limits_and_refusals_are_counted():
    config = _config(_dynamic(2, "dyn", default_dest=9))
    queues, dynamic = MessageQueues(config), DynamicQueues(config, default_dest=5)
    # 2 bytes behind the 1-byte header: one 16-bit message (8-bit id + 8 bits) fits
    server = Server([(1, 4, 10), (2, 5, 10)])
    packet, sent = _run(queues, dynamic, {"dyn": server}, PacketRequest(3, 0))
    assert sent == [(2, 4)] and packet.dest == 9
    assert server.queries[0].max_size_in_bits == largest_message_bits(RosPacketCodec(), 16) == 8
    # offers below the minimum priority, with an excluded tag, or too large are refused
    for extra, why, request in (
            ({}, "below_minimum_priority", PacketRequest(3, 0, minimum_priority=50)),
            ({"msg_tags": ("bulk",)}, "tags", PacketRequest(3, 0, exclude_tags=("bulk",))),
            ({"dest": 3}, "wrong_dest", PacketRequest(3, 0, match_dest=True, dest=4))):
        packet, sent = _run(queues, dynamic, {"dyn": Server([(1, 4, 10)], **extra)}, request)
        assert sent == [] and dynamic.counts[f"dynamic_refused_{why}"] == 1
    big = Offer(message_id=1, dest_address=0, priority=10, data=bytes(4), data_size_in_bits=32)
    build = PacketBuild(queues, dynamic, PacketRequest(3, 0), 0.0)
    build.answer({"dyn": big})
    assert build.done and build.result.num_messages == 0
    assert dynamic.counts["dynamic_refused_too_large"] == 1 and "32 bits" in dynamic.last_error


def test_misbehaving_queue_is_asked_a_bounded_number_of_times():
    config = _config(_dynamic(2, "dyn"))
    queues, dynamic = MessageQueues(config), DynamicQueues(config, default_dest=5)
    build = PacketBuild(queues, dynamic, PacketRequest(100, 0), 0.0)
    asked = 0
    while not build.done:
        asked += len(build.queries)
        build.answer({"dyn": _offer(1, 1, 10)})  # always the same id: refused as repeated
    assert build.result.num_messages == 1 and asked <= MAX_QUERIES_PER_PACKET
    assert dynamic.counts["dynamic_refused_repeated"] == 1


def test_inactive_dynamic_queue_is_not_asked_and_config_rules():
    config = _config(_dynamic(2, "dyn"))
    dynamic = DynamicQueues(config, default_dest=5)
    assert dynamic.set_active(2, False) and not dynamic.set_active(3, False)
    build = PacketBuild(MessageQueues(config), dynamic, PacketRequest(10, 0), 0.0)
    assert build.done and build.queries == []
    try:
        _config({**_dynamic(2, "dyn"), "subscribe_topic": "x"})
    except CodecConfigError as exc:
        assert "not both" in str(exc)
    else:
        raise AssertionError("subscribe_topic with dynamic_queue_service accepted")


def _events(build):
    return [(e.service, e.message_id, e.event) for e in build.take_events()]


def test_each_accepted_offer_is_queued_then_dequeued_or_transmitted():
    config = _config(_dynamic(2, "a"), _dynamic(3, "b"))
    queues, dynamic = MessageQueues(config), DynamicQueues(config, default_dest=5)
    # room for one 16-bit message: a's (first in config order at the tie) goes, b's is let go
    build = PacketBuild(queues, dynamic, PacketRequest(3, 0), 0.0)
    build.answer({"a": _offer(1, 4, 10), "b": _offer(7, 5, 10)})
    assert build.done and build.result.dynamic_messages == [("a", 1)]
    assert _events(build) == [("a", 1, QUEUED), ("b", 7, QUEUED), ("a", 1, TRANSMITTED),
                              ("b", 7, DEQUEUED)]
    assert dynamic.counts["dynamic_dequeued"] == 1 and _events(build) == []
    # a refused offer was never held: no event, only its counter
    build = PacketBuild(queues, dynamic, PacketRequest(3, 0, exclude_tags=("x",)), 0.0)
    build.answer({"a": _offer(2, 4, 10, msg_tags=("x",)), "b": None})
    assert build.done and _events(build) == [] and dynamic.counts["dynamic_refused_tags"] == 1
    # an abandoned build lets every held message go, also one already chosen for the packet
    build = PacketBuild(queues, dynamic, PacketRequest(10, 0), 0.0)
    build.answer({"a": _offer(3, 4, 10), "b": None})
    assert not build.done and _events(build) == [("a", 3, QUEUED)]
    build.abandon()
    assert _events(build) == [("a", 3, DEQUEUED)] and dynamic.counts["dynamic_dequeued"] == 2
