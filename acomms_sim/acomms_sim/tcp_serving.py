"""A TCP server that no client can stall: the one server of netsim_manager's port and of every
emulated modem's port (micromodem_emulator `--tcp-port`, netsim's modem ports, evologics_emulator
`--tcp-port`).

ROS-free. One thread runs a `selectors` loop over non-blocking sockets. `TcpLineServer` calls
`on_line(client, line)` there for every complete line; `TcpRawServer` (raw byte mode, for
byte-stream protocols whose binary payloads hold CR/LF) calls `on_data(client, data)` for every
chunk received (at most RECEIVE_CHUNK bytes), unsplit: it buffers no input, so the consumer's own
framer bounds its buffer. Output (`send`, `broadcast`, from any thread) goes to
a bounded per-client buffer and is written without blocking, so a client that does not read
only loses its own connection. All times here are wall-clock I/O timeouts (`time.monotonic`):

- idle: a client that sent no complete line (raw: no byte) for `idle_timeout_s` is dropped
  (0: never);
- slow: a client whose pending output exceeds `max_output_bytes`, or made no write progress
  for `write_timeout_s`, is dropped;
- full: with `max_clients` connected, a new client is accepted and the client idle longest is
  dropped (so idle connections can never lock new clients out);
- a partial line longer than `max_line_bytes` is discarded up to its newline (counted; line
  mode only).

`on_new_client` decides what a new connection does to the clients already connected:
`share` (all served, each its own lines; output broadcast to all), `replace` (the new client
replaces the others, logged) or `refuse` (the new client is closed while one is connected,
logged). `on_connect(client)`, if given, is called for every admitted client (e.g. a
byte-stream consumer forgets a partial frame of the client it replaced). Every drop and refusal
is counted in `counters` (COUNTER_NAMES) and logged (at most a few lines per kind and 10 s:
`LimitedLog`).
"""

from __future__ import annotations

import collections
import dataclasses
import selectors
import socket
import threading
import time
from collections.abc import Callable

ON_NEW_CLIENT = ("replace", "refuse", "share")
COUNTER_NAMES = ("connections", "disconnections", "clients_refused", "clients_replaced",
                 "clients_dropped_idle", "clients_dropped_slow", "clients_dropped_full",
                 "line_too_long", "accept_errors", "internal_errors")
MAX_LINE_BYTES = 65536
RECEIVE_CHUNK = 4096  # per client and turn: a flooding client delays the others by one chunk


class LineSplitter:
    """Bytes in, complete lines out; a line longer than max_line_bytes is dropped (counted in
    `too_long`) up to its newline, and the lines after it are kept."""

    def __init__(self, max_line_bytes: int = MAX_LINE_BYTES):
        self.max_line_bytes = max_line_bytes
        self.too_long = 0
        self._buffer = bytearray()
        self._discarding = False

    def feed(self, data: bytes) -> list[bytes]:
        lines = []
        self._buffer += data
        while True:
            end = self._buffer.find(b"\n")
            if end < 0:
                break
            line = bytes(self._buffer[:end])
            del self._buffer[:end + 1]
            if self._discarding:
                self._discarding = False  # the tail of an over-long line
            elif line.strip():
                lines.append(line)
        if len(self._buffer) > self.max_line_bytes:
            if not self._discarding:
                self.too_long += 1
            self._discarding = True
            self._buffer.clear()
        return lines


class LimitedLog:
    """A log callback that passes at most `burst` lines per kind per `window_s` (wall clock)
    and then one line saying the rest are only counted: abuse cannot flood the log."""

    def __init__(self, on_log: Callable[[str], None], burst: int = 5, window_s: float = 10.0):
        self.on_log, self.burst, self.window_s = on_log, burst, window_s
        self._windows: dict[str, tuple[float, int]] = {}
        self._lock = threading.Lock()

    def __call__(self, kind: str, text: str) -> None:
        now = time.monotonic()
        with self._lock:
            start, count = self._windows.get(kind, (now, 0))
            if now - start > self.window_s:
                start, count = now, 0
            self._windows[kind] = (start, count + 1)
        if count < self.burst:
            self.on_log(text)
        elif count == self.burst:
            self.on_log(f"more {kind} within {self.window_s:g} s are only counted")


@dataclasses.dataclass(frozen=True)
class ServingLimits:
    """Per-server limits (times: wall clock, seconds)."""

    max_clients: int = 64
    idle_timeout_s: float = 0.0
    write_timeout_s: float = 10.0
    max_output_bytes: int = 1 << 20
    max_line_bytes: int = MAX_LINE_BYTES
    socket_buffer_bytes: int = 65536  # SO_SNDBUF of each client: bounds kernel memory too

    def validate(self) -> ServingLimits:
        """self, or ValueError naming the first bad limit."""
        if not 1 <= self.max_clients <= 10000:
            raise ValueError(f"max_clients {self.max_clients} outside 1-10000")
        for name in ("idle_timeout_s", "write_timeout_s"):
            value = getattr(self, name)
            if not 0.0 <= value <= 86400.0:
                raise ValueError(f"{name} {value} outside 0-86400 s")
        if self.write_timeout_s == 0.0:
            raise ValueError("write_timeout_s must be > 0")
        if self.max_output_bytes < 1024 or self.max_line_bytes < 256:
            raise ValueError("max_output_bytes must be >= 1024 and max_line_bytes >= 256")
        return self


class Client:
    """One connection: its address, partial input and pending output."""

    def __init__(self, sock: socket.socket, address: str, max_line_bytes: int, now: float):
        self.sock = sock
        self.address = address
        self.splitter = LineSplitter(max_line_bytes)
        self.output = bytearray()
        self.last_line = now  # accept time, then the last complete line (raw: bytes) received
        self.last_write = now  # the last write progress (or when output started waiting)
        self.doomed: str | None = None  # a counter name: dropped by the loop thread

    def __repr__(self) -> str:
        return f"client {self.address}"


class TcpLineServer:
    """The server (see module docstring). `port` is the bound port; start() serves, close()
    stops and closes every socket."""

    def __init__(self, on_line: Callable[[Client, bytes], None], port: int = 0,
                 host: str = "127.0.0.1", limits: ServingLimits | None = None,
                 on_new_client: str = "share", on_log: Callable[[str], None] | None = None,
                 counters: collections.Counter | None = None, name: str = "tcp",
                 on_connect: Callable[[Client], None] | None = None):
        if on_new_client not in ON_NEW_CLIENT:
            raise ValueError(f"on_new_client {on_new_client!r} not one of {ON_NEW_CLIENT}")
        self.limits = (limits or ServingLimits()).validate()
        self.on_line = on_line
        self.on_new_client = on_new_client
        self.on_connect = on_connect
        self.on_log = LimitedLog(on_log or (lambda text: None))  # (kind, text)
        self.counters = counters if counters is not None else collections.Counter()
        self.name = name
        self.clients: dict[socket.socket, Client] = {}
        self._lock = threading.RLock()  # clients and their output buffers
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            self._listener.bind((host, port))
            self._listener.listen(128)
        except OSError:
            self._listener.close()
            raise
        self._listener.setblocking(False)
        self.port = self._listener.getsockname()[1]
        self._wake_read, self._wake_write = socket.socketpair()
        self._wake_read.setblocking(False)
        self._wake_write.setblocking(False)
        self._selector = selectors.DefaultSelector()
        self._selector.register(self._listener, selectors.EVENT_READ)
        self._selector.register(self._wake_read, selectors.EVENT_READ)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name=name)

    def start(self) -> TcpLineServer:
        self._thread.start()
        return self

    def close(self) -> None:
        self._stop.set()
        self._wake()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(2.0)
        self._listener.close()
        with self._lock:
            for client in list(self.clients.values()):
                client.sock.close()
            self.clients.clear()
        self._selector.close()
        self._wake_read.close()
        self._wake_write.close()

    # ------------------------------------------------------------------ output (any thread)
    def send(self, client: Client, data: bytes) -> bool:
        """Queue data for one client and write what the socket takes now; False if the client
        is gone or is being dropped (its pending output over the bound)."""
        with self._lock:
            if client.doomed or client.sock not in self.clients:
                return False
            if not client.output:
                client.last_write = time.monotonic()
            client.output += data
            self._flush(client)
            if len(client.output) > max(self.limits.max_output_bytes, len(data)):
                client.doomed = "clients_dropped_slow"  # (one oversized message may pass)
            wake = bool(client.output) or client.doomed
        if wake:
            self._wake()  # the loop watches for writability or drops the client
        return not client.doomed

    def broadcast(self, data: bytes) -> int:
        """send() to every client; the number that took it."""
        with self._lock:
            clients = list(self.clients.values())
        return sum(self.send(client, data) for client in clients)

    def wait_for_room(self, size: int, timeout_s: float) -> bool:
        """Wait (wall clock, at most timeout_s) until every client has room for size more
        bytes of output (or nothing pending): backpressure for a caller that floods clients
        on purpose (tests, benches). True if there is room."""
        end = time.monotonic() + timeout_s
        while True:
            with self._lock:
                pending = max((len(c.output) for c in self.clients.values()), default=0)
            if not pending or pending + size <= self.limits.max_output_bytes:
                return True
            if time.monotonic() > end:
                return False
            time.sleep(0.002)

    def _flush(self, client: Client) -> None:
        try:
            sent = client.sock.send(client.output)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            client.doomed = client.doomed or "disconnections"
            return
        if sent:
            del client.output[:sent]
            client.last_write = time.monotonic()

    def _wake(self) -> None:
        try:
            self._wake_write.send(b"x")
        except OSError:
            pass  # its buffer is full (a wake is pending) or the server is closed

    # ------------------------------------------------------------------ the loop thread
    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self._run_once()
            except Exception as exc:  # noqa: BLE001 - counted and logged; serving goes on
                if self._stop.is_set():
                    break
                self.counters["internal_errors"] += 1
                self.on_log("internal_errors", f"server loop: {exc!r}")
                time.sleep(0.05)

    def _run_once(self) -> None:
        self._update_interest()
        for key, events in self._selector.select(timeout=0.1):
            if key.fileobj is self._listener:
                for _ in range(64):  # a burst of connections in one pass
                    if not self._accept():
                        break
            elif key.fileobj is self._wake_read:
                self._drain_wake()
            else:
                self._serve(key.data, events)
        self._expire(time.monotonic())

    def _update_interest(self) -> None:
        with self._lock:
            for client in list(self.clients.values()):
                if client.doomed:
                    self._drop(client, client.doomed)
                    continue
                events = selectors.EVENT_READ | (selectors.EVENT_WRITE if client.output else 0)
                if self._selector.get_key(client.sock).events != events:
                    self._selector.modify(client.sock, events, client)

    def _drain_wake(self) -> None:
        try:
            while self._wake_read.recv(4096):
                pass
        except (BlockingIOError, InterruptedError):
            pass

    def _serve(self, client: Client, events: int) -> None:
        if events & selectors.EVENT_WRITE:
            with self._lock:
                if client.sock in self.clients:
                    self._flush(client)
        if events & selectors.EVENT_READ and client.sock in self.clients:
            self._receive(client)

    def _receive(self, client: Client) -> None:
        try:
            data = client.sock.recv(RECEIVE_CHUNK)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if not data:
            with self._lock:
                self._drop(client, "disconnections")
            return
        self._handle_input(client, data)

    def _handle_input(self, client: Client, data: bytes) -> None:
        """Line mode: every complete line to on_line."""
        too_long = client.splitter.too_long
        lines = client.splitter.feed(data)
        if client.splitter.too_long > too_long:
            self.counters["line_too_long"] += client.splitter.too_long - too_long
            self.on_log("line_too_long", f"{client.address}: line over "
                        f"{self.limits.max_line_bytes} bytes dropped")
        if lines:
            client.last_line = time.monotonic()
        for line in lines:
            if not self._dispatch(self.on_line, client, line):
                return

    def _dispatch(self, handler: Callable[[Client, bytes], None], client: Client,
                  item: bytes) -> bool:
        """handler(client, item) unless the client is going; a handler error is counted and
        logged. False if the client is gone."""
        if client.doomed or client.sock not in self.clients:
            return False
        try:
            handler(client, item)
        except Exception as exc:  # noqa: BLE001 - a handler bug must not stop the server
            self.counters["internal_errors"] += 1
            self.on_log("internal_errors", f"{client.address}: error handling input: {exc!r}")
        return True

    def _expire(self, now: float) -> None:
        limits = self.limits
        with self._lock:
            for client in list(self.clients.values()):
                if client.output and now - client.last_write > limits.write_timeout_s:
                    self._drop(client, "clients_dropped_slow")
                elif limits.idle_timeout_s and now - client.last_line > limits.idle_timeout_s:
                    self._drop(client, "clients_dropped_idle")

    def _accept(self) -> bool:
        """Accept one pending connection; False if there was none."""
        try:
            sock, peer = self._listener.accept()
        except (BlockingIOError, InterruptedError):
            return False
        except OSError as exc:  # e.g. out of file descriptors: count, do not spin
            self.counters["accept_errors"] += 1
            self.on_log("accept_errors", f"accept failed: {exc}")
            time.sleep(0.05)
            return False
        client = Client(sock, peer[0], self.limits.max_line_bytes, time.monotonic())
        with self._lock:
            if self.on_new_client == "refuse" and self.clients:
                self.counters["clients_refused"] += 1
                current = next(iter(self.clients.values()))
                self.on_log("clients_refused", f"{client!r} refused: {current!r} is connected "
                            "(on_new_client refuse)")
                sock.close()
                return True
            if self.on_new_client == "replace":
                for old in list(self.clients.values()):
                    self.on_log("clients_replaced",
                                f"{client!r} replaces {old!r} (on_new_client replace)")
                    self._drop(old, "clients_replaced")
            elif len(self.clients) >= self.limits.max_clients:
                oldest = min(self.clients.values(), key=lambda item: item.last_line)
                self._drop(oldest, "clients_dropped_full")
            self._admit(client)
        return True

    def _admit(self, client: Client) -> None:
        sock = client.sock
        sock.setblocking(False)
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF,
                            self.limits.socket_buffer_bytes)
        except OSError:
            pass  # the peer is already gone; the first recv says so
        self.clients[sock] = client
        self._selector.register(sock, selectors.EVENT_READ, client)
        self.counters["connections"] += 1
        if self.on_connect is not None:
            self._dispatch(lambda admitted, _: self.on_connect(admitted), client, b"")

    def _drop(self, client: Client, reason: str) -> None:
        """Close one client (loop thread, lock held), counting reason."""
        if self.clients.pop(client.sock, None) is None:
            return
        try:
            self._selector.unregister(client.sock)
        except (KeyError, ValueError):
            pass
        self.counters[reason] += 1  # before the close a peer may see
        client.sock.close()
        if reason not in ("disconnections", "clients_replaced"):
            self.on_log(reason, f"{client!r} dropped ({reason.removeprefix('clients_')}; "
                        f"{len(client.output)} bytes unsent)")


class TcpRawServer(TcpLineServer):
    """Raw byte mode (see the module docstring): `on_data(client, data)` gets every chunk as
    received, CR/LF and all; every limit, policy and counter of TcpLineServer applies, any
    byte received counts as input for the idle timeout (no line_too_long: nothing is split)."""

    def _handle_input(self, client: Client, data: bytes) -> None:
        client.last_line = time.monotonic()
        self._dispatch(self.on_line, client, data)
