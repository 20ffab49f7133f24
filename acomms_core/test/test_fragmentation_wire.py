"""Fragment wire format, ack tracker, sender and reassembler (ROS-free, issue 15)."""

from __future__ import annotations

import pytest
from bitstring import Bits, ConstBitStream
from hypothesis import given, settings
from hypothesis import strategies as st

from acomms_core.fragmentation.ack import acked_blocks, build_ack, null_ack
from acomms_core.fragmentation.ranges import complement, from_ranges, to_ranges
from acomms_core.fragmentation.receiver import Reassembler
from acomms_core.fragmentation.sender import (
    ACKED,
    LOST,
    START_COPIES,
    Fragmenter,
    FragmentRefused,
)
from acomms_core.fragmentation.settings import (
    FragmentationSettings,
    check_fragmentation_values,
)
from acomms_core.fragmentation.wire import (
    Ack,
    ContinuationHeader,
    Fragment,
    StartHeader,
    WireError,
    encode_ack,
    encode_fragment,
    read_ack,
    read_continuation,
    read_start,
)

SETTINGS = FragmentationSettings.from_values({})


def _start(session_id=7, size=10, first=0, last=2, block=16, dest=2):
    header = StartHeader(session_id, 1, dest, 1_700_000_000, block, size, first, last)
    return Fragment(101, header, Bits(uint=5, length=block * (last - first + 1)))


def test_header_sizes_are_the_issue_layout():
    start = encode_fragment(_start(block=8, first=0, last=0))
    assert len(start) == 8 + 14 * 8 + 8      # codec id, 14-byte header, one 8-bit block
    cont = encode_fragment(Fragment(101, ContinuationHeader(7, 3, 3), Bits(8)))
    assert len(cont) == 8 + 5 * 8 + 8
    ack = encode_ack(Ack(101, 7, True, ((0, 4),)))
    assert len(ack) == 8 + 6 * 8             # >= 6 bytes after the codec id


def test_round_trips():
    start = _start()
    assert read_start(ConstBitStream(encode_fragment(start))) == start
    cont = Fragment(101, ContinuationHeader(7, 3, 5), Bits(uint=9, length=48))
    assert read_continuation(ConstBitStream(encode_fragment(cont)), lambda sid: 16) == cont
    ack = Ack(9, 200, False, ((3, 4), (8, 9)))
    assert read_ack(ConstBitStream(encode_ack(ack))) == ack


@pytest.mark.parametrize("bits,counter", [
    (lambda b: b[:60], "pieces_truncated"),                 # header cut
    (lambda b: b[:-3], "pieces_truncated"),                 # blocks cut
])
def test_truncated_start_is_refused(bits, counter):
    with pytest.raises(WireError) as info:
        read_start(ConstBitStream(bits(encode_fragment(_start()))))
    assert info.value.counter == counter


def test_corrupt_headers_are_refused():
    bad = Fragment(101, StartHeader(7, 1, 2, 0, 16, 10, 4, 2), Bits(16))   # first > last
    with pytest.raises(WireError, match="outside"):
        read_start(ConstBitStream(encode_fragment(bad)))
    beyond = Fragment(101, StartHeader(7, 1, 2, 0, 16, 3, 0, 5), Bits(96))  # past its size
    with pytest.raises(WireError):
        read_start(ConstBitStream(encode_fragment(beyond)))
    zero_block = encode_fragment(Fragment(101, StartHeader(7, 1, 2, 0, 0, 3, 0, 0), Bits()))
    with pytest.raises(WireError) as info:
        read_start(ConstBitStream(zero_block))
    assert info.value.counter == "pieces_corrupt"
    unsorted = Bits(uint=101, length=8) + Bits(uint=1, length=1) + Bits(uint=2, length=7) \
        + Bits(uint=3, length=8) + Bits(uint=5, length=16) + Bits(uint=6, length=16) \
        + Bits(uint=1, length=16) + Bits(uint=2, length=16)
    with pytest.raises(WireError) as info:
        read_ack(ConstBitStream(unsorted))
    assert info.value.counter == "acks_invalid"


def test_unknown_session_continuation_consumes_the_rest():
    stream = ConstBitStream(encode_fragment(Fragment(101, ContinuationHeader(7, 3, 5),
                                                     Bits(48))) + Bits(32))
    fragment = read_continuation(stream, lambda sid: None)
    assert fragment.data is None and stream.pos == len(stream)


@settings(max_examples=150, deadline=None)
@given(st.sets(st.integers(0, 299)), st.integers(300, 400), st.integers(1, 127))
def test_ack_is_the_shorter_list_and_never_overclaims(received, size, max_ranges):
    ack = build_ack(3, 9, received, size, max_ranges)
    assert 1 <= len(ack.ranges) <= max_ranges
    said = acked_blocks(ack, size)
    if not received:
        assert said is None and ack.is_null
        return
    assert said is not None and said <= received          # never claims a missing block
    arrived, missing = to_ranges(received), complement(to_ranges(received), size)
    if len(arrived) <= max_ranges:
        assert said == received
        assert len(ack.ranges) == max(1, min(len(arrived), len(missing) if 0 in received
                                             else len(arrived)))
    assert not (ack.is_null and received)
    assert encode_ack(ack) == encode_ack(read_ack(ConstBitStream(encode_ack(ack))))


@given(st.sets(st.integers(0, 500)))
def test_ranges_round_trip(blocks):
    assert from_ranges(to_ranges(blocks)) == blocks
    assert from_ranges(complement(to_ranges(blocks), 501)) == set(range(501)) - blocks


def test_null_ack_and_complete_ack():
    assert null_ack(3, 4).is_null and len(encode_ack(null_ack(3, 4))) == 56
    assert build_ack(3, 4, range(10), 10).ranges == ((0, 9),)


def test_settings_validator_and_defaults():
    assert check_fragmentation_values({"fragment_start_id": 5, "fragment_continuation_id": 5,
                                       "fragment_ack_id": 6})
    assert check_fragmentation_values({"fragment_start_id": 5, "fragment_continuation_id": 6,
                                       "fragment_ack_id": 7}) is None
    assert SETTINGS.reserved_ids == (252, 253, 254) and SETTINGS.window_blocks == 512


# -- sender ----------------------------------------------------------------------------------------
def _cost(bits):
    return bits + 8


def test_sender_window_retransmits_only_missing_and_times_out():
    fragmenter = Fragmenter(FragmentationSettings.from_values(
        {}, window_blocks=6, ack_timeout_s=10.0))
    session = fragmenter.open(101, 1, 2, Bits(uint=1, length=100 * 8), 0.0, 80)
    assert session.size_blocks == 10
    sent = []
    for t in (1.0, 2.0, 3.0):
        pieces = fragmenter.plan(session, 8 + 8 + 112 + 2 * 80, _cost, t)
        fragmenter.commit(session, pieces, t)
        sent.append([(p.header.first_block, p.header.last_block) for p in pieces])
    assert sent[0] == [(0, 1)] and sent[1] == [(2, 3)] and sent[2] == [(4, 5)]
    assert fragmenter.plan(session, 10_000, _cost, 4.0) == []        # window full
    # blocks 2-3 lost, 4-5 arrived: the ack shows the gap, only it goes again
    fragmenter.on_ack(2, Ack(101, session.session_id, True, ((0, 1), (4, 5))), 5.0)
    assert session.state[2] == LOST and session.state[4] == ACKED
    again = fragmenter.plan(session, 10_000, _cost, 5.0)
    assert [(p.header.first_block, p.header.last_block) for p in again][0] == (2, 3)
    fragmenter.commit(session, again, 5.0)
    assert fragmenter.counts["blocks_resent"] == 2
    # nothing acked for the ack timeout: in-flight blocks become eligible again
    assert fragmenter.plan(session, 10_000, _cost, 14.0) == []
    assert fragmenter.plan(session, 10_000, _cost, 16.0)
    assert fragmenter.counts["ack_timeouts"] == 1


def test_sender_null_ack_resends_start_and_unknown_acks_are_counted():
    fragmenter = Fragmenter(SETTINGS)
    session = fragmenter.open(101, 1, 2, Bits(400), 0.0, 40)
    fragmenter.commit(session, fragmenter.plan(session, 1000, _cost, 1.0), 1.0)
    fragmenter.on_ack(2, null_ack(101, session.session_id), 2.0)
    pieces = fragmenter.plan(session, 1000, _cost, 2.0)
    assert pieces[0].is_start and fragmenter.counts["null_acks_received"] == 1
    assert fragmenter.on_ack(3, Ack(101, session.session_id, True, ((0, 0),)), 2.0) \
        == "acks_unknown_session"                          # wrong source
    assert fragmenter.on_ack(2, Ack(101, 99, True, ((0, 0),)), 2.0) == "acks_unknown_session"
    assert fragmenter.on_ack(2, Ack(101, session.session_id, True, ((0, 500),)), 2.0) \
        == "acks_invalid"
    assert fragmenter.counts["acks_unknown_session"] == 2


def test_sender_puts_a_start_header_in_the_first_packets_only_and_again_after_a_null_ack():
    fragmenter = Fragmenter(SETTINGS)
    session = fragmenter.open(101, 1, 2, Bits(40 * 40), 0.0, 40)

    def packet(t):
        pieces = fragmenter.plan(session, 8 + 8 + 112 + 2 * 40, _cost, t)
        fragmenter.commit(session, pieces, t)
        return pieces[0].is_start

    starts = [packet(float(t)) for t in range(1, START_COPIES + 3)]
    assert starts == [True] * START_COPIES + [False, False]   # block 0 not acked yet
    fragmenter.on_ack(2, null_ack(101, session.session_id), 10.0)
    assert packet(11.0) and packet(12.0)     # the receiver never learnt the session


def test_sender_refuses_too_many_blocks_and_expires_by_ttl():
    fragmenter = Fragmenter(FragmentationSettings.from_values({}, max_blocks=4,
                                                              session_ttl_s=100.0))
    with pytest.raises(FragmentRefused) as info:
        fragmenter.open(101, 1, 2, Bits(5 * 8), 0.0, 8)
    assert info.value.counter == "rejected_too_large"
    session = fragmenter.open(101, 1, 2, Bits(16), 0.0, 8)
    assert fragmenter.expire(50.0) == []
    ((ended, line),) = fragmenter.expire(101.0)
    assert ended is session and "expired" in line and "0/2 blocks" in line
    assert fragmenter.counts["sessions_expired"] == 1 and not fragmenter.sessions


def test_session_ids_wrap_and_skip_open_ones():
    fragmenter = Fragmenter(FragmentationSettings.from_values({}, max_sessions=255))
    first = fragmenter.open(101, 1, 2, Bits(8), 0.0, 8)
    ids = {fragmenter.open(101, 1, 2, Bits(8), 0.0, 8).session_id for _ in range(200)}
    fragmenter.sessions = {first.session_id: first}
    again = [fragmenter.open(101, 1, 2, Bits(8), 0.0, 8).session_id for _ in range(60)]
    assert first.session_id not in again and len(ids) == 200 and 0 not in again[:57]


# -- reassembler -----------------------------------------------------------------------------------
def _pieces(size_blocks=6, block=16, session_id=3, dest=2, timestamp=100):
    data = Bits(uint=0x1234, length=16) * size_blocks
    start = Fragment(101, StartHeader(session_id, 1, dest, timestamp, block, size_blocks, 0, 1),
                     data[:2 * block])
    conts = [Fragment(101, ContinuationHeader(session_id, b, b), data[b * block:(b + 1) * block])
             for b in range(2, size_blocks)]
    return start, conts, data


def test_reassembly_counts_every_bad_case():
    receiver = Reassembler(FragmentationSettings.from_values({}, own_address=2, max_blocks=50))
    start, conts, data = _pieces()
    early = receiver.receive(1, 2, conts[0], 0.0)             # continuation before start
    assert early.outcome == "continuation_without_start" and early.ack.is_null
    assert receiver.receive(1, 2, start, 1.0).outcome == "stored"
    assert receiver.receive(1, 2, start, 1.5).outcome == "duplicate_pieces"
    receiver.receive(1, 2, conts[2], 2.0)
    assert receiver.receive(1, 2, conts[1], 3.0).outcome == "pieces_reordered"
    receiver.receive(1, 2, conts[0], 4.0)
    done = receiver.receive(1, 2, conts[3], 5.0)
    assert done.outcome == "completed" and done.message_bits == data
    assert done.ack.is_ack and done.ack.ranges == ((0, 5),)
    late = receiver.receive(1, 2, conts[0], 6.0)              # after completion: acked again
    assert late.outcome == "duplicate_pieces" and late.message_bits is None and late.ack
    big = Fragment(101, StartHeader(9, 1, 2, 0, 16, 51, 0, 0), Bits(16))
    assert receiver.receive(1, 2, big, 7.0).outcome == "too_many_blocks"
    other = Fragment(101, StartHeader(9, 1, 5, 0, 16, 3, 0, 0), Bits(16))
    assert receiver.receive(1, 5, other, 7.0).outcome == "pieces_not_for_us"
    counts = receiver.counts
    assert (counts["continuation_without_start"], counts["duplicate_pieces"],
            counts["pieces_reordered"], counts["too_many_blocks"], counts["pieces_not_for_us"],
            counts["sessions_completed"]) == (1, 2, 2, 1, 1, 1)


def test_wrapped_session_id_replaces_the_open_session_and_ttl_ends_it():
    receiver = Reassembler(FragmentationSettings.from_values({}, session_ttl_s=30.0))
    start, conts, _ = _pieces(timestamp=100)
    receiver.receive(1, 2, start, 0.0)
    newer, newer_conts, newer_data = _pieces(timestamp=900, size_blocks=3)
    receiver.receive(1, 2, newer, 1.0)
    assert receiver.counts["sessions_replaced"] == 1
    done = receiver.receive(1, 2, newer_conts[0], 2.0)
    assert done.message_bits == newer_data
    receiver.receive(1, 2, _pieces(session_id=4)[0], 3.0)
    assert receiver.expire(20.0) == []
    (line,) = receiver.expire(40.0)
    assert "expired" in line and "2/6 blocks" in line and not receiver.sessions


def test_memory_is_bounded():
    receiver = Reassembler(FragmentationSettings.from_values(
        {}, max_open_sessions=2, max_session_bytes=64))
    huge = Fragment(101, StartHeader(1, 1, 2, 0, 255, 100, 0, 0), Bits(255))
    assert receiver.receive(1, 2, huge, 0.0).outcome == "session_too_large"
    for sid in (2, 3):
        receiver.receive(1, 2, _pieces(session_id=sid)[0], 0.0)
    assert receiver.receive(1, 2, _pieces(session_id=4)[0], 0.0).outcome \
        == "sessions_refused_full"
    assert len(receiver.sessions) == 2


@settings(max_examples=40, deadline=None)
@given(st.permutations(range(8)), st.lists(st.integers(0, 7), max_size=6))
def test_any_order_and_duplicates_give_the_message_once(order, duplicates):
    receiver = Reassembler(SETTINGS)
    start, conts, data = _pieces(size_blocks=9)
    pieces = [start] + conts                     # 8 pieces: start (blocks 0-1) + 7
    completed = []
    # pieces before the start are dropped (null ack); the sender then sends them all again
    for index in list(order) + duplicates + list(range(8)) + duplicates:
        result = receiver.receive(1, 2, pieces[index], 0.0)
        if result.message_bits is not None:
            completed.append(result.message_bits)
    assert completed == [data]
