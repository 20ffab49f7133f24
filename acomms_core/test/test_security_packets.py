"""Authenticated packet codecs without ROS: every bit flip, replays, restarts, keys, partials."""

from __future__ import annotations

import json
import os
import time

import pytest
from security_support import (
    KEY_1,
    KEY_2,
    ROGUE_KEY,
    open_packet,
    seal,
    secured_codec,
    secured_entry,
    write_key_file,
)
from std_msgs.msg import String, UInt8

from acomms_core.codecs import CodecConfigError, parse_codec_config
from acomms_core.queue.message_queue import MessageQueues, PacketRequest
from acomms_core.security import (
    ReplayGuard,
    SecurityConfigError,
    forgery_probability,
    load_key_file,
)
from acomms_core.security.aead import PREFIX_BYTES
from acomms_core.security.state import SenderCounter, forget_sender_counters

ABORT = String(data="ABORT: SURFACE NOW")


@pytest.fixture
def keys(tmp_path):
    forget_sender_counters()
    yield write_key_file(tmp_path / "fleet.keys", [(1, KEY_1, None)])
    forget_sender_counters()


def _counter(mini: bytes, data: bytes, header_bytes: int = 1) -> int:
    sealed = mini[header_bytes:] + data
    return int.from_bytes(sealed[1:PREFIX_BYTES], "big")


@pytest.mark.parametrize("mode,mini,data", [("authenticate", 40, 0), ("encrypt", 10, 40)])
def test_every_bit_flip_of_an_authenticated_packet_is_rejected(keys, tmp_path, mode, mini, data):
    sender, _ = secured_codec(keys, src=1, state_dir=tmp_path, mode=mode)
    packed_mini, packed_data = seal(sender, [(5, ABORT), (6, UInt8(data=9))], mini, data)
    assert len(packed_mini) <= mini and len(packed_data) <= data
    assert bool(packed_data) == (data > 0)       # the encrypt case spills into the dataframe
    outcomes = set()
    packet = packed_mini + packed_data
    receiver, codec = secured_codec(keys, mode=mode)
    for bit in range(8 * len(packet)):
        codec.bind_replay_guard(ReplayGuard())          # a fresh replay window each time
        flipped = bytearray(packet)
        flipped[bit // 8] ^= 1 << (bit % 8)
        messages, outcome = open_packet(receiver, bytes(flipped[:len(packed_mini)]),
                                        bytes(flipped[len(packed_mini):]), src=1)
        assert messages == [] and outcome != "packets_authenticated", bit
        outcomes.add(outcome)
    assert outcomes == {"auth_failed", "auth_unknown_key"}   # key id bits name no key
    receiver, _ = secured_codec(keys, mode=mode)
    messages, outcome = open_packet(receiver, packed_mini, packed_data, src=1)
    assert outcome == "packets_authenticated"
    assert [(i, m.data) for i, m in messages] == [(5, ABORT.data), (6, 9)]


def test_encrypt_hides_the_body_and_authenticate_leaves_it_readable(keys, tmp_path):
    for mode, visible in (("encrypt", False), ("authenticate", True)):
        sender, codec = secured_codec(keys, src=1, state_dir=tmp_path, mode=mode)
        mini, _ = seal(sender, [(5, ABORT)])
        plain, _ = codec.inner.pack([(5, sender.codecs_by_id()[5].encode(ABORT)[0])], 100, 0)
        assert (mini[1 + PREFIX_BYTES:-4] == plain) is visible   # header, key id + counter, tag
        assert len(mini) == 1 + len(plain) + codec.overhead_bytes and codec.overhead_bytes == 8


def test_replays_reorders_and_too_old_counters(keys, tmp_path):
    sender, _ = secured_codec(keys, src=1, state_dir=tmp_path, replay_window=4)
    packets = [seal(sender, [(6, UInt8(data=i))]) for i in range(8)]
    receiver, _ = secured_codec(keys, replay_window=4)

    def outcome(i, src=1):
        return open_packet(receiver, *packets[i], src=src)[1]

    assert outcome(2) == "packets_authenticated"
    assert outcome(2) == "auth_replayed"
    assert outcome(1) == "packets_authenticated"   # late but inside the window
    assert outcome(1) == "auth_replayed"
    assert outcome(7) == "packets_authenticated"
    assert outcome(3) == "auth_too_old"           # 7 - 3 >= window 4
    assert outcome(5) == "packets_authenticated"
    assert outcome(7) == "auth_replayed"
    assert outcome(6, src=3) == "auth_failed"     # relabelled as another SRC: the nonce differs


def test_restarting_the_sender_never_reuses_a_counter(keys, tmp_path):
    seen = []
    for _restart in range(3):
        forget_sender_counters()                  # a new process: nothing in memory
        sender, _ = secured_codec(keys, src=1, state_dir=tmp_path)
        seen += [_counter(*seal(sender, [(6, UInt8(data=1))])) for _ in range(5)]
    assert len(set(seen)) == len(seen) and seen == sorted(seen)
    # written ahead: the file already holds the end of the block in use (a crash skips the rest)
    (state,) = [p for p in os.listdir(tmp_path) if p.endswith(".counter")]
    assert int((tmp_path / state).read_text()) > seen[-1]
    # two allocators on one file (two processes of one vehicle) never hand out the same counter
    (tmp_path / "shared.counter").write_text("0\n")     # a new key's state (no refusal)
    a, b = SenderCounter(str(tmp_path / "shared.counter"), 3), SenderCounter(
        str(tmp_path / "shared.counter"), 3)
    values = [c.next() for _ in range(5) for c in (a, b)]
    assert len(set(values)) == len(values)
    # a different SRC with the same key has its own counters (its nonces differ by SRC anyway)
    other, _ = secured_codec(keys, src=2, state_dir=tmp_path)
    assert _counter(*seal(other, [(6, UInt8(data=1))])) == 0


def test_receiver_restart_keeps_rejecting_recorded_packets(keys, tmp_path):
    sender, _ = secured_codec(keys, src=1, state_dir=tmp_path)
    old, new = seal(sender, [(6, UInt8(data=1))]), seal(sender, [(6, UInt8(data=2))])
    state = str(tmp_path / "rx.json")
    receiver, codec = secured_codec(keys)
    codec.bind_replay_guard(ReplayGuard(state))
    assert open_packet(receiver, *old, src=1)[1] == "packets_authenticated"
    saved = json.loads((tmp_path / "rx.json").read_text())
    # [highest counter, bitmap of the window below it (bit 0: the highest itself)]
    assert list(saved.values()) == [[_counter(*old), 1]] and KEY_1 not in json.dumps(saved)
    receiver, codec = secured_codec(keys)                  # restarted receiver
    codec.bind_replay_guard(ReplayGuard(state))
    assert open_packet(receiver, *old, src=1)[1] == "auth_replayed"
    assert open_packet(receiver, *new, src=1)[1] == "packets_authenticated"


def test_wrong_key_id_wrong_key_truncated_and_partial(keys, tmp_path):
    sender, _ = secured_codec(keys, src=1, state_dir=tmp_path)
    mini, data = seal(sender, [(5, ABORT)], mini=12, data=30)
    other_id = write_key_file(tmp_path / "other.keys", [(2, KEY_1, None)])
    assert open_packet(secured_codec(other_id)[0], mini, data, 1)[1] == "auth_unknown_key"
    rogue = write_key_file(tmp_path / "rogue.keys", [(1, ROGUE_KEY, None)])
    assert open_packet(secured_codec(rogue)[0], mini, data, 1)[1] == "auth_failed"
    receiver, _ = secured_codec(keys)
    for cut in (1, 4, len(data)):
        assert open_packet(receiver, mini, data[:-cut], 1)[1] == "auth_failed"
    assert open_packet(receiver, mini[:5], b"", 1)[1] == "auth_truncated"
    assert open_packet(receiver, mini, data, 1, minibytes_valid=[0, len(mini)],
                       databytes_valid=[0, 10, 11, len(data)])[1] == "auth_partial"
    messages, outcome = open_packet(receiver, mini, data, 1, minibytes_valid=[0, len(mini)],
                                    databytes_valid=[0, len(data)])
    assert outcome == "packets_authenticated" and messages[0][1].data == ABORT.data


def test_rotation_accepts_the_old_key_until_its_time(tmp_path):
    past, future = time.time() - 60, time.time() + 3600
    old_sender = write_key_file(tmp_path / "old.keys", [(1, KEY_1, None)])
    sender, _ = secured_codec(old_sender, src=1, state_dir=tmp_path)
    sealed_old = seal(sender, [(6, UInt8(data=1))])
    for until, expected in ((future, "packets_authenticated"), (past, "auth_key_expired")):
        path = write_key_file(tmp_path / "ring.keys", [(1, KEY_1, until), (2, KEY_2, None)])
        assert load_key_file(path).send_key_id == 2        # new packets use the new key
        assert open_packet(secured_codec(path)[0], *sealed_old, 1)[1] == expected
    new_sender, _ = secured_codec(path, src=1, state_dir=tmp_path)
    sealed_new = seal(new_sender, [(6, UInt8(data=2))])
    assert sealed_new[0][1] == 2                           # key id after the header byte
    assert open_packet(secured_codec(path)[0], *sealed_new, 1)[1] == "packets_authenticated"


def test_key_file_checks_never_show_the_key(tmp_path):
    loose = write_key_file(tmp_path / "loose.keys", [(1, KEY_1, None)], mode=0o644)
    # the key file is read when the node configures (load_keys), not when the YAML is parsed
    with pytest.raises(SecurityConfigError, match="chmod 600"):
        secured_codec(loose)[1].load_keys()
    bad = write_key_file(tmp_path / "bad.keys", [(1, KEY_1[:-2] + "zz", None)])
    with pytest.raises(SecurityConfigError, match="key id 1") as info:
        secured_codec(bad)[1].load_keys()
    assert KEY_1[:20] not in str(info.value)
    good = write_key_file(tmp_path / "good.keys", [(1, KEY_1, None)])
    assert KEY_1 not in repr(load_key_file(good))
    for security, reason in (({"key_file": good, "key": KEY_1}, "unknown keys"),
                             ({"key_file": good, "tag_bytes": 3}, "tag_bytes"),
                             ({"key_file": good, "mode": "sign"}, "mode"),
                             ({"mode": "encrypt"}, "key_file is required")):
        entry = secured_entry(good)
        entry["security"] = security
        with pytest.raises(CodecConfigError, match=reason) as info:
            parse_codec_config([entry], "cfg.yaml")
        assert KEY_1 not in str(info.value)
    _, codec = secured_codec(good)
    with pytest.raises(ValueError, match="sender binding"):
        codec.pack([], 40, 0)
    with pytest.raises(ValueError, match="SRC"):
        codec.bind_sender(-1, str(tmp_path))


def test_the_queue_fills_authenticated_packets_within_the_budget(keys, tmp_path):
    entry = secured_entry(keys)
    plain = {**secured_entry(keys), "codec_name": "plain", "miniframe_header": [0xAC]}
    del plain["security"]
    for m in plain["message_codecs"]:
        m["id"] += 10
        m.pop("subscribe_topic", None)
    config = parse_codec_config([entry, plain], "cfg.yaml")
    secured, plaintext = config.packet_codecs
    secured.packet_codec.bind_sender(1, str(tmp_path), allow_fresh=True)
    assert (plaintext.packet_codec.payload_capacity_bits(32, 0)
            - secured.packet_codec.payload_capacity_bits(32, 0)) == 8 * 8
    queues = MessageQueues(config, max_packet_bytes=32)
    for text in ("x" * 10, "y" * 10, "z" * 10):
        assert queues.add("command_out", String(data=text), 0.0) == "queued"
    packet = queues.next_packet(PacketRequest(32, 0), 1.0)
    assert packet.num_messages == 2 and len(packet.miniframe_bytes) <= 32
    # the plaintext codec on the same channel does not take the authenticated packet
    assert not plaintext.matches(1, 0, packet.miniframe_bytes, b"")
    assert secured.matches(1, 0, packet.miniframe_bytes, b"")
    assert forgery_probability(4) == 2.0 ** -32


def test_damaged_or_used_up_counter_state_refuses_to_send(keys, tmp_path):
    sender, _ = secured_codec(keys, src=4, state_dir=tmp_path)
    seal(sender, [(6, UInt8(data=1))])
    (state,) = [p for p in tmp_path.iterdir() if p.name.endswith("src4.counter")]
    for content, reason in (("garbage", "damaged"), (f"{2 ** 24}", "rotate the key")):
        state.write_text(content)
        forget_sender_counters()
        with pytest.raises(SecurityConfigError, match=reason):
            secured_codec(keys, src=4, state_dir=tmp_path)
