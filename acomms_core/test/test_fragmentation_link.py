"""Fragment sessions through the real queue and packet codec on a seeded lossy link (issue 15)."""

from __future__ import annotations

import pytest
from fragmentation_support import make_link, text_of
from std_msgs.msg import String, UInt8

from acomms_core.fragmentation.simulated_link import run_transfer

PACKET = (72, 192)   # a Micromodem rate-1 FDP packet (miniframe, dataframe bytes)


@pytest.mark.parametrize("per,seed", [(0.0, 1), (0.2, 2), (0.4, 3)])
def test_large_message_arrives_once_and_exactly(tmp_path, per, seed):
    sender, receiver = make_link(tmp_path, ack_timeout_s=200.0)
    text = text_of(3000, seed)
    assert sender.queues.add("blob", String(data=text), 0.0) == "fragmented"
    run = run_transfer(sender, receiver, PACKET, per, seed)
    assert run.completion_s is not None
    assert [m.data for _, _, m in receiver.published] == [text]
    counts = sender.sender.counters()
    assert counts["fragment_sessions_completed"] == 1
    if per == 0.0:
        assert counts["fragment_blocks_resent"] == 0
    assert receiver.receiver.counts["reassembly_failures"] == 0


def test_small_messages_share_packets_with_fragments(tmp_path):
    sender, receiver = make_link(tmp_path)
    sender.next_packet(*PACKET, 0.0)     # the MAC's packets are smaller than this message
    assert sender.queues.add("blob", String(data=text_of(1500)), 0.0) == "fragmented"
    sender.queues.add("small", UInt8(data=7), 0.0)
    run_transfer(sender, receiver, PACKET, 0.0, 0)
    kinds = [type(m).__name__ for _, _, m in receiver.published]
    assert sorted(kinds) == ["String", "UInt8"]


def test_dest_that_never_answers_ends_by_ttl(tmp_path):
    sender, _ = make_link(tmp_path, session_ttl_s=100.0, ack_timeout_s=30.0)
    sender.next_packet(*PACKET, 0.0)
    assert sender.queues.add("blob", String(data=text_of(2000)), 0.0) == "fragmented"
    for step in range(1, 40):
        sender.next_packet(*PACKET, step * 5.0)
    with sender.queues.lock:
        lines = sender.sender.expire(200.0)
    assert len(lines) == 1 and "no progress" in lines[0]
    counts = sender.sender.counters()
    assert counts["fragment_sessions_expired"] == 1 and counts["fragment_ack_timeouts"] >= 1


def test_too_large_for_max_blocks_is_refused(tmp_path):
    sender, _ = make_link(tmp_path, max_blocks=10)
    assert sender.queues.add("blob", String(data=text_of(3000)), 0.0) == "rejected_too_large"
    assert sender.queues.counts.rejected_too_large == 1


def test_without_allow_fragmentation_a_large_message_is_still_refused(tmp_path):
    sender, _ = make_link(tmp_path)
    sender.queues.config.by_id()[110].allow_fragmentation = False
    assert sender.queues.add("blob", String(data=text_of(3000)), 0.0) == "rejected_too_large"


def test_reserved_ids_in_the_config_are_refused(tmp_path):
    from fragmentation_support import BLOB_CONFIG, write_config

    from acomms_core.codecs.config import load_codec_config
    from acomms_core.fragmentation.settings import FragmentationSettings, config_problem
    config = load_codec_config(write_config(tmp_path, BLOB_CONFIG.replace("id: 111",
                                                                          "id: 253")))
    assert "reserved" in config_problem(config, FragmentationSettings.from_values({}))
    moved = FragmentationSettings.from_values({}, continuation_id=200)
    assert config_problem(config, moved) is None


def test_corrupted_block_is_never_published_and_is_counted(tmp_path):
    sender, receiver = make_link(tmp_path)
    assert sender.queues.add("blob", String(data=text_of(3000)), 0.0) == "fragmented"
    now, corrupted = 0.0, False
    while sender.sender.fragmenter.sessions and now < 2000:
        now += 5.0
        packet = sender.next_packet(*PACKET, now)
        data = bytearray(packet.dataframe_bytes)
        if data and not corrupted and len(data) > 100:
            data[100] ^= 0x10                 # one bit of a block, framing intact
            corrupted = True
        receiver.receive(1, packet.dest, packet.miniframe_bytes, bytes(data), now)
        reply = receiver.next_packet(*PACKET, now)
        sender.receive(2, reply.dest, reply.miniframe_bytes, reply.dataframe_bytes, now)
    assert corrupted and receiver.published == []
    assert receiver.receiver.counts["reassembly_failures"] == 1
    assert "crc32" in receiver.errors[0]
