"""Micromodem emulator: a `MicromodemModel` served on a pseudo-terminal or a TCP port.

    micromodem_emulator --src 1                       # pty; prints the serial device path
    micromodem_emulator --src 1 --link /tmp/modem1    # pty plus a stable symlink to it
    micromodem_emulator --src 2 --tcp-port 4002       # TCP server, one client at a time

A driver connects to it as to a real modem (modem_connection_type serial with the printed path,
or tcp with the port). The standalone process has no acoustic peers (its transmissions are
reported sent and heard by nobody); tests and scenarios that need peers build several models in
one process on a shared `AcousticBackend` (`micromodem_model.LoopbackBackend`) and serve each
with `PtyServer` / `TcpServer`. ROS-free.
"""

from __future__ import annotations

import argparse
import os
import select
import signal
import socket
import sys
import threading
import tty

from acomms_sim.micromodem_model import LoopbackBackend, MicromodemModel


class _LineServer:
    """Splits host bytes into lines for the model; writes model output to the host."""

    def __init__(self, model: MicromodemModel):
        self.model = model
        self._buffer = bytearray()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._write_lock = threading.Lock()
        self.dropped_output = 0
        model.output = self.write_text

    def _feed(self, data: bytes) -> None:
        self._buffer += data
        while b"\n" in self._buffer:
            line, _, rest = self._buffer.partition(b"\n")
            self._buffer = bytearray(rest)
            if line.strip():
                self.model.handle_line(bytes(line))
        if len(self._buffer) > 65536:  # no newline for 64 KiB: garbage, forget it
            self._buffer.clear()

    def write_text(self, text: str) -> None:
        self.write_bytes(text.encode("ascii", errors="replace"))

    def write_bytes(self, data: bytes) -> None:
        raise NotImplementedError

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, daemon=True, name=type(self).__name__)
        self._thread.start()

    def _run(self) -> None:
        raise NotImplementedError

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(2.0)


class PtyServer(_LineServer):
    """Serves the model on a new pseudo-terminal; `path` is the device a driver opens."""

    def __init__(self, model: MicromodemModel, link: str | None = None):
        super().__init__(model)
        self._master, self._slave = os.openpty()
        tty.setraw(self._slave)  # no echo, no line editing: a plain byte pipe like a UART
        os.set_blocking(self._master, False)
        self.path = os.ttyname(self._slave)
        self.link = link
        if link:
            temporary = f"{link}.{os.getpid()}.tmp"
            if os.path.lexists(temporary):
                os.unlink(temporary)
            os.symlink(self.path, temporary)
            os.replace(temporary, link)

    def write_bytes(self, data: bytes) -> None:
        with self._write_lock:
            try:
                os.write(self._master, data)
            except (BlockingIOError, OSError):
                self.dropped_output += 1  # nobody reading and the buffer is full

    def _run(self) -> None:
        while not self._stop.is_set():
            ready, _, _ = select.select([self._master], [], [], 0.2)
            if not ready:
                continue
            try:
                data = os.read(self._master, 65536)
            except BlockingIOError:
                continue
            except OSError:
                break
            if data:
                self._feed(data)

    def close(self) -> None:
        super().close()
        for fd in (self._master, self._slave):
            try:
                os.close(fd)
            except OSError:
                pass
        if self.link and os.path.islink(self.link) and os.readlink(self.link) == self.path:
            os.unlink(self.link)


class TcpServer(_LineServer):
    """Serves the model on a TCP port (0 = pick one; see `port`); one client at a time."""

    def __init__(self, model: MicromodemModel, port: int = 0, host: str = "127.0.0.1"):
        super().__init__(model)
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind((host, port))
        self._listener.listen(1)
        self.port = self._listener.getsockname()[1]
        self._client: socket.socket | None = None

    def write_bytes(self, data: bytes) -> None:
        with self._write_lock:
            client = self._client
            if client is None:
                self.dropped_output += 1
                return
            try:
                client.sendall(data)
            except OSError:
                self.dropped_output += 1

    def _run(self) -> None:
        while not self._stop.is_set():
            sockets = [self._listener] + ([self._client] if self._client else [])
            ready, _, _ = select.select(sockets, [], [], 0.2)
            for sock in ready:
                if sock is self._listener:
                    client, _ = self._listener.accept()
                    client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                    with self._write_lock:
                        if self._client is not None:
                            self._client.close()  # a new client replaces the old one
                        self._client = client
                    self._buffer.clear()
                    continue
                try:
                    data = sock.recv(65536)
                except OSError:
                    data = b""
                if data:
                    self._feed(data)
                else:
                    with self._write_lock:
                        sock.close()
                        if self._client is sock:
                            self._client = None

    def close(self) -> None:
        super().close()
        with self._write_lock:
            if self._client is not None:
                self._client.close()
                self._client = None
        self._listener.close()


def _parse_config(items: list[str]) -> dict:
    config = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise argparse.ArgumentTypeError(f"--config expects NAME=VALUE, got {item!r}")
        config[name] = value
    return config


def main(args=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--src", type=int, default=1, help="modem address (SRC), 0-255")
    parser.add_argument("--tcp-port", type=int, default=None,
                        help="serve on this TCP port instead of a pseudo-terminal (0 = any)")
    parser.add_argument("--host", default="127.0.0.1", help="TCP address to listen on")
    parser.add_argument("--link", default=None,
                        help="also create this symlink to the pty (stable across restarts)")
    parser.add_argument("--airtime-scale", type=float, default=1.0,
                        help="multiply on-air durations (e.g. 0.1 for fast tests)")
    parser.add_argument("--config", action="append", default=[], metavar="NAME=VALUE",
                        help="initial modem configuration value (repeatable)")
    options = parser.parse_args(args)
    if not 0 <= options.src <= 255:
        parser.error("--src must be 0-255")
    if options.airtime_scale <= 0:
        parser.error("--airtime-scale must be > 0")
    try:
        config = _parse_config(options.config)
    except argparse.ArgumentTypeError as exc:
        parser.error(str(exc))
    backend = LoopbackBackend()
    model = MicromodemModel(options.src, backend, airtime_scale=options.airtime_scale,
                            config=config)
    try:
        if options.tcp_port is not None:
            server = TcpServer(model, options.tcp_port, options.host)
            where = f"tcp {options.host}:{server.port}"
        else:
            server = PtyServer(model, options.link)
            where = server.path + (f" (link {options.link})" if options.link else "")
    except OSError as exc:
        print(f"micromodem_emulator: {exc}", file=sys.stderr)
        return 1
    server.start()
    print(f"micromodem_emulator: SRC {options.src} on {where}", flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    while not stop.wait(0.5):
        pass
    server.close()
    model.close()
    backend.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
