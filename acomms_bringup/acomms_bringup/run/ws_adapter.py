"""Both Foxglove WebSocket subprotocols in front of foxglove-sdk's server (ROS-free, sockets only).

foxglove-sdk's server (0.30) accepts only clients that offer `foxglove.sdk.v1` (or `.v1.1`) and
answers HTTP 400 to the classic `foxglove.websocket.v1` that foxglove_bridge spoke before 3.2 and
that Lichtblick and older Foxglove apps offer. Both names stand for the same protocol (the SDK
renamed it; advertise, subscribe, unsubscribe and messageData frames are the same), so a
handshake-level adapter is enough. `SubprotocolAdapter(upstream_port, host, port)` listens on the
public host and port and, for each connection:

- reads the HTTP upgrade request (at most MAX_HEAD_BYTES within HANDSHAKE_TIMEOUT_S, wall clock);
- `rewrite_request`: a client that offers the classic name and not the SDK's has its offer
  replaced by `foxglove.sdk.v1`; `rewrite_response` gives the server's answer back the classic
  name, so the client gets the subprotocol it asked for;
- then relays the bytes both ways unchanged (WebSocket frames are not touched).

`counts` counts the connections by subprotocol offered (`sdk`, `classic`, `other`); a connection
that breaks during the handshake is one log line (logger `acomms_run.live`).
"""

from __future__ import annotations

import logging
import re
import socket
import threading

CLASSIC = "foxglove.websocket.v1"
SDK = "foxglove.sdk.v1"
SDK_NAMES = (SDK, "foxglove.sdk.v1.1")
MAX_HEAD_BYTES = 65536
HANDSHAKE_TIMEOUT_S = 10.0  # wall clock: a client must send its upgrade request within this
ACCEPT_POLL_S = 0.2  # wall clock: how often the accept loop looks whether it should stop
CHUNK = 65536
_PROTOCOL_HEADER = re.compile(rb"^sec-websocket-protocol:([^\r\n]*)",
                              re.IGNORECASE | re.MULTILINE)

log = logging.getLogger("acomms_run.live")


def offered_subprotocols(head: bytes) -> list[str]:
    """The subprotocols an HTTP upgrade request offers (every Sec-WebSocket-Protocol header)."""
    names = []
    for match in _PROTOCOL_HEADER.finditer(head):
        names += [n.strip() for n in match.group(1).decode("latin-1").split(",") if n.strip()]
    return names


def rewrite_request(head: bytes) -> tuple[bytes, str]:
    """(the request head as the SDK server must see it, which kind of client: sdk/classic/other).

    Only a client offering the classic name and no SDK name is rewritten."""
    offered = offered_subprotocols(head)
    if any(name in SDK_NAMES for name in offered):
        return head, "sdk"
    if CLASSIC not in offered:
        return head, "other"
    return _PROTOCOL_HEADER.sub(f"Sec-WebSocket-Protocol: {SDK}".encode(), head, count=1), "classic"


def rewrite_response(head: bytes) -> bytes:
    """The server's answer to a rewritten (classic) request, with the classic name chosen."""
    return _PROTOCOL_HEADER.sub(f"Sec-WebSocket-Protocol: {CLASSIC}".encode(), head, count=1)


def _read_head(sock: socket.socket) -> tuple[bytes, bytes]:
    """(HTTP head up to and including the blank line, what came after it)."""
    data = b""
    while b"\r\n\r\n" not in data:
        if len(data) > MAX_HEAD_BYTES:
            raise ConnectionError(f"HTTP head longer than {MAX_HEAD_BYTES} bytes")
        chunk = sock.recv(CHUNK)
        if not chunk:
            raise ConnectionError("closed before the end of the HTTP head")
        data += chunk
    end = data.index(b"\r\n\r\n") + 4
    return data[:end], data[end:]


def _pump(source: socket.socket, target: socket.socket) -> None:
    """Copy bytes until `source` ends, then end `target`'s sending side."""
    try:
        while chunk := source.recv(CHUNK):
            target.sendall(chunk)
    except OSError:
        pass
    for sock, how in ((target, socket.SHUT_WR), (source, socket.SHUT_RD)):
        try:
            sock.shutdown(how)
        except OSError:
            pass


class SubprotocolAdapter:
    """Listens on (host, port), hands every connection to 127.0.0.1:upstream_port (see above)."""

    def __init__(self, upstream_port: int, host: str = "127.0.0.1", port: int = 0):
        self.upstream = ("127.0.0.1", upstream_port)
        family, kind, proto, _name, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
        self._listener = socket.socket(family, kind, proto)
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            self._listener.bind(address)
            self._listener.listen(16)
        except OSError:
            self._listener.close()
            raise
        self._listener.settimeout(ACCEPT_POLL_S)
        self.port = self._listener.getsockname()[1]
        self.counts = {"sdk": 0, "classic": 0, "other": 0, "failed": 0}
        self._sockets: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._accept_loop, name="live view adapter",
                                        daemon=True)
        self._thread.start()

    def _accept_loop(self) -> None:
        while not self._stopped.is_set():
            try:
                client, _address = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            threading.Thread(target=self._serve, args=(client,), name="live view client",
                             daemon=True).start()

    def _track(self, *sockets: socket.socket) -> bool:
        with self._lock:
            if self._stopped.is_set():
                return False
            self._sockets.update(sockets)
            return True

    def _serve(self, client: socket.socket) -> None:
        upstream = None
        try:
            client.settimeout(HANDSHAKE_TIMEOUT_S)
            head, rest = _read_head(client)
            head, kind = rewrite_request(head)
            upstream = socket.create_connection(self.upstream, timeout=HANDSHAKE_TIMEOUT_S)
            if not self._track(client, upstream):
                self._close(client, upstream)
                return
            upstream.sendall(head + rest)
            answer, rest = _read_head(upstream)
            client.sendall((rewrite_response(answer) if kind == "classic" else answer) + rest)
            with self._lock:
                self.counts[kind] += 1
        except OSError as exc:  # ConnectionError, timeouts: the client or server went away
            with self._lock:
                self.counts["failed"] += 1
            log.warning("a client's connection failed during the handshake: %s",
                        exc or type(exc).__name__)
            self._close(client, upstream)
            return
        client.settimeout(None)
        upstream.settimeout(None)
        back = threading.Thread(target=_pump, args=(upstream, client), daemon=True)
        back.start()
        _pump(client, upstream)
        back.join()
        self._close(client, upstream)

    def _close(self, *sockets) -> None:
        for sock in sockets:
            if sock is None:
                continue
            with self._lock:
                self._sockets.discard(sock)
            sock.close()

    def stop(self) -> None:
        """Stop listening and cut every connection (their threads then end)."""
        with self._lock:
            self._stopped.set()
            sockets, self._sockets = list(self._sockets), set()
        self._listener.close()
        for sock in sockets:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self._thread.join(timeout=2.0)
