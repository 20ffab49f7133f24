"""Narrow-link UDP (ROS-free): token bucket, datagrams, the link on localhost, and the
silverhammer-format streamer/receiver. Ports are ephemeral."""

from __future__ import annotations

import struct
import time

import pytest

from acomms_driver.micromodem.packet_rules import ModemPacket
from acomms_driver.udp import datagram
from acomms_driver.udp.stream import (
    HEADER_BYTES,
    Reassembler,
    StreamReceiver,
    StreamSender,
    split,
)
from acomms_driver.udp.token_bucket import TokenBucket
from acomms_driver.udp.udp_link import UdpLink, UdpLinkCallbacks, UdpLinkSettings


def _drain(bucket: TokenBucket, sizes: list[int], start_s: float = 0.0) -> list[float]:
    """Send times of a backlog through the bucket on an exact, simulated clock."""
    now, times = start_s, []
    for size in sizes:
        now += bucket.wait_s(size, now)
        assert bucket.wait_s(size, now) == 0.0
        bucket.take(size, now)
        times.append(now)
    return times


def test_token_bucket_is_exact_with_a_backlog():
    rate, depth, size = 1000.0, 300.0, 250
    bucket = TokenBucket(rate, depth, 0.0)
    times = _drain(bucket, [size] * 41)
    # the first datagram uses the full bucket; after that one datagram per size / rate
    assert times[0] == 0.0
    assert times[-1] == pytest.approx((41 * size - depth) / rate, abs=1e-9)
    for i, t in enumerate(times):  # never more than rate * t + depth on the wire
        assert (i + 1) * size <= rate * t + depth + 1e-9


def test_token_bucket_lets_an_oversized_datagram_through_into_debt():
    bucket = TokenBucket(100.0, 50.0, 0.0)
    times = _drain(bucket, [200, 10])
    assert times[0] == 0.0  # full bucket: it may leave, owing 150 bytes
    assert times[1] == pytest.approx((150 + 10) / 100.0)


def test_datagram_round_trip_and_damage():
    packet = ModemPacket(3, 7, 3, 1, 5, b"mini", bytes(range(200)))
    kind, decoded = datagram.decode(datagram.encode(datagram.KIND_PACKET, packet))
    assert kind == datagram.KIND_PACKET and decoded == packet
    with pytest.raises(datagram.DatagramError, match="shorter"):
        datagram.decode(b"\xac\x01")
    with pytest.raises(datagram.DatagramError, match="not a udp_link datagram"):
        datagram.decode(b"\x00" * 20)
    with pytest.raises(datagram.DatagramError, match="announced"):
        datagram.decode(datagram.encode(datagram.KIND_PACKET, packet)[:datagram.HEADER_BYTES])


class _Pair:
    def __init__(self, rate_bps: float, **b_settings):
        self.received: list[tuple[ModemPacket, float]] = []
        self.sent: list[tuple[ModemPacket, float]] = []
        self.b = UdpLink(UdpLinkSettings(2, **b_settings), UdpLinkCallbacks(
            on_packet=lambda p, t: self.received.append((p, t))))
        self.b.open()
        self.a = UdpLink(UdpLinkSettings(1, remote_port=self.b.port, rate_bps=rate_bps,
                                         **b_settings),
                         UdpLinkCallbacks(on_sent=lambda p, t: self.sent.append((p, t))))
        self.a.open()
        self.b.apply(UdpLinkSettings(2, remote_port=self.a.port, **b_settings))

    def wait(self, predicate, timeout_s: float = 5.0) -> bool:
        end = time.monotonic() + timeout_s
        while time.monotonic() < end and not predicate():
            time.sleep(0.01)
        return predicate()

    def close(self):
        self.a.close()
        self.b.close()


def test_link_carries_packets_at_the_configured_rate():
    pair = _Pair(80000.0)
    try:
        packets = [ModemPacket(-1, 2, 3, 1, 5, b"", bytes([i]) * 472) for i in range(9)]
        for packet in packets:
            pair.a.queue_packet(packet)
        assert pair.wait(lambda: len(pair.received) == len(packets))
        got = [p for p, _ in pair.received]
        assert [p.dataframe_bytes for p in got] == [p.dataframe_bytes for p in packets]
        assert all(p.src == 1 for p in got)
        wire = 472 + datagram.HEADER_BYTES + 28  # 511 bytes: 4088 bits
        # Never faster than the bucket allows: after the 1500-byte burst, 4088 bits per 80 kbit/s.
        # (Exactness itself is the pure TokenBucket test; a loaded machine may only be slower.)
        times = [t for _, t in pair.sent]
        for i in range(1, len(times)):
            earliest = ((i + 1) * wire - 1500) / 10000.0  # bytes beyond the burst / (bytes/s)
            assert times[i] - times[0] >= earliest - 0.005, (i, times[i] - times[0], earliest)
        assert times[-1] - times[0] < ((len(times) * wire - 1500) / 10000.0) * 2 + 1.0
        assert pair.a.counters["wire_bytes_sent"] == len(packets) * wire
    finally:
        pair.close()


def _lossy_run() -> list[int]:
    pair = _Pair(1e7, loss_probability=0.3, loss_seed=5)
    try:
        for i in range(40):
            pair.a.queue_packet(ModemPacket(-1, 2, 3, 1, 1, b"", bytes([i])))
        assert pair.wait(lambda: pair.a.counters["datagrams_sent"] == 40)
        pair.wait(lambda: len(pair.received) == 40 - pair.a.counters["datagrams_lost"], 2.0)
        return sorted(p.dataframe_bytes[0] for p, _ in pair.received)
    finally:
        pair.close()


def test_seeded_loss_drops_the_same_datagrams_every_time():
    first, second = _lossy_run(), _lossy_run()
    assert first == second and 15 < len(first) < 40


def test_ping_measures_half_the_round_trip_with_the_added_delay():
    pair = _Pair(1e6, link_delay_s=0.1)
    try:
        owtt = pair.a.ping(2, 1, b"", 2.0)
        assert owtt is not None and 0.099 <= owtt < 0.25  # 0.1 s each way; load only adds
        assert pair.a.ping(9, 1, b"", 0.3) is None  # nobody answers for SRC 9
    finally:
        pair.close()


def test_stream_header_is_big_endian_and_splits_whole_messages():
    data = bytes(range(256)) * 10
    packets = split(0x01020304, data, 1000)
    assert len(packets) == 3
    assert packets[1][:HEADER_BYTES] == bytes.fromhex("01020304" "00000001" "00000003")
    assert struct.unpack("!III", packets[2][:12]) == (0x01020304, 2, 3)
    assert b"".join(p[HEADER_BYTES:] for p in packets) == data
    assert split(7, b"", 100) == [struct.pack("!III", 7, 0, 1)]


def test_reassembler_drops_incomplete_sequences_and_counts_them():
    reassembler = Reassembler()
    first, second, third = (split(i, bytes([i]) * 25, 10) for i in (1, 2, 3))
    assert reassembler.feed(first[2]) is None and reassembler.feed(first[0]) is None
    # packet 1 of sequence 1 is lost; sequence 2 arrives out of order and complete
    assert reassembler.feed(second[1]) is None
    assert reassembler.feed(second[0]) is None
    assert reassembler.feed(second[2]) == bytes([2]) * 25
    assert reassembler.feed(first[1]) is None  # too late: sequence 1 was given up
    assert reassembler.feed(second[0]) is None  # late duplicate of a completed sequence
    assert reassembler.feed(third[0]) is None
    reassembler.flush()
    counters = reassembler.counters
    assert counters["sequences_complete"] == 1
    assert counters["sequences_incomplete"] == 2
    assert counters["packets_discarded"] == 3 and counters["packets_late"] == 2
    assert reassembler.feed(b"short") is None and counters["packets_too_short"] == 1
    assert reassembler.feed(struct.pack("!III", 9, 5, 5)) is None
    assert counters["packets_bad_header"] == 1


def test_streamer_to_receiver_on_localhost():
    messages = []
    receiver = StreamReceiver(("127.0.0.1", 0), messages.append)
    sender = StreamSender(("127.0.0.1", receiver.port), 1000, 5000.0)
    try:
        payloads = [bytes([i]) * 4500 for i in range(3)]
        for payload in payloads:
            sender.submit(payload)
            end = time.monotonic() + 5.0
            while not sender.idle() and time.monotonic() < end:
                time.sleep(0.005)
        end = time.monotonic() + 2.0
        while len(messages) < 3 and time.monotonic() < end:
            time.sleep(0.01)
    finally:
        sender.close()
        receiver.close()
    assert messages == payloads
    assert sender.counters["packets_sent"] == 15
    assert receiver.reassembler.counters["sequences_complete"] == 3


# -- issue 28: hostile datagrams, a failing receive path, ping floods -------------------------
def _raw(kind: int, src: int, dest: int, mini: bytes = b"", data: bytes = b"") -> bytes:
    return datagram.HEADER.pack(datagram.MAGIC, kind, src, dest, 3, 1, 5, len(mini)) + mini + data


@pytest.mark.parametrize("data, reason", [
    (b"\xac\x01", "short"),
    (b"\x00" * 20, "bad_header"),
    (_raw(1, 3, 2)[:-2] + b"\x00\x05", "truncated"),
    (_raw(1, -3, 2), "address"),
    (_raw(1, 3, 256), "address"),
    (_raw(1, 3, 2, data=bytes(32768)), "oversize"),
    (_raw(1, 3, 2, mini=bytes(65000)), "oversize"),
    (_raw(2, 3, 2, mini=b"id"), "ping_size"),
    (_raw(2, 3, 2, mini=bytes(4 + 33)), "ping_size"),
    (_raw(3, 3, 2, mini=bytes(4), data=b"x"), "ping_size"),
])
def test_decode_refuses_what_cannot_become_a_message_with_a_reason(data, reason):
    with pytest.raises(datagram.DatagramError) as info:
        datagram.decode(data)
    assert info.value.reason == reason
    # the largest representable frames and ping pass
    datagram.decode(_raw(1, 3, 2, mini=bytes(32767), data=bytes(32767)))
    datagram.decode(_raw(2, 3, 2, mini=bytes(4 + 32)))


class _Sink:
    """A plain UDP socket standing in for a hostile peer / the far end."""

    def __init__(self):
        import socket
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.settimeout(0.05)
        self.port = self.sock.getsockname()[1]

    def send(self, port: int, data: bytes) -> None:
        self.sock.sendto(data, ("127.0.0.1", port))

    def receive(self, count: int, timeout_s: float) -> list[tuple[int, ModemPacket]]:
        got, end = [], time.monotonic() + timeout_s
        while len(got) < count and time.monotonic() < end:
            try:
                got.append(datagram.decode(self.sock.recv(70000)))
            except TimeoutError:
                continue
        return got


def _wait(predicate, timeout_s: float = 5.0) -> bool:
    end = time.monotonic() + timeout_s
    while time.monotonic() < end and not predicate():
        time.sleep(0.01)
    return predicate()


def test_receiving_survives_a_failing_callback_and_a_profile_refusal():
    received, logs = [], []

    def on_packet(packet, arrival_s):
        if packet.dataframe_bytes == b"boom":
            raise OverflowError("int16 out of range")
        received.append(packet)

    link = UdpLink(UdpLinkSettings(2), UdpLinkCallbacks(
        on_packet=on_packet, on_log=lambda level, text: logs.append(text),
        check_packet=lambda p: "too big" if len(p.dataframe_bytes) > 100 else None))
    link.open()
    peer = _Sink()
    try:
        for _ in range(3):
            peer.send(link.port, _raw(1, 3, 2, data=b"boom"))
            peer.send(link.port, _raw(1, 3, 2, data=bytes(101)))
        peer.send(link.port, _raw(1, 3, 2, data=b"fine"))
        assert _wait(lambda: received), dict(link.counters)
        assert received[0].dataframe_bytes == b"fine"
        assert link.counters["rx_exceptions"] == 3 and link.counters["refused_profile"] == 3
        assert link.health() is None
        # logged once per kind, not once per datagram
        assert sum("OverflowError" in text for text in logs) == 1
        assert sum("refused_profile" in text for text in logs) == 1
    finally:
        link.close()
        peer.sock.close()


class _FailingSocket:
    def __init__(self, sock):
        self.sock = sock

    def recv(self, size):
        raise OSError(100, "network is down")

    def __getattr__(self, name):
        return getattr(self.sock, name)


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_a_stopped_receive_thread_is_restarted_and_health_says_why_receiving_fails():
    received = []

    def on_packet(packet, arrival_s):
        if packet.dataframe_bytes == b"exit":
            raise SystemExit  # not an Exception: the receive thread ends
        received.append(packet)

    link = UdpLink(UdpLinkSettings(2), UdpLinkCallbacks(on_packet=on_packet))
    link.open()
    peer = _Sink()
    try:
        peer.send(link.port, _raw(1, 3, 2, data=b"exit"))
        assert _wait(lambda: link.health() == "a link thread has stopped")
        link.supervise()
        assert link.counters["thread_restarts"] == 1 and link.health() is None
        peer.send(link.port, _raw(1, 3, 2, data=b"after"))
        assert _wait(lambda: received) and received[0].dataframe_bytes == b"after"
        real = link._sock
        link._sock = _FailingSocket(real)
        assert _wait(lambda: link.health() == "receive failing: [Errno 100] network is down")
        assert link.counters["rx_socket_errors"] >= 1
        link._sock = real
        peer.send(link.port, _raw(1, 3, 2, data=b"again"))
        assert _wait(lambda: len(received) == 2 and link.health() is None)
    finally:
        link.close()
        peer.sock.close()


def _settled(count, quiet_s: float = 0.5, timeout_s: float = 10.0) -> int:
    """count() once it has not changed for quiet_s (wall clock: a socket's arrivals)."""
    deadline, last, since = time.monotonic() + timeout_s, -1, time.monotonic()
    while time.monotonic() < deadline:
        value = count()
        if value != last:
            last, since = value, time.monotonic()
        elif time.monotonic() - since >= quiet_s:
            break
        time.sleep(0.05)
    return last


def test_a_ping_flood_is_bounded_and_user_packets_alternate_with_the_replies():
    far_end = _Sink()
    # 500 bytes/s: a 43-byte reply on the wire every 86 ms, so the flood outruns the link
    link = UdpLink(UdpLinkSettings(2, remote_port=far_end.port, rate_bps=4000.0,
                                   burst_bytes=50))
    link.open()
    try:
        pings = 3000
        for i in range(pings):
            far_end.send(link.port, _raw(2, 9, 2, mini=i.to_bytes(4, "big")))
        # the kernel may drop part of a burst on a loaded machine: judge what reached the link
        handled = _settled(lambda: link.counters["pings_answered"]
                           + link.counters["ping_replies_dropped"])
        assert handled >= pings * 0.5, dict(link.counters)
        assert link.reply_queue_length() <= 8
        assert link.counters["ping_replies_dropped"] >= handled * 0.9, dict(link.counters)
        already_sent = link.counters["datagrams_sent"]
        for i in range(3):
            link.queue_packet(ModemPacket(-1, 9, 3, 1, 5, b"", bytes([i]) * 10))
        sent = far_end.receive(already_sent + 7, 5.0)
        kinds = [kind for kind, _ in sent[already_sent:]]
        # at most one reply per user packet while both wait: all three within 7 datagrams
        assert kinds.count(datagram.KIND_PACKET) == 3, (already_sent, kinds)
    finally:
        link.close()
        far_end.sock.close()


def test_reply_queue_bound_keeps_our_pings_ahead_and_counts_what_it_drops():
    import collections

    from acomms_driver.udp.udp_link import queue_reply
    replies, counters = collections.deque(), collections.Counter()
    reply = [ModemPacket(2, 9, 0, 1, 1, bytes([i]) * 4) for i in range(4)]
    assert all(queue_reply(replies, datagram.KIND_PING_REPLY, p, 3, counters) for p in reply[:3])
    assert not queue_reply(replies, datagram.KIND_PING_REPLY, reply[3], 3, counters)
    ping = ModemPacket(2, 3, 0, 1, 1, b"ping")
    assert queue_reply(replies, datagram.KIND_PING, ping, 3, counters)  # evicts the newest reply
    assert [p for _, p in replies] == [ping, reply[0], reply[1]]
    assert counters["ping_replies_dropped"] == 2
    for _ in range(2):
        assert queue_reply(replies, datagram.KIND_PING, ping, 3, counters)
    assert not queue_reply(replies, datagram.KIND_PING, ping, 3, counters)  # all ours: refused
    assert counters["pings_dropped"] == 1 and len(replies) == 3
