"""tcp_serving.TcpLineServer (ROS-free): a client that does not read, idles or floods partial
lines loses only its own connection; the new-client rules; limits validated."""

from __future__ import annotations

import socket
import time

import pytest

from acomms_sim.tcp_serving import LimitedLog, ServingLimits, TcpLineServer

WAIT_S = 5.0
BLOB = b"x" * 4000 + b"\n"


def _wait(predicate, timeout_s: float = WAIT_S) -> bool:
    end = time.monotonic() + timeout_s
    while time.monotonic() < end and not predicate():
        time.sleep(0.01)
    return predicate()


def _read_line(sock: socket.socket, timeout_s: float = WAIT_S) -> bytes:
    sock.settimeout(timeout_s)
    data = b""
    while not data.endswith(b"\n"):
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
    return data


class Server:
    """A TcpLineServer that answers `big` with BLOB and anything else with `ok <line>`."""

    def __init__(self, **kwargs):
        self.logs: list[str] = []
        self.lines: list[bytes] = []
        self.server = TcpLineServer(self._on_line, on_log=self.logs.append, **kwargs).start()
        self.counters = self.server.counters

    def _on_line(self, client, line: bytes) -> None:
        self.lines.append(line)
        self.server.send(client, BLOB if line == b"big" else b"ok " + line + b"\n")

    def connect(self, rcvbuf: int | None = None) -> socket.socket:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if rcvbuf:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        sock.connect(("127.0.0.1", self.server.port))
        return sock


@pytest.fixture
def make_server():
    servers = []

    def make(**kwargs) -> Server:
        servers.append(Server(**kwargs))
        return servers[-1]

    yield make
    for server in servers:
        server.server.close()


def _flood_without_reading(sock: socket.socket, seconds: float) -> None:
    sock.setblocking(False)
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            sock.send(b"big\n" * 64)
        except BlockingIOError:
            time.sleep(0.01)
        except OSError:  # dropped by the server
            break


@pytest.mark.parametrize("limit", ["buffer", "write_timeout"])
def test_a_client_that_never_reads_is_dropped_and_others_are_served(make_server, limit):
    limits = (ServingLimits(max_output_bytes=64 * 1024) if limit == "buffer"
              else ServingLimits(write_timeout_s=0.5, max_output_bytes=1 << 30))
    server = make_server(limits=limits)
    slow = server.connect(rcvbuf=4096)
    other = server.connect()
    try:
        _flood_without_reading(slow, 1.0)
        other.sendall(b"hello\n")
        assert _read_line(other) == b"ok hello\n"
        assert _wait(lambda: server.counters["clients_dropped_slow"] == 1)
        assert any("dropped (dropped_slow" in text for text in server.logs), server.logs
        other.sendall(b"again\n")
        assert _read_line(other) == b"ok again\n"
        assert server.counters["connections"] == 2
    finally:
        slow.close()
        other.close()


def test_when_full_the_client_idle_longest_is_dropped(make_server):
    server = make_server(limits=ServingLimits(max_clients=3))
    first, second, third = server.connect(), server.connect(), server.connect()
    first.sendall(b"a\n")  # first is now the most recently active
    assert _read_line(first) == b"ok a\n"
    fourth = server.connect()
    try:
        assert _wait(lambda: server.counters["clients_dropped_full"] == 1)
        assert _read_line(second) == b""  # the idle longest: closed
        for sock in (first, third, fourth):
            sock.sendall(b"b\n")
            assert _read_line(sock) == b"ok b\n"
    finally:
        for sock in (first, second, third, fourth):
            sock.close()


def test_partial_lines_are_bounded_and_the_next_line_is_served(make_server):
    server = make_server(limits=ServingLimits(max_line_bytes=1024))
    with server.connect() as sock:
        sock.sendall(b"y" * 5000)
        assert _wait(lambda: server.counters["line_too_long"] == 1)
        sock.sendall(b"tail of the long line\nnext\n")
        assert _read_line(sock) == b"ok next\n"
    assert server.lines == [b"next"]


def test_new_client_rules(make_server):
    replace = make_server(on_new_client="replace")
    refuse = make_server(on_new_client="refuse")
    share = make_server(on_new_client="share")
    socks = []
    try:
        for server in (replace, refuse, share):
            socks += [server.connect(), server.connect()]
        old, new = socks[0], socks[1]  # replace: the old client is closed, the new served
        assert _read_line(old) == b""
        new.sendall(b"r\n")
        assert _read_line(new) == b"ok r\n"
        assert replace.counters["clients_replaced"] == 1
        assert any("replaces" in text for text in replace.logs)
        old, new = socks[2], socks[3]  # refuse: the new client is closed, the old served
        assert _read_line(new) == b""
        old.sendall(b"f\n")
        assert _read_line(old) == b"ok f\n"
        assert refuse.counters["clients_refused"] == 1
        assert any("refused" in text for text in refuse.logs)
        for sock in socks[4:]:  # share: both served; a broadcast reaches both
            sock.sendall(b"s\n")
            assert _read_line(sock) == b"ok s\n"
        assert share.server.broadcast(b"all\n") == 2
        assert [_read_line(sock) for sock in socks[4:]] == [b"all\n", b"all\n"]
    finally:
        for sock in socks:
            sock.close()


def test_idle_timeout_drops_a_silent_client(make_server):
    server = make_server(limits=ServingLimits(idle_timeout_s=0.3))
    with server.connect() as sock:
        sock.sendall(b"partial")  # bytes without a newline are not activity
        assert _read_line(sock) == b""
    assert server.counters["clients_dropped_idle"] == 1


@pytest.mark.parametrize("limits, message", [
    (ServingLimits(max_clients=0), "max_clients"),
    (ServingLimits(idle_timeout_s=-1.0), "idle_timeout_s"),
    (ServingLimits(write_timeout_s=0.0), "write_timeout_s"),
    (ServingLimits(max_output_bytes=10), "max_output_bytes"),
])
def test_bad_limits_are_refused(limits, message):
    with pytest.raises(ValueError, match=message):
        limits.validate()
    with pytest.raises(ValueError, match="on_new_client"):
        TcpLineServer(lambda client, line: None, on_new_client="steal")


def test_log_lines_per_kind_are_limited():
    lines = []
    log = LimitedLog(lines.append, burst=3, window_s=60.0)
    for index in range(20):
        log("clients_dropped_full", f"drop {index}")
    log("line_too_long", "long")
    assert lines == ["drop 0", "drop 1", "drop 2",
                     "more clients_dropped_full within 60 s are only counted", "long"]


def test_a_handler_error_is_counted_and_the_client_still_served(make_server):
    server = make_server()
    original = server._on_line

    def failing(client, line):
        if line == b"boom":
            raise RuntimeError("handler bug")
        original(client, line)

    server.server.on_line = failing
    with server.connect() as sock:
        sock.sendall(b"boom\nafter\n")
        assert _read_line(sock) == b"ok after\n"
    assert server.counters["internal_errors"] == 1
    assert any("handler bug" in text for text in server.logs), server.logs
