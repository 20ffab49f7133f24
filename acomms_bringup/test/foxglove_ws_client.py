"""A minimal Foxglove WebSocket protocol client for tests (RFC 6455 framing over a plain socket).

Connects offering the `foxglove.sdk.v1` subprotocol (or another: `subprotocol=`, e.g. the classic
`foxglove.websocket.v1`; `self.subprotocol` is the one the server chose), reads the server's JSON
ops (serverInfo, advertise) and binary messageData frames (opcode 1: subscription id u32, log time
u64, payload) on a background thread, and subscribes to / unsubscribes from channels by topic.
Every wait is bounded.
"""

from __future__ import annotations

import base64
import json
import os
import socket
import struct
import threading
import time

SUBPROTOCOL = "foxglove.sdk.v1"  # foxglove-sdk servers; the Foxglove app speaks it
CLASSIC_SUBPROTOCOL = "foxglove.websocket.v1"  # foxglove_bridge before 3.2, Lichtblick


class FoxgloveClient:
    def __init__(self, port: int, host: str = "127.0.0.1", timeout_s: float = 5.0,
                 subprotocol: str = SUBPROTOCOL):
        self.sock = socket.create_connection((host, port), timeout=timeout_s)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall((f"GET / HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\n"
                           f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
                           f"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: {subprotocol}"
                           "\r\n\r\n").encode())
        response = b""
        while b"\r\n\r\n" not in response:
            chunk = self.sock.recv(4096)
            if not chunk:
                raise ConnectionError("closed during the handshake")
            response += chunk
        head, self._buffer = response.split(b"\r\n\r\n", 1)
        self.handshake = head.decode(errors="replace")
        if " 101 " not in self.handshake.splitlines()[0]:
            raise ConnectionError(self.handshake)
        self.subprotocol = next((line.split(":", 1)[1].strip()
                                 for line in self.handshake.splitlines()
                                 if line.lower().startswith("sec-websocket-protocol:")), None)
        self.ops: list[dict] = []  # JSON ops from the server
        self.messages: list[tuple[int, int, bytes]] = []  # (subscription id, log time, payload)
        self.channels: dict[str, dict] = {}  # topic -> advertised channel
        self._lock = threading.RLock()
        self._subscriptions: dict[int, str] = {}
        self._closed = False
        self.sock.settimeout(0.2)
        self._thread = threading.Thread(target=self._read_loop, daemon=True)
        self._thread.start()

    # ---- framing -------------------------------------------------------------------------------
    def _read_exact(self, count: int) -> bytes:
        while len(self._buffer) < count:
            try:
                chunk = self.sock.recv(65536)
            except TimeoutError:
                if self._closed:
                    raise ConnectionError("closed") from None
                continue
            if not chunk:
                raise ConnectionError("closed by the server")
            self._buffer += chunk
        data, self._buffer = self._buffer[:count], self._buffer[count:]
        return data

    def _read_frame(self) -> tuple[int, bytes]:
        first, second = self._read_exact(2)
        length = second & 0x7F
        if length == 126:
            length = struct.unpack(">H", self._read_exact(2))[0]
        elif length == 127:
            length = struct.unpack(">Q", self._read_exact(8))[0]
        mask = self._read_exact(4) if second & 0x80 else None
        payload = self._read_exact(length)
        if mask:
            payload = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        return first & 0x0F, payload

    def _read_loop(self) -> None:
        try:
            while not self._closed:
                opcode, payload = self._read_frame()
                with self._lock:
                    if opcode == 1:
                        op = json.loads(payload)
                        self.ops.append(op)
                        if op.get("op") == "advertise":
                            for channel in op["channels"]:
                                self.channels[channel["topic"]] = channel
                    elif opcode == 2 and payload and payload[0] == 1:
                        sub, log_time = struct.unpack_from("<IQ", payload, 1)
                        self.messages.append((sub, log_time, payload[13:]))
                    elif opcode == 8:
                        return
        except (ConnectionError, OSError):
            return

    def _send_text(self, text: str) -> None:
        self._send(text.encode(), opcode=1)

    def _send(self, data: bytes, opcode: int) -> None:
        mask = os.urandom(4)
        header = bytes([0x80 | opcode])
        if len(data) < 126:
            header += bytes([0x80 | len(data)])
        else:
            header += bytes([0x80 | 126]) + struct.pack(">H", len(data))
        self.sock.sendall(header + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(data)))

    # ---- protocol ------------------------------------------------------------------------------
    def wait_for(self, predicate, timeout_s: float = 5.0) -> bool:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            with self._lock:
                if predicate(self):
                    return True
            time.sleep(0.02)
        with self._lock:
            return predicate(self)

    def subscribe(self, topics) -> None:
        with self._lock:
            subscriptions = []
            for topic in topics:
                sub_id = len(self._subscriptions) + 1
                self._subscriptions[sub_id] = topic
                subscriptions.append({"id": sub_id, "channelId": self.channels[topic]["id"]})
        self._send_text(json.dumps({"op": "subscribe", "subscriptions": subscriptions}))

    def unsubscribe(self, topics) -> None:
        with self._lock:
            ids = [sub for sub, topic in self._subscriptions.items() if topic in set(topics)]
        self._send_text(json.dumps({"op": "unsubscribe", "subscriptionIds": ids}))

    def received(self, topic: str) -> list[tuple[int, bytes]]:
        """(log time, payload) of every message received on that topic."""
        with self._lock:
            return [(t, p) for sub, t, p in self.messages if self._subscriptions.get(sub) == topic]

    def close(self) -> None:
        """The closing handshake (a close frame, normal closure), then the socket is closed."""
        try:
            self._send(struct.pack(">H", 1000), opcode=8)
            self._thread.join(timeout=1.0)  # the read loop ends with the server's close frame
        except OSError:
            pass
        self._closed = True
        try:
            self.sock.close()
        finally:
            self._thread.join(timeout=2.0)
