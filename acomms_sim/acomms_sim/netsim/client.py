"""The vehicle side of netsim_manager's protocol: connect, send requests, read responses (ROS-free).

`NetsimClient(host, port, on_response)` keeps one TCP connection to a netsim_manager in a
background thread, reconnecting with exponential backoff (`reconnect_initial_s` doubling up to
`reconnect_max_s`) whenever it drops. `send_nav(...)` builds a `NetSimManagerRequest` with one
NavUpdate and the next request id and writes it as a protocol line (False with the reason in
`last_reason` while disconnected: the caller reports the next position instead of queueing old
ones). Each response line calls `on_response(response)`; a line that is not a response is
counted under its `wire.WireError` kind. `counters` and `connected` feed diagnostics.
"""

from __future__ import annotations

import collections
import socket
import threading
import time
from collections.abc import Callable

from acomms_sim.netsim.proto import netsim_pb2
from acomms_sim.netsim.wire import LINE_TOO_LONG, LineSplitter, WireError, decode_line, encode_line

Response = netsim_pb2.NetSimManagerResponse
INT32_MAX = 2**31 - 1


class NetsimClient:
    def __init__(self, host: str, port: int, on_response: Callable | None = None, *,
                 reconnect_initial_s: float = 0.5, reconnect_max_s: float = 10.0,
                 connect_timeout_s: float = 2.0):
        self.host, self.port = host, port
        self.on_response = on_response or (lambda response: None)
        self.reconnect_initial_s = reconnect_initial_s
        self.reconnect_max_s = reconnect_max_s
        self.connect_timeout_s = connect_timeout_s
        self.counters = collections.Counter()
        self.last_reason = "not started"
        self.last_response = None
        self._next_id = 0
        self._sock: socket.socket | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def connected(self) -> bool:
        return self._sock is not None

    def start(self) -> None:
        if self._thread is None or not self._thread.is_alive():
            self._stop.clear()
            self._thread = threading.Thread(target=self._run, daemon=True, name="netsim_client")
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._close("stopped")
        if self._thread is not None:
            self._thread.join(self.connect_timeout_s + 1.0)
            self._thread = None

    close = stop

    def send_nav(self, modem_tcp_port: int, time_s: float, lat: float, lon: float,
                 depth_m: float, speed_mps: float = 0.0, heading_deg: float = 0.0) -> int | None:
        """Send one position report; its request id, or None when not connected."""
        request = netsim_pb2.NetSimManagerRequest(id=self._next_id)
        request.nav.add(modem_tcp_port=modem_tcp_port, time=time_s, lat=lat, lon=lon,
                        depth=depth_m, speed=speed_mps, heading=heading_deg)
        return self.send(request)

    def send(self, request) -> int | None:
        with self._lock:
            sock = self._sock
            if sock is None:
                self.counters["requests_not_sent"] += 1
                return None
            self._next_id = (self._next_id + 1) % INT32_MAX
            try:
                sock.sendall(encode_line(request))
            except OSError as exc:
                self.counters["requests_not_sent"] += 1
                self.last_reason = f"send failed: {exc}"
                return None
        self.counters["requests_sent"] += 1
        return request.id

    # ------------------------------------------------------------------ connection thread
    def _run(self) -> None:
        delay = self.reconnect_initial_s
        while not self._stop.is_set():
            try:
                sock = socket.create_connection((self.host, self.port), self.connect_timeout_s)
            except OSError as exc:
                self.counters["connect_failures"] += 1
                self.last_reason = f"connect to {self.host}:{self.port} failed: {exc}"
                self._stop.wait(delay)
                delay = min(2.0 * delay, self.reconnect_max_s)
                continue
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            sock.settimeout(0.2)
            with self._lock:
                self._sock = sock
            self.counters["connections"] += 1
            self.last_reason = f"connected to {self.host}:{self.port}"
            delay = self.reconnect_initial_s
            self._read(sock)

    def _read(self, sock: socket.socket) -> None:
        splitter = LineSplitter()
        while not self._stop.is_set():
            try:
                data = sock.recv(65536)
            except TimeoutError:
                continue
            except OSError as exc:
                self._close(f"connection lost: {exc}")
                return
            if not data:
                self._close("manager closed the connection")
                return
            too_long = splitter.too_long
            for line in splitter.feed(data):
                self._handle_line(line)
            self.counters[LINE_TOO_LONG] += splitter.too_long - too_long

    def _handle_line(self, line: bytes) -> None:
        try:
            response = decode_line(line, Response)
        except WireError as exc:
            self.counters[exc.kind] += 1
            self.last_reason = str(exc)
            return
        self.counters["responses"] += 1
        self.last_response = (time.monotonic(), response)
        try:
            self.on_response(response)
        except Exception as exc:  # noqa: BLE001 - the reader thread must survive its callback
            self.counters["callback_errors"] += 1
            self.last_reason = f"on_response failed: {exc!r}"

    def _close(self, reason: str) -> None:
        with self._lock:
            sock, self._sock = self._sock, None
        if sock is not None:
            sock.close()
            self.counters["disconnections"] += 1
            self.last_reason = reason
