"""Relaying (issue 32) without ROS: header format, codec wrapper, policy, backlog, queue."""

from __future__ import annotations

import types

import pytest
from security_support import KEY_1, secured_entry, write_key_file
from std_msgs.msg import String

from acomms_core.codecs import CodecConfigError, RosPacketCodec, parse_codec_config
from acomms_core.queue.message_queue import MessageQueues, PacketRequest
from acomms_core.relay.relay_backlog import RelayBacklog
from acomms_core.relay.relay_codec import RelayHeader
from acomms_core.relay.relay_policy import (
    DuplicateFilter,
    RelayPolicy,
    RelaySettings,
    parse_routes,
    routes_problem,
)

MESSAGES = [{"id": 5, "ros_type": "std_msgs/String", "subscribe_topic": "command_out",
             "publish_topic": "command", "default_dest": 1,
             "fields": {"data": {"codec": "string", "max_length": 40}}}]


def _entry(**extra):
    return {"codec_name": "commands", "miniframe_header": [0xA7], "relayable": True,
            "message_codecs": MESSAGES, **extra}


def _packet(**extra):
    return parse_codec_config([_entry(**extra)], "cfg.yaml").packet_codecs[0]


def _rx(src, dest=1):
    return types.SimpleNamespace(packet=types.SimpleNamespace(src=src, dest=dest))


def _send(packet, text, src=3, mini=32, data=0):
    codec = packet.packet_codec
    codec.bind_sender(src)
    bits = packet.codecs_by_id()[5].encode(String(data=text))[0]
    return codec.pack([(5, bits)], mini, data, dest=1)


def test_header_layout_is_version_hops_origin_dest_seq():
    packet = _packet(relay_hop_limit=4)
    mini, data = _send(packet, "go")
    assert mini[0] == 0xA7
    assert RelayHeader.from_bytes(mini[1:5]) == RelayHeader(origin=3, final_dest=1, seq=0,
                                                             hops_left=4)
    assert mini[1] == 0x14 and mini[2:5] == bytes([3, 1, 0])
    assert data == b""
    _, second = _send(packet, "again")
    assert RelayHeader.from_bytes(_send(packet, "x")[0][1:5]).seq == 2


def test_non_relayable_codec_bits_are_unchanged():
    entry = {k: v for k, v in _entry().items() if k != "relayable"}
    plain = parse_codec_config([entry], "cfg.yaml").packet_codecs[0]
    bits = plain.codecs_by_id()[5].encode(String(data="go"))[0]
    assert plain.packet_codec.pack([(5, bits)], 32, 0) == RosPacketCodec(b"\xa7").pack(
        [(5, bits)], 32, 0)


@pytest.mark.parametrize("extra, reason", [({"relayable": "yes"}, "relayable must be"),
                                           ({"relay_hop_limit": 0}, "relay_hop_limit must"),
                                           ({"relay_hop_limit": 16}, "relay_hop_limit must"),
                                           ({"relayable": False, "relay_hop_limit": 2},
                                            "needs relayable"),
                                           ({"message_codecs": [{**MESSAGES[0],
                                                                 "allow_fragmentation": True}]},
                                            "allow_fragmentation is not supported")])
def test_config_refuses_bad_relay_keys(extra, reason):
    with pytest.raises(CodecConfigError, match=reason):
        _packet(**extra)


def test_receiver_decodes_with_origin_and_publishes_each_sequence_once():
    sender, receiver = _packet(), _packet()
    mini, data = _send(sender, "survey leg 2")
    codec = receiver.packet_codec
    first = codec.decode(mini, data, receiver.codecs_by_id(), _rx(3))
    assert [m.data for _, m in first.messages] == ["survey leg 2"] and first.src == 3
    relay = parse_codec_config([_entry()], "c.yaml").packet_codecs[0].packet_codec
    forwarded = relay.forward_frames(mini, data, 2, 32, 0)
    again = codec.decode(*forwarded, receiver.codecs_by_id(), _rx(2))
    assert again.messages == [] and again.counters == {"relay_duplicates": 1}
    assert again.src == 3


def test_the_origin_does_not_publish_its_own_packet_relayed_back():
    sender = _packet()
    mini, data = _send(sender, "mine")
    own = _packet().packet_codec
    own.bind_sender(3)
    echo = own.decode(*sender.packet_codec.forward_frames(mini, data, 1, 32, 0),
                      sender.codecs_by_id(), _rx(2))
    assert echo.messages == [] and echo.counters == {"relay_duplicates": 1}


def test_forwarded_body_is_resplit_for_a_smaller_miniframe():
    sender, receiver = _packet(), _packet()
    mini, data = _send(sender, "a longer command text")
    relay = sender.packet_codec
    small = relay.forward_frames(mini, data, 1, 8, 64)
    assert len(small[0]) == 8 and small[1]
    result = receiver.packet_codec.decode(*small, receiver.codecs_by_id(), _rx(2))
    assert [m.data for _, m in result.messages] == ["a longer command text"]
    with pytest.raises(ValueError):
        relay.forward_frames(mini, data, 1, 8, 4)


def test_sealed_packet_is_forwarded_without_keys_and_opened_with_the_origin(tmp_path):
    key_file = write_key_file(tmp_path / "k.keys", [(1, KEY_1, None)])
    entry = {**secured_entry(key_file, mode="encrypt"), "relayable": True}
    sender = parse_codec_config([entry], str(tmp_path / "c.yaml")).packet_codecs[0]
    receiver = parse_codec_config([entry], str(tmp_path / "c.yaml")).packet_codecs[0]
    sender.packet_codec.inner.bind_sender(3, str(tmp_path), allow_fresh=True)  # a new key
    sender.packet_codec.bind_sender(3)
    bits = sender.codecs_by_id()[5].encode(String(data="sealed cmd"))[0]
    mini, data = sender.packet_codec.pack([(5, bits)], 40, 0, dest=1)
    plain = _packet(miniframe_header=[0xA5])
    clear = plain.packet_codec.pack([(5, bits)], 40, 0, dest=1)[0]
    assert clear[5:] not in mini   # the body is encrypted
    # the relay has no key file: a plain relayable codec with the same header forwards it
    relay = _packet(miniframe_header=[0xA5]).packet_codec
    forwarded = relay.forward_frames(mini, data, 2, 40, 0)
    result = receiver.packet_codec.decode(*forwarded, receiver.codecs_by_id(), _rx(2))
    assert [m.data for _, m in result.messages] == ["sealed cmd"]
    assert result.counters == {"packets_authenticated": 1}
    tampered = bytearray(forwarded[0])
    tampered[2] = 4    # a forged origin fails authentication
    bad = receiver.packet_codec.decode(bytes(tampered), forwarded[1],
                                       receiver.codecs_by_id(), _rx(2))
    assert bad.messages == [] and "auth_failed" in bad.counters


def _policy(**extra):
    return RelayPolicy(RelaySettings(src=2, routes={1: 1, 3: 3}, **extra))


@pytest.mark.parametrize("header, transmitter, outcome", [
    (RelayHeader(3, 1, 0, 3), 3, "relayed"),
    (RelayHeader(3, 2, 0, 3), 3, "addressed_to_self"),
    (RelayHeader(2, 1, 0, 3), 3, "addressed_to_self"),
    (RelayHeader(3, 9, 0, 3), 3, "no_route"),
    (RelayHeader(3, 1, 0, 3), 1, "no_route"),           # back to the transmitter
    (RelayHeader(3, 3, 0, 3), 1, "no_route"),           # back to the origin
    (RelayHeader(3, 1, 0, 0), 3, "hop_limit_reached"),
])
def test_policy_outcomes(header, transmitter, outcome):
    policy = _policy()
    decision = policy.decide(header, "commands", transmitter)
    assert decision.outcome == outcome
    assert policy.counts[outcome] == 1 and policy.counts["relay_packets_heard"] == 1
    if outcome == "relayed":
        assert (decision.next_hop, decision.hops_left) == (1, 2)


def test_policy_drops_duplicates_and_caps_hops():
    policy = _policy(max_hops=1)
    assert policy.decide(RelayHeader(3, 1, 7, 5), "commands", 3).hops_left == 1
    assert policy.decide(RelayHeader(3, 1, 7, 5), "commands", 4).outcome == "duplicates_dropped"
    assert policy.decide(RelayHeader(3, 1, 7, 5), "other", 3).outcome == "relayed"
    assert policy.counts["duplicates_dropped"] == 1 and policy.counts["relayed"] == 2


def test_duplicate_memory_is_bounded():
    memory = DuplicateFilter(3)
    for key in range(5):
        memory.add(key)
    assert len(memory) == 3 and not memory.seen(0) and memory.seen(4)


def test_routes_parse_and_refuse():
    assert parse_routes(["1:2", "4:4"]) == {1: 2, 4: 4}
    assert parse_routes({1: 2}) == {1: 2}
    assert "dest:next_hop" in routes_problem(["12"])
    assert "0..255" in routes_problem(["1:300"])
    assert routes_problem(["a:1"]) is not None


def _relay_queues(priority=20):
    config = parse_codec_config([_entry(message_codecs=[
        {**MESSAGES[0], "priority": 10, "subscribe_topic": "local"}])], "c.yaml")
    queues = MessageQueues(config)
    queues.relay = RelayBacklog(RelayPolicy(RelaySettings(src=2, routes={1: 1},
                                                          priority=priority)), maxsize=2)
    return queues, config.packet_codecs[0].packet_codec


def test_queue_forwards_heard_packet_ahead_of_lower_priority_messages():
    queues, codec = _relay_queues()
    mini, data = _send(_packet(), "relay me")
    queues.add("local", String(data="mine"), 0.0)
    assert queues.relay.offer(codec, mini, data, 3, 0.0) == "relayed"
    first = queues.next_packet(PacketRequest(32, 0), 1.0)
    assert first.dest == 1 and first.miniframe_bytes[1] == 0x12   # hops 3 -> 2
    assert first.miniframe_bytes[5:] == mini[5:]
    second = queues.next_packet(PacketRequest(32, 0), 1.0)
    assert second.num_messages == 1


def test_queue_sends_higher_priority_messages_first_and_backlog_is_bounded():
    queues, codec = _relay_queues(priority=5)
    sender = _packet()
    for text in ("a", "b", "c"):
        queues.relay.offer(codec, *_send(sender, text), 3, 0.0)
    assert len(queues.relay.packets) == 2
    assert queues.relay.policy.counts["relay_backlog_full"] == 1
    queues.add("local", String(data="mine"), 0.0)
    assert queues.next_packet(PacketRequest(32, 0), 1.0).num_messages == 1
    assert queues.next_packet(PacketRequest(32, 0), 1.0).dest == 1
    assert queues.next_packet(PacketRequest(32, 0, match_dest=True, dest=5), 1.0).dest == 5
