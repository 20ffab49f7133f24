"""Packet security state under faults (issue 28 item 5): an unwritable state directory, a lost
counter state, a receiver restart, and a re-addressed packet. Each case was reproduced on main:
configure accepted a read-only directory, a lost directory restarted counters at 0 (nonce reuse),
a restarted receiver refused valid late packets, and a packet moved from dest 9 to 12 passed."""

from __future__ import annotations

import os

import pytest
from security_support import (
    KEY_1,
    open_packet,
    rx,
    seal,
    secured_codec,
    secured_entry,
    unwritable_dir,
    write_key_file,
)
from std_msgs.msg import String, UInt8

from acomms_core.codecs import parse_codec_config
from acomms_core.security import (
    ReplayGuard,
    SecurityConfigError,
    bind_receivers,
    bind_senders,
)
from acomms_core.security.state import (
    CounterStateMissing,
    SenderCounter,
    ensure_state_dir,
    forget_sender_counters,
    mark_key_new,
)
from acomms_core.tools.security_key import main as security_key_main


@pytest.fixture
def keys(tmp_path):
    forget_sender_counters()
    yield write_key_file(tmp_path / "fleet.keys", [(1, KEY_1, None)])
    forget_sender_counters()


def _config(key_file):
    return parse_codec_config([secured_entry(key_file)], "cfg.yaml")


def test_an_unwritable_state_directory_is_refused_at_configure_with_the_reason(keys, tmp_path):
    directory = unwritable_dir(tmp_path)
    with pytest.raises(SecurityConfigError, match=f"{directory} is not writable"):
        ensure_state_dir(directory)
    with pytest.raises(SecurityConfigError, match="not writable"):
        bind_senders(_config(keys), 1, directory, fresh_key_ids=[1])
    with pytest.raises(SecurityConfigError, match="not writable"):
        bind_receivers(_config(keys), "/auv2/dispatch", directory)


def test_a_replay_state_that_cannot_be_saved_is_counted_and_not_marked_seen(keys, tmp_path):
    sender, _ = secured_codec(keys, src=1, state_dir=tmp_path / "tx")
    receiver, codec = secured_codec(keys)
    guard = ReplayGuard(str(tmp_path / "rx.json"))
    codec.bind_replay_guard(guard)
    packet = seal(sender, [(5, String(data="go"))])
    guard.path = os.path.join(unwritable_dir(tmp_path), "rx.json")   # the disk fails now
    messages, outcome = open_packet(receiver, *packet, src=1)
    assert (messages, outcome) == ([], "auth_state_failed")
    guard.path = str(tmp_path / "rx.json")                            # and recovers
    messages, outcome = open_packet(receiver, *packet, src=1)
    assert outcome == "packets_authenticated" and [m.data for _, m in messages] == ["go"]
    assert open_packet(receiver, *packet, src=1)[1] == "auth_replayed"


def test_a_lost_counter_state_refuses_to_send_until_acknowledged(keys, tmp_path):
    first, _ = secured_codec(keys, src=1, state_dir=tmp_path / "state")
    assert seal(first, [(6, UInt8(data=1))])[0]
    forget_sender_counters()                                # restart with the directory lost
    with pytest.raises(CounterStateMissing, match="reuse nonces"):
        secured_codec(keys, src=1, state_dir=tmp_path / "lost", fresh=False)
    with pytest.raises(SecurityConfigError, match="security_fresh_key_ids"):
        bind_senders(_config(keys), 1, str(tmp_path / "lost"))
    # the operator's acknowledgement (the parameter), for this key id only
    assert bind_senders(_config(keys), 1, str(tmp_path / "lost"), fresh_key_ids=[1]) == 1
    forget_sender_counters()
    with pytest.raises(CounterStateMissing):
        bind_senders(_config(keys), 1, str(tmp_path / "other"), fresh_key_ids=[2])
    # the intact directory goes on without any acknowledgement
    forget_sender_counters()
    assert bind_senders(_config(keys), 1, str(tmp_path / "state")) == 1


def test_a_key_marked_new_starts_once_per_src(keys, tmp_path):
    state = str(tmp_path / "state")
    mark_key_new(state, _config(keys).packet_codecs[0].packet_codec.keyring.send_key.fingerprint)
    assert bind_senders(_config(keys), 1, state) == 1       # first use: no friction
    assert bind_senders(_config(keys), 2, state) == 1       # another src of this vehicle
    forget_sender_counters()
    for name in os.listdir(state):
        if name.endswith("src1.counter"):
            os.unlink(os.path.join(state, name))            # src 1's counter state is lost
    with pytest.raises(CounterStateMissing):
        bind_senders(_config(keys), 1, state)
    assert bind_senders(_config(keys), 2, state) == 1       # src 2's is intact


def test_the_key_tool_makes_a_key_file_whose_first_start_needs_nothing_else(tmp_path, capsys):
    forget_sender_counters()
    key_file, state = tmp_path / "keys" / "fleet.keys", str(tmp_path / "state")
    assert security_key_main(["add", str(key_file), "--state-dir", state]) == 0
    assert (key_file.stat().st_mode & 0o777) == 0o600
    assert bind_senders(_config(str(key_file)), 1, state) == 1
    assert security_key_main(["add", str(key_file), "--state-dir", state]) == 0   # rotation
    ring = _config(str(key_file)).packet_codecs[0].packet_codec.keyring
    assert sorted(ring.keys) == [1, 2] and ring.send_key_id == 2
    secret = ring.keys[2].secret.hex()
    assert secret not in capsys.readouterr().out
    forget_sender_counters()
    assert bind_senders(_config(str(key_file)), 1, state) == 1
    forget_sender_counters()
    # a copy on another vehicle: refused until mark-new says the key is new there
    with pytest.raises(CounterStateMissing):
        bind_senders(_config(str(key_file)), 3, str(tmp_path / "vehicle2"))
    assert security_key_main(["mark-new", str(key_file), "--state-dir",
                              str(tmp_path / "vehicle2")]) == 0
    assert bind_senders(_config(str(key_file)), 3, str(tmp_path / "vehicle2")) == 1
    assert security_key_main(["mark-new", str(key_file), "--key-id", "7"]) == 1
    assert "no key id 7" in capsys.readouterr().err


def test_a_restarted_receiver_accepts_late_packets_and_counter_sharing_senders(keys, tmp_path):
    state = str(tmp_path / "state")
    sender, _ = secured_codec(keys, src=1, state_dir=state)
    packets = [seal(sender, [(6, UInt8(data=n))]) for n in range(6)]
    receiver, codec = secured_codec(keys)
    codec.bind_replay_guard(ReplayGuard(str(tmp_path / "rx.json")))
    for n in (0, 1, 2, 4, 5):                               # 3 is delayed
        assert open_packet(receiver, *packets[n], src=1)[1] == "packets_authenticated"
    restarted, codec = secured_codec(keys)
    codec.bind_replay_guard(ReplayGuard(str(tmp_path / "rx.json")))
    assert open_packet(restarted, *packets[3], src=1)[1] == "packets_authenticated"
    assert [open_packet(restarted, *packets[n], src=1)[1] for n in (3, 4, 0)] == \
        ["auth_replayed"] * 3
    # two sender processes sharing one counter file: blocks 32.. and 64.. interleave
    path = next(os.path.join(state, p) for p in os.listdir(state) if p.endswith(".counter"))
    fast, slow = SenderCounter(path), SenderCounter(path)
    fast_counters = [fast.next() for _ in range(3)]
    slow_counters = [slow.next() for _ in range(3)]
    assert max(fast_counters) < min(slow_counters)
    guard = ReplayGuard(str(tmp_path / "rx2.json"))
    assert [guard.check("fp", 1, c) for c in slow_counters] == ["ok"] * 3
    guard = ReplayGuard(str(tmp_path / "rx2.json"))         # restart before the slower one
    assert [guard.check("fp", 1, c) for c in fast_counters] == ["ok"] * 3
    assert [guard.check("fp", 1, c) for c in fast_counters + slow_counters] == \
        ["replayed"] * 6


def test_a_replay_state_of_the_older_format_counts_everything_up_to_it_as_seen(tmp_path):
    (tmp_path / "rx.json").write_text('{"fp:1": 10}')
    guard = ReplayGuard(str(tmp_path / "rx.json"))
    assert [guard.check("fp", 1, c) for c in (9, 10, 11)] == ["replayed", "replayed", "ok"]


def test_a_packet_re_addressed_to_another_dest_does_not_verify(keys, tmp_path):
    sender, _ = secured_codec(keys, src=1, state_dir=tmp_path / "state")
    receiver, _ = secured_codec(keys)
    packet = seal(sender, [(5, String(data="surface"))], dest=9)
    assert open_packet(receiver, *packet, src=1, dest=12)[1] == "auth_failed"
    messages, outcome = open_packet(receiver, *packet, src=1, dest=9)
    assert outcome == "packets_authenticated" and [m.data for _, m in messages] == ["surface"]
    # the codec header byte is bound too: the same sealed bytes under another header fail
    mini, data = packet
    other = parse_codec_config([secured_entry(keys, header=(0xA6,))], "cfg.yaml")
    assert other.packet_codecs[0].packet_codec.decode(
        bytes([0xA6]) + bytes(mini[1:]), data, other.packet_codecs[0].codecs_by_id(),
        rx(1, 9)).counters == {"auth_failed": 1}


def test_a_packet_of_the_format_before_the_dest_binding_does_not_verify(keys, tmp_path,
                                                                        monkeypatch):
    from acomms_core.security import aead

    assert aead.VERSION == 2
    sender, _ = secured_codec(keys, src=1, state_dir=tmp_path / "state")
    receiver, _ = secured_codec(keys)
    monkeypatch.setattr(aead, "VERSION", 1)         # a peer of the version 1 format
    old_peer = seal(sender, [(5, String(data="hello"))], dest=9)
    monkeypatch.setattr(aead, "VERSION", 2)
    assert open_packet(receiver, *old_peer, src=1, dest=9)[1] == "auth_failed"


def test_a_counter_state_that_cannot_be_saved_at_run_time_sends_nothing_with_one_reason(
        keys, tmp_path):
    sender, codec = secured_codec(keys, src=1, state_dir=tmp_path / "state")
    counter = codec._counter
    counter._next = counter._end                             # the reserved block is used up
    counter.path = os.path.join(unwritable_dir(tmp_path), "tx.counter")   # and the disk fails
    with pytest.raises(ValueError, match="cannot be saved .*authenticated packet not sent"):
        seal(sender, [(6, UInt8(data=1))])
