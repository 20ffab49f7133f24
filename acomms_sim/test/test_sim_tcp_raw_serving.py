"""tcp_serving.TcpRawServer (ROS-free): bytes reach the consumer unsplit (CR/LF, NUL, no line
end at all), with the line server's limits, client rules and counters."""

from __future__ import annotations

import socket
import time

import pytest

from acomms_sim.tcp_serving import ServingLimits, TcpRawServer

WAIT_S = 5.0


def _wait(predicate, timeout_s: float = WAIT_S) -> bool:
    end = time.monotonic() + timeout_s
    while time.monotonic() < end and not predicate():
        time.sleep(0.01)
    return predicate()


class Echo:
    """A TcpRawServer that records every chunk and echoes it (unless told to fail)."""

    def __init__(self, **kwargs):
        self.chunks: list[bytes] = []
        self.connected: list[str] = []
        self.logs: list[str] = []
        self.fail = False
        self.server = TcpRawServer(self._on_data, on_log=self.logs.append,
                                   on_connect=lambda client: self.connected.append(repr(client)),
                                   **kwargs).start()
        self.counters = self.server.counters

    def _on_data(self, client, data: bytes) -> None:
        if self.fail:
            raise RuntimeError("handler bug")
        self.chunks.append(data)
        self.server.send(client, data)

    def received(self) -> bytes:
        return b"".join(self.chunks)

    def connect(self) -> socket.socket:
        return socket.create_connection(("127.0.0.1", self.server.port), timeout=WAIT_S)


@pytest.fixture
def make_echo():
    servers = []

    def make(**kwargs) -> Echo:
        servers.append(Echo(**kwargs))
        return servers[-1]

    yield make
    for echo in servers:
        echo.server.close()


def _read_exactly(sock: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
    return data


def test_bytes_arrive_unsplit_and_unbounded_by_line_length(make_echo):
    echo = make_echo()
    payload = b"AT*SEND,6,2,\r\n+++\x00" + bytes(range(256)) + b"x" * 100_000  # no final newline
    with echo.connect() as sock:
        sock.sendall(payload)
        assert _read_exactly(sock, len(payload)) == payload
    assert echo.received() == payload
    assert max(map(len, echo.chunks)) <= 4096  # one bounded chunk per turn
    assert echo.counters["line_too_long"] == 0 and echo.counters["connections"] == 1


def test_replace_and_refuse_rules_apply(make_echo):
    replace = make_echo(on_new_client="replace")
    with replace.connect() as first, replace.connect() as second:
        assert _wait(lambda: replace.counters["clients_replaced"] == 1)
        assert first.recv(10) == b""  # closed by the server
        second.sendall(b"\r\n")
        assert _read_exactly(second, 2) == b"\r\n"
    assert len(replace.connected) == 2  # on_connect for each admitted client
    refuse = make_echo(on_new_client="refuse")
    with refuse.connect() as first, refuse.connect() as second:
        assert _wait(lambda: refuse.counters["clients_refused"] == 1)
        assert second.recv(10) == b""
        first.sendall(b"+++")
        assert _read_exactly(first, 3) == b"+++"
    assert len(refuse.connected) == 1


def test_idle_timeout_counts_any_byte_as_input(make_echo):
    echo = make_echo(limits=ServingLimits(idle_timeout_s=0.4))
    with echo.connect() as talker, echo.connect() as silent:
        end = time.monotonic() + 1.2
        while time.monotonic() < end:  # bytes without any line end, every 0.1 s
            talker.sendall(b"\x01")
            time.sleep(0.1)
        assert _wait(lambda: echo.counters["clients_dropped_idle"] == 1)
        assert silent.recv(10) == b""
        talker.sendall(b"\x02")
        echoed = b""
        while not echoed.endswith(b"\x02"):
            chunk = talker.recv(100)
            assert chunk, "the talker was dropped"
            echoed += chunk
        assert set(echoed[:-1]) == {1}


def test_a_client_that_never_reads_is_dropped_as_slow(make_echo):
    echo = make_echo(limits=ServingLimits(max_output_bytes=64 * 1024, write_timeout_s=0.5,
                                          socket_buffer_bytes=8192))
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(("127.0.0.1", echo.server.port))
    with sock:
        assert _wait(lambda: echo.server.clients)
        client = next(iter(echo.server.clients.values()))
        for _ in range(100):  # 400 kB nobody reads
            if not echo.server.send(client, b"\n" * 4000):
                break
        assert _wait(lambda: echo.counters["clients_dropped_slow"] == 1)
    with echo.connect() as other:
        other.sendall(b"ok")
        assert _read_exactly(other, 2) == b"ok"


def test_a_handler_error_is_counted_and_serving_goes_on(make_echo):
    echo = make_echo()
    with echo.connect() as sock:
        echo.fail = True
        sock.sendall(b"boom")
        assert _wait(lambda: echo.counters["internal_errors"] == 1)
        echo.fail = False
        sock.sendall(b"fine")
        assert _read_exactly(sock, 4) == b"fine"
    assert any("handler bug" in line for line in echo.logs)
