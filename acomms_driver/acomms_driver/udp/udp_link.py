"""A modem over UDP: rate-limited transmit queue, receptions, pings (ROS-free, wall clock).

`UdpLink(settings, callbacks)` binds `local_host:local_port` (0: any free port; see `port`)
and sends every datagram (`datagram.py`) to `remote_host:remote_port`, no handshake. A sender
thread takes packets from the queue in order and lets each leave when the token bucket
(`token_bucket.py`, `rate_bps` over the datagram plus `overhead_bytes` of IP/UDP headers) allows:
with a backlog the link carries exactly the configured rate. Pings and ping replies go ahead of
queued packets (alternating with them under a backlog) and pay the same tokens.

For tests and benches: `loss_probability` drops sent datagrams with a seeded generator (after
they paid their tokens: they were on the wire), and `link_delay_s` holds every received datagram
that long before it is handled (a satellite hop). Callbacks run on the link's threads:
`on_packet(packet, arrival_s)`, `on_sent(packet, start_s)`, `on_log(level, text)`,
`check_packet(packet)` (a reason to refuse a received packet, e.g. the modem profile's limits).

Hostile peers (issue 28): every received datagram is decoded and checked before any callback
(`datagram.decode`, then `check_packet`); refusals are counted as `refused_<reason>` and the
first of each reason is logged. An unexpected exception while handling a datagram is counted
(`rx_exceptions`), logged once per exception type, and receiving goes on; socket errors are
counted (`rx_socket_errors`). `supervise()` restarts a thread that ended anyway
(`thread_restarts`) and `health()` says why receiving is impossible (None when it works).
Pings and ping replies wait in their own queue of `max_reply_queue_length` (a reply that finds
it full is dropped: `ping_replies_dropped`); when both queues wait, at most one of them leaves
per user packet, so a ping flood takes at most half the link.
"""

from __future__ import annotations

import collections
import dataclasses
import random
import socket
import struct
import threading
import time
from collections.abc import Callable

from acomms_driver.micromodem.packet_rules import ModemPacket
from acomms_driver.udp import datagram
from acomms_driver.udp.token_bucket import TokenBucket

MAX_DATAGRAM_BYTES = 65507
MAX_DELAYED_DATAGRAMS = 1000  # link_delay_s: received datagrams held at once (more: dropped)
PING_ID = struct.Struct("!I")


@dataclasses.dataclass
class UdpLinkSettings:
    src: int
    remote_host: str = "127.0.0.1"
    remote_port: int = 0
    local_host: str = "127.0.0.1"
    local_port: int = 0
    rate_bps: float = 9600.0
    overhead_bytes: int = 28          # IPv4 (20) + UDP (8) headers, counted against the rate
    burst_bytes: int = 1500           # bucket depth (bigger datagrams leave it in debt)
    loss_probability: float = 0.0
    loss_seed: int = 0
    link_delay_s: float = 0.0
    max_queue_length: int = 100
    max_reply_queue_length: int = 8   # pings and ping replies waiting to be sent


def queue_reply(replies: collections.deque, kind: int, packet: ModemPacket, limit: int,
                counters: collections.Counter) -> bool:
    """Queue a ping (ours: ahead of replies, evicting the newest reply when `limit` are waiting)
    or a ping reply (dropped at the limit); False when it was not queued (counted)."""
    full = len(replies) >= limit
    if kind == datagram.KIND_PING:
        if full:
            evicted = next((item for item in reversed(replies)
                            if item[0] == datagram.KIND_PING_REPLY), None)
            if evicted is None:
                counters["pings_dropped"] += 1
                return False
            replies.remove(evicted)
            counters["ping_replies_dropped"] += 1
        replies.appendleft((kind, packet))
    elif full:
        counters["ping_replies_dropped"] += 1
        return False
    else:
        replies.append((kind, packet))
    return True


@dataclasses.dataclass
class UdpLinkCallbacks:
    on_packet: Callable[[ModemPacket, float], None] = lambda packet, arrival_s: None
    on_sent: Callable[[ModemPacket, float], None] = lambda packet, start_s: None
    on_log: Callable[[str, str], None] = lambda level, text: None
    check_packet: Callable[[ModemPacket], str | None] = lambda packet: None


class UdpLink:
    def __init__(self, settings: UdpLinkSettings, callbacks: UdpLinkCallbacks | None = None):
        self.settings = settings
        self.callbacks = callbacks or UdpLinkCallbacks()
        self.counters = collections.Counter()
        self.port = 0
        self._sock: socket.socket | None = None
        self._queue: collections.deque[tuple[int, ModemPacket]] = collections.deque()
        self._replies: collections.deque[tuple[int, ModemPacket]] = collections.deque()
        self._last_was_reply = False
        self._logged: set[str] = set()   # refusal reasons / exception types logged once
        self._rx_error: str | None = None  # the last recv error, until a recv succeeds
        self._delayed = 0
        self._wake = threading.Condition()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._loss = random.Random(settings.loss_seed)
        self._bucket = TokenBucket(self._rate_bytes(), self._depth(), time.monotonic())
        self._pings: dict[int, dict] = {}
        self._next_ping_id = 1

    def _rate_bytes(self) -> float:
        return self.settings.rate_bps / 8.0

    def _depth(self) -> float:
        return float(max(1, self.settings.burst_bytes))

    def apply(self, settings: UdpLinkSettings) -> None:
        """New settings while running (destination, rate, loss, delay); the socket stays."""
        with self._wake:
            self.settings = settings
            self._bucket.set_rate(self._rate_bytes(), time.monotonic())
            self._bucket.depth_bytes = self._depth()
            self._wake.notify_all()

    # ------------------------------------------------------------------ lifecycle
    def open(self) -> None:
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
        sock.bind((self.settings.local_host, self.settings.local_port))
        sock.settimeout(0.1)
        self._sock, self.port = sock, sock.getsockname()[1]
        self._stop.clear()
        self._rx_error = None
        self._threads = [self._start(self._send_loop, "udp_tx"),
                         self._start(self._receive_loop, "udp_rx")]

    @staticmethod
    def _start(target, name: str) -> threading.Thread:
        thread = threading.Thread(target=target, daemon=True, name=name)
        thread.start()
        return thread

    def supervise(self) -> None:
        """Restart a send or receive thread that ended while the link is open."""
        if self._sock is None or self._stop.is_set():
            return
        for i, thread in enumerate(self._threads):
            if not thread.is_alive():
                self.counters["thread_restarts"] += 1
                self._log_once(f"thread:{thread.name}", f"udp link: {thread.name} thread had "
                               "ended; restarted (counted as thread_restarts)")
                target = self._send_loop if thread.name == "udp_tx" else self._receive_loop
                self._threads[i] = self._start(target, thread.name)

    def health(self) -> str | None:
        """Why receiving is impossible now, or None."""
        if self._sock is None:
            return "socket closed"
        if not all(thread.is_alive() for thread in self._threads):
            return "a link thread has stopped"
        return None if self._rx_error is None else f"receive failing: {self._rx_error}"

    def _log_once(self, key: str, text: str) -> None:
        if key not in self._logged:
            self._logged.add(key)
            self.callbacks.on_log("warn", text)

    def close(self) -> None:
        self._stop.set()
        with self._wake:
            self._wake.notify_all()
        for thread in self._threads:
            thread.join(2.0)
        self._threads = []
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    @property
    def is_open(self) -> bool:
        return self._sock is not None

    def queue_length(self) -> int:
        return len(self._queue)

    def reply_queue_length(self) -> int:
        return len(self._replies)

    # ------------------------------------------------------------------ transmit
    def queue_packet(self, packet: ModemPacket, at_head: bool = False) -> int:
        """Queue a packet (src set to ours); its position, or ValueError when full/closed."""
        if self._sock is None:
            raise ValueError("link is not open")
        packet = dataclasses.replace(packet, src=self.settings.src)
        with self._wake:
            if len(self._queue) >= self.settings.max_queue_length:
                self.counters["queue_full"] += 1
                raise ValueError(f"transmit queue full ({self.settings.max_queue_length})")
            if at_head:
                self._queue.appendleft((datagram.KIND_PACKET, packet))
            else:
                self._queue.append((datagram.KIND_PACKET, packet))
            self._wake.notify_all()
            return 0 if at_head else len(self._queue) - 1

    def _queue_reply(self, kind: int, packet: ModemPacket) -> bool:
        with self._wake:
            queued = queue_reply(self._replies, kind, packet,
                                 self.settings.max_reply_queue_length, self.counters)
            self._wake.notify_all()
            return queued

    def _head(self) -> collections.deque | None:
        """The queue whose head leaves next: replies and packets alternate when both wait."""
        if self._replies and (not self._queue or not self._last_was_reply):
            return self._replies
        return self._queue or None

    def _next_datagram(self):
        """Wait for the head of the queue and its tokens; (kind, packet, bytes) or None."""
        with self._wake:
            while not self._stop.is_set():
                queue = self._head()
                if queue is None:
                    self._wake.wait(0.5)
                    continue
                kind, packet = queue[0]
                data = datagram.encode(kind, packet)
                wire_bytes = len(data) + self.settings.overhead_bytes
                wait_s = self._bucket.wait_s(wire_bytes, time.monotonic())
                if wait_s > 0:
                    self._wake.wait(wait_s)
                    continue
                self._bucket.take(wire_bytes, time.monotonic())
                queue.popleft()
                self._last_was_reply = queue is self._replies
                return kind, packet, data
        return None

    def _send_loop(self) -> None:
        while True:
            item = self._next_datagram()
            if item is None:
                return
            kind, packet, data = item
            start_s = time.time()
            settings = self.settings
            self.counters["datagrams_sent"] += 1
            self.counters["wire_bytes_sent"] += len(data) + settings.overhead_bytes
            if settings.loss_probability and self._loss.random() < settings.loss_probability:
                self.counters["datagrams_lost"] += 1
            else:
                try:
                    self._sock.sendto(data, (settings.remote_host, settings.remote_port))
                except (OSError, AttributeError) as exc:
                    self.counters["send_errors"] += 1
                    self.callbacks.on_log("warn", f"udp send failed: {exc}")
                    continue
            if kind == datagram.KIND_PACKET:
                self.counters["packets_sent"] += 1
                self.callbacks.on_sent(packet, start_s)

    # ------------------------------------------------------------------ receive
    def _receive_loop(self) -> None:
        while not self._stop.is_set():
            sock = self._sock
            if sock is None:
                return
            try:
                data = sock.recv(MAX_DATAGRAM_BYTES + 1)
            except TimeoutError:  # the socket works; nothing arrived
                self._rx_error = None
                continue
            except OSError as exc:
                if self._stop.is_set() or self._sock is None:
                    return
                self._receive_failed(exc)
                continue
            self._rx_error = None
            try:
                self._received(data)
            except Exception as exc:  # a bug or a callback's failure must not end receiving
                self.counters["rx_exceptions"] += 1
                self._log_once(f"exception:{type(exc).__name__}",
                               f"udp receive: unexpected {type(exc).__name__}: {exc}; counted "
                               "as rx_exceptions, receiving goes on")

    def _receive_failed(self, exc: OSError) -> None:
        self.counters["rx_socket_errors"] += 1
        self._rx_error = str(exc)
        self._log_once(f"socket:{exc.errno}", f"udp receive failed: {exc}; retrying "
                       "(counted as rx_socket_errors)")
        self._stop.wait(0.1)

    def _received(self, data: bytes) -> None:
        delay_s = self.settings.link_delay_s
        if delay_s <= 0:
            self._handle(data, time.time())
            return
        with self._wake:
            if self._delayed >= MAX_DELAYED_DATAGRAMS:
                self._refuse("delay_full", f"{MAX_DELAYED_DATAGRAMS} datagrams already held "
                             "by link_delay_s")
                return
            self._delayed += 1
        timer = threading.Timer(delay_s, self._handle_delayed, (data, time.time() + delay_s))
        timer.daemon = True
        timer.start()

    def _handle_delayed(self, data: bytes, arrival_s: float) -> None:
        with self._wake:
            self._delayed -= 1
        try:
            self._handle(data, arrival_s)
        except Exception as exc:
            self.counters["rx_exceptions"] += 1
            self._log_once(f"exception:{type(exc).__name__}",
                           f"udp receive: unexpected {type(exc).__name__}: {exc}")

    def _refuse(self, reason: str, text: str) -> None:
        self.counters[f"refused_{reason}"] += 1
        self._log_once(f"refused:{reason}", f"udp datagram refused: {text} (further ones "
                       f"counted as refused_{reason})")

    def _handle(self, data: bytes, arrival_s: float) -> None:
        try:
            kind, packet = datagram.decode(data)
        except datagram.DatagramError as exc:
            self._refuse(exc.reason, str(exc))
            return
        if packet.src == self.settings.src:
            self.counters["own_datagrams_ignored"] += 1
        elif kind == datagram.KIND_PACKET:
            reason = self.callbacks.check_packet(packet)
            if reason is not None:
                self._refuse("profile", reason)
                return
            self.counters["packets_received"] += 1
            self.callbacks.on_packet(packet, arrival_s)
        elif kind == datagram.KIND_PING:
            self._answer_ping(packet)
        else:
            self._ping_replied(packet, arrival_s)

    # ------------------------------------------------------------------ pings
    def ping(self, dest: int, rate: int, payload: bytes, timeout_s: float) -> float | None:
        """Round trip to dest's link; the one-way time (half the round trip) or None."""
        if self._sock is None:
            return None
        with self._wake:
            ping_id, self._next_ping_id = self._next_ping_id, self._next_ping_id + 1
        pending = {"event": threading.Event(), "sent_s": 0.0, "owtt": None}
        self._pings[ping_id] = pending
        pending["sent_s"] = time.time()
        if not self._queue_reply(datagram.KIND_PING, ModemPacket(
                self.settings.src, dest, 0, rate, rate, PING_ID.pack(ping_id) + bytes(payload))):
            self._pings.pop(ping_id, None)
            return None
        self.counters["pings_sent"] += 1
        answered = pending["event"].wait(timeout_s)
        self._pings.pop(ping_id, None)
        return pending["owtt"] if answered else None

    def _answer_ping(self, packet: ModemPacket) -> None:
        if packet.dest != self.settings.src:
            return
        if self._queue_reply(datagram.KIND_PING_REPLY, ModemPacket(
                self.settings.src, packet.src, 0, packet.miniframe_rate, packet.dataframe_rate,
                packet.miniframe_bytes)):
            self.counters["pings_answered"] += 1

    def _ping_replied(self, packet: ModemPacket, arrival_s: float) -> None:
        if packet.dest != self.settings.src or len(packet.miniframe_bytes) < PING_ID.size:
            return
        pending = self._pings.get(PING_ID.unpack_from(packet.miniframe_bytes)[0])
        if pending is None:
            self.counters["ping_replies_unmatched"] += 1
            return
        pending["owtt"] = (arrival_s - pending["sent_s"]) / 2.0
        pending["event"].set()
