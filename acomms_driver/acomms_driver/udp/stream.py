"""One-way streaming of large messages over UDP in silverhammer's packet format (ROS-free).

Every UDP packet is a 12-byte header and a slice of one serialized message:

| offset | size | field (unsigned 32-bit, big-endian / network byte order) |
|---|---|---|
| 0 | 4 | sequence id (one per message, counting up, wrapping at 2**32) |
| 4 | 4 | packet id (0 .. packet count - 1) |
| 8 | 4 | packet count of this sequence |
| 12 | ... | data: bytes [packet id * packet_bytes, ...) of the message |

`split(sequence_id, data, packet_bytes)` makes the packets; `Reassembler.feed(packet)` returns a
message once every packet of its sequence arrived (any order). A sequence still incomplete when a
packet of another sequence arrives is dropped and counted (`sequences_incomplete`): there is no
retransmission. `StreamSender` paces packets at a fixed `packet_rate_hz`, always sending the
newest message (a message replaced before it started is counted in `messages_replaced`);
`StreamReceiver` listens on a UDP port and hands every complete message to a callback.
"""

from __future__ import annotations

import collections
import socket
import struct
import threading
import time

HEADER = struct.Struct("!III")
HEADER_BYTES = HEADER.size  # 12
MAX_UDP_PAYLOAD = 65507


def split(sequence_id: int, data: bytes, packet_bytes: int) -> list[bytes]:
    """UDP payloads carrying data, at most packet_bytes of data each (an empty message is one
    header-only packet)."""
    if packet_bytes <= 0:
        raise ValueError("packet_bytes must be > 0")
    count = max(1, -(-len(data) // packet_bytes))
    sequence_id %= 2**32
    return [HEADER.pack(sequence_id, i, count) + data[i * packet_bytes:(i + 1) * packet_bytes]
            for i in range(count)]


class Reassembler:
    """Packets in, complete messages out (see module docstring); `counters` say what was lost."""

    def __init__(self, max_packets: int = 1 << 16):
        self.max_packets = max_packets
        self.counters = collections.Counter()
        self._sequence: int | None = None
        self._count = 0
        self._parts: dict[int, bytes] = {}
        self._done: collections.deque[int] = collections.deque(maxlen=16)

    def feed(self, packet: bytes) -> bytes | None:
        self.counters["packets"] += 1
        if len(packet) < HEADER_BYTES:
            self.counters["packets_too_short"] += 1
            return None
        sequence, index, count = HEADER.unpack_from(packet)
        if count == 0 or index >= count or count > self.max_packets:
            self.counters["packets_bad_header"] += 1
            return None
        if sequence in self._done:
            self.counters["packets_late"] += 1  # its sequence is complete (or was given up)
            return None
        if sequence != self._sequence:
            self._give_up()
            self._sequence, self._count, self._parts = sequence, count, {}
        elif count != self._count:
            self.counters["packets_bad_header"] += 1
            return None
        if index in self._parts:
            self.counters["packets_duplicate"] += 1
            return None
        self._parts[index] = packet[HEADER_BYTES:]
        if len(self._parts) < self._count:
            return None
        message = b"".join(self._parts[i] for i in range(self._count))
        self._done.append(sequence)
        self._sequence, self._parts = None, {}
        self.counters["sequences_complete"] += 1
        return message

    def _give_up(self) -> None:
        if self._sequence is not None and self._parts:
            self.counters["sequences_incomplete"] += 1
            self.counters["packets_discarded"] += len(self._parts)
            self._done.append(self._sequence)

    def flush(self) -> None:
        """Count the sequence in progress as incomplete (end of stream)."""
        self._give_up()
        self._sequence, self._parts = None, {}


class StreamSender:
    """Sends the newest message, split, one UDP packet every 1 / packet_rate_hz seconds."""

    def __init__(self, remote: tuple[str, int], packet_bytes: int, packet_rate_hz: float,
                 first_sequence_id: int = 0):
        if not 0 < packet_bytes <= MAX_UDP_PAYLOAD - HEADER_BYTES:
            raise ValueError(f"packet_bytes must be 1..{MAX_UDP_PAYLOAD - HEADER_BYTES}")
        if packet_rate_hz <= 0:
            raise ValueError("packet_rate_hz must be > 0")
        self.remote, self.packet_bytes = remote, packet_bytes
        self.period_s = 1.0 / packet_rate_hz
        self.counters = collections.Counter()
        self._sequence_id = first_sequence_id
        self._pending: bytes | None = None
        self._sending = False
        self._wake = threading.Condition()
        self._stop = threading.Event()
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self._thread = threading.Thread(target=self._run, daemon=True, name="udp_streamer")
        self._thread.start()

    def submit(self, data: bytes) -> None:
        with self._wake:
            if self._pending is not None:
                self.counters["messages_replaced"] += 1
            self._pending = bytes(data)
            self._wake.notify_all()

    def idle(self) -> bool:
        with self._wake:
            return self._pending is None and not self._sending

    def close(self) -> None:
        self._stop.set()
        with self._wake:
            self._wake.notify_all()
        self._thread.join(2.0)
        self._sock.close()

    def _run(self) -> None:
        next_s = time.monotonic()
        while not self._stop.is_set():
            with self._wake:
                while self._pending is None and not self._stop.is_set():
                    self._wake.wait(0.5)
                data, self._pending = self._pending, None
                self._sending = data is not None
            if data is None:
                break
            packets = split(self._sequence_id, data, self.packet_bytes)
            self._sequence_id = (self._sequence_id + 1) % 2**32
            for packet in packets:
                next_s = max(next_s, time.monotonic())
                if self._stop.wait(max(0.0, next_s - time.monotonic())):
                    break
                try:
                    self._sock.sendto(packet, self.remote)
                    self.counters["packets_sent"] += 1
                except OSError:
                    self.counters["send_errors"] += 1
                next_s += self.period_s
            self.counters["messages_sent"] += 1
            with self._wake:
                self._sending = False


class StreamReceiver:
    """Listens on (host, port) (0: any; see `port`) in a thread; `on_message(data)` for every
    complete message. `reassembler.counters` say what arrived and what was lost."""

    def __init__(self, local: tuple[str, int], on_message, receive_buffer_bytes: int = 8 << 20):
        self.reassembler = Reassembler()
        self.on_message = on_message
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer_bytes)
            self._sock.bind(local)
        except OSError:
            self._sock.close()
            raise
        self._sock.settimeout(0.1)
        self.port = self._sock.getsockname()[1]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="udp_receiver")
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                packet = self._sock.recv(MAX_UDP_PAYLOAD + 1)
            except TimeoutError:
                continue
            except OSError:
                return
            message = self.reassembler.feed(packet)
            if message is not None:
                self.on_message(message)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(2.0)
        self._sock.close()
        self.reassembler.flush()
