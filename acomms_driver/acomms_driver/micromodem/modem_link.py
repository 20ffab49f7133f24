"""ROS-free byte links to a Micromodem: serial port, TCP client, UDP. Open/read/write/close only.

pyacomms ships connection classes, but they cannot be used by a driver that must survive faults:
`SerialConnection` re-opens the port by itself one second after `close()` and its thread never
ends; `TcpClientConnection` mixes bytes and str (TypeError on the first read), spins forever on EOF
and its `close()` calls a missing `Thread.stop`; `UdpConnection.close()` references a missing
attribute and its threads never end; `TcpConnection` needs `asyncore` (removed in Python 3.12).
These links are deliberately dumb: `read()` returns bytes (b"" on timeout) and raises
`LinkError` when the link is gone; reconnection policy lives in `MicromodemClient`.
"""

from __future__ import annotations

import select
import socket
import threading

import serial


class LinkError(OSError):
    """The link is unusable (port vanished, peer closed, refused...)."""


class ModemLink:
    """Interface of a byte link. Subclasses implement _open/_read/_write/_close."""

    description = "link"

    def __init__(self):
        self._write_lock = threading.Lock()
        self.is_open = False

    def open(self) -> None:
        try:
            self._open()
        except (OSError, serial.SerialException, ValueError) as exc:
            self.close()
            raise LinkError(f"cannot open {self.description}: {exc}") from None
        self.is_open = True

    def read(self, timeout: float) -> bytes:
        if not self.is_open:
            raise LinkError(f"{self.description} is closed")
        try:
            return self._read(timeout)
        except LinkError:
            raise
        except (OSError, serial.SerialException, TypeError, ValueError, AttributeError) as exc:
            # pyserial raises TypeError/ValueError when the fd is closed under it.
            raise LinkError(f"{self.description}: {exc}") from None

    def write(self, data: bytes) -> None:
        with self._write_lock:
            if not self.is_open:
                raise LinkError(f"{self.description} is closed")
            try:
                self._write(data)
            except (OSError, serial.SerialException, TypeError, ValueError,
                    AttributeError) as exc:
                raise LinkError(f"{self.description}: {exc}") from None

    def close(self) -> None:
        self.is_open = False
        try:
            self._close()
        except Exception:  # closing a broken link must never fail
            pass

    def _open(self) -> None: raise NotImplementedError
    def _read(self, timeout: float) -> bytes: raise NotImplementedError
    def _write(self, data: bytes) -> None: raise NotImplementedError
    def _close(self) -> None: raise NotImplementedError


class SerialLink(ModemLink):
    def __init__(self, port: str, baudrate: int):
        super().__init__()
        self.port, self.baudrate = port, baudrate
        self.description = f"serial {port} @ {baudrate}"
        self._serial: serial.Serial | None = None

    def _open(self) -> None:
        self._serial = serial.Serial(self.port, self.baudrate, timeout=0)

    def _read(self, timeout: float) -> bytes:
        ser = self._serial
        ready, _, _ = select.select([ser.fileno()], [], [], timeout)
        if not ready:
            return b""
        data = ser.read(ser.in_waiting or 1)
        if not data:
            # Readable but no data: the other end (pty master, USB adapter) is gone.
            raise LinkError(f"{self.description}: device reports readiness but returned no data")
        return data

    def _write(self, data: bytes) -> None:
        self._serial.write(data)

    def _close(self) -> None:
        if self._serial is not None:
            self._serial.close()
            self._serial = None


class TcpClientLink(ModemLink):
    def __init__(self, host: str, port: int, connect_timeout: float = 3.0):
        super().__init__()
        self.host, self.port, self.connect_timeout = host, port, connect_timeout
        self.description = f"tcp {host}:{port}"
        self._socket: socket.socket | None = None

    def _open(self) -> None:
        self._socket = socket.create_connection((self.host, self.port), self.connect_timeout)
        self._socket.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def _read(self, timeout: float) -> bytes:
        ready, _, _ = select.select([self._socket], [], [], timeout)
        if not ready:
            return b""
        data = self._socket.recv(65536)
        if not data:
            raise LinkError(f"{self.description}: connection closed by the modem")
        return data

    def _write(self, data: bytes) -> None:
        self._socket.sendall(data)

    def _close(self) -> None:
        if self._socket is not None:
            try:
                self._socket.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            self._socket.close()
            self._socket = None


class UdpLink(ModemLink):
    """Datagrams to remote host:port, received on local host:port (0 = the remote port)."""

    def __init__(self, remote_host: str, remote_port: int, local_host: str = "",
                 local_port: int = 0):
        super().__init__()
        self.remote = (remote_host, remote_port)
        self.local = (local_host, local_port or remote_port)
        self.description = (f"udp {remote_host}:{remote_port} "
                            f"(local {self.local[0]}:{self.local[1]})")
        self._socket: socket.socket | None = None

    def _open(self) -> None:
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._socket.bind(self.local)

    def _read(self, timeout: float) -> bytes:
        ready, _, _ = select.select([self._socket], [], [], timeout)
        if not ready:
            return b""
        return self._socket.recv(65536)

    def _write(self, data: bytes) -> None:
        self._socket.sendto(data, self.remote)

    def _close(self) -> None:
        if self._socket is not None:
            self._socket.close()
            self._socket = None


def make_link(connection_type: str, *, serial_port: str = "", baud_rate: int = 19200,
              remote_host: str = "localhost", remote_port: int = 4001, local_host: str = "",
              local_port: int = 0) -> ModemLink:
    """Build the link named by modem_connection_type (serial | tcp | udp)."""
    if connection_type == "serial":
        return SerialLink(serial_port, baud_rate)
    if connection_type == "tcp":
        return TcpClientLink(remote_host, remote_port)
    if connection_type == "udp":
        return UdpLink(remote_host, remote_port, local_host, local_port)
    raise ValueError(f"unknown modem_connection_type {connection_type!r}; use serial, tcp or udp")
