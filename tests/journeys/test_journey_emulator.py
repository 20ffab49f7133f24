"""Journey: the Micromodem emulator as README "WHOI Micromodem driver and emulator" shows it.

A single emulator on a TCP port or a pseudo-terminal answers the driver's sentences (no acoustic
peers: its packets are sent and heard by nobody; with `--on-new-client refuse` a second client is
refused and the exit summary counts it); `--network FILE` prints each modem's port and
a packet sent by one modem arrives at the other through the simulated channel. The clients here
are raw NMEA over TCP / the pty, as any driver talks to a real modem.
"""

from __future__ import annotations

import os
import re
import socket
import time

from journey_ros_tools import free_port
from journey_support import Background, documented

from acomms_driver.micromodem import nmea

SERVING = re.compile(r"micromodem_emulator: SRC (\d+) on tcp ([\d.]+):(\d+)")


class NmeaPeer:
    """Lines to and from one emulated modem (a TCP socket or a pty file descriptor)."""

    def __init__(self, sock=None, fd=None):
        self.sock, self.fd, self.buffer, self.seen = sock, fd, b"", []

    def send(self, sentence_type: str, fields) -> None:
        data = nmea.format_sentence(sentence_type, fields).encode()
        if self.sock is not None:
            self.sock.sendall(data)
        else:
            os.write(self.fd, data)

    def _read(self) -> bytes:
        if self.sock is not None:
            try:
                return self.sock.recv(4096)
            except TimeoutError:
                return b""
        import select
        ready, _, _ = select.select([self.fd], [], [], 0.2)
        return os.read(self.fd, 4096) if ready else b""

    def types(self) -> list[str]:
        return [sentence.type for sentence in self.seen]

    def wait_for(self, sentence_type: str, timeout_s: float = 10.0):
        """The first sentence of that type received so far or within the timeout (every line
        read is kept in `seen`); None on timeout."""
        deadline = time.monotonic() + timeout_s
        while True:
            while b"\n" in self.buffer:
                line, self.buffer = self.buffer.split(b"\n", 1)
                if line.strip():
                    self.seen.append(nmea.parse_line(line.strip()))
            found = [s for s in self.seen if s.type == sentence_type]
            if found:
                return found[0]
            if time.monotonic() > deadline:
                return None
            self.buffer += self._read()


def _connect(host: str, port: int, timeout_s: float = 10.0) -> socket.socket:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            sock = socket.create_connection((host, port), timeout=1.0)
            sock.settimeout(0.2)
            return sock
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def _served(emulator: Background) -> list[tuple[int, str, int]]:
    emulator._log.seek(0)
    return [(int(s), h, int(p)) for s, h, p in SERVING.findall(emulator._log.read())]


def test_single_emulator_on_a_tcp_port_answers_and_has_no_peers(tmp_path):
    command = documented("micromodem_emulator --src 2 --tcp-port 4002 &").rstrip(" &").replace(
        "4002", str(free_port()))
    with Background(command, log_path=tmp_path / "emulator.log") as emulator:
        assert emulator.wait_for_output("micromodem_emulator: SRC 2 on tcp", 20.0)
        (_, host, port), = _served(emulator)
        with _connect(host, port) as sock:
            modem = NmeaPeer(sock=sock)
            modem.send("CCCFQ", ["SRC"])
            answer = modem.wait_for("CACFG")
            assert answer is not None and list(answer.fields[:2]) == ["SRC", "2"], modem.types()
            modem.send("CCTFP", [0, 0, 1, 1, 5, 0, 0, "", "C0FFEE"])
            assert modem.wait_for("CATXF", 20.0) is not None, modem.types()   # sent ...
            assert "CARFP" not in modem.types()                             # ... heard by nobody
    assert emulator.process.returncode == 0, emulator.output


def test_refuse_keeps_the_first_driver_and_the_exit_summary_counts_the_refusal(tmp_path):
    command = documented("micromodem_emulator --src 3 --tcp-port 4003 --on-new-client refuse")
    command = command.replace("4003", str(free_port()))
    with Background(command, log_path=tmp_path / "emulator.log") as emulator:
        assert emulator.wait_for_output("micromodem_emulator: SRC 3 on tcp", 20.0)
        (_, host, port), = _served(emulator)
        with _connect(host, port) as first, _connect(host, port) as second:
            second.settimeout(10.0)
            assert second.recv(100) == b""  # refused: closed at once
            modem = NmeaPeer(sock=first)
            modem.send("CCCFQ", ["SRC"])
            answer = modem.wait_for("CACFG")
            assert answer is not None and list(answer.fields[:2]) == ["SRC", "3"], modem.types()
        assert emulator.wait_for_output("(on_new_client refuse)", 10.0)
        emulator.stop()
    assert emulator.process.returncode == 0, emulator.output
    summary = [line for line in emulator.output.splitlines() if f"port {port}:" in line]
    assert summary and "clients_refused 1" in summary[-1], emulator.output


def test_single_emulator_on_a_pty_with_a_stable_link(tmp_path):
    link = tmp_path / "modem1"
    command = documented("micromodem_emulator --src 1 --link /tmp/modem1 &").rstrip(
        " &").replace("/tmp/modem1", str(link))
    with Background(command, log_path=tmp_path / "emulator.log") as emulator:
        assert emulator.wait_for_output(f"(link {link})", 20.0)
        fd = os.open(link, os.O_RDWR | os.O_NOCTTY)
        try:
            modem = NmeaPeer(fd=fd)
            modem.send("CCCFQ", ["SRC"])
            answer = modem.wait_for("CACFG")
            assert answer is not None and list(answer.fields[:2]) == ["SRC", "1"], modem.types()
        finally:
            os.close(fd)
    assert emulator.process.returncode == 0, emulator.output


def test_network_prints_each_port_and_a_packet_crosses_the_channel(tmp_path):
    command = documented("micromodem_emulator --network acomms_sim/config/emulator_network.yaml")
    with Background(command, log_path=tmp_path / "network.log") as emulator:
        assert emulator.wait_for_output("SRC 2 on tcp", 20.0), emulator.output
        served = {src: (host, port) for src, host, port in _served(emulator)}
        assert set(served) == {1, 2}, served
        with _connect(*served[1]) as a, _connect(*served[2]) as b:
            sender, receiver = NmeaPeer(sock=a), NmeaPeer(sock=b)
            sender.send("CCTFP", [0, 0, 2, 1, 5, 0, 0, "", "C0FFEE"])
            rfp = receiver.wait_for("CARFP", 30.0)
            assert rfp is not None, receiver.types()
            assert nmea.parse_frames(rfp.fields[10]) == [(True, bytes.fromhex("C0FFEE"))]
            cst = receiver.wait_for("CACST", 10.0)
            assert cst is not None and nmea.parse_cst(cst.fields)["snr_in"] > 0.0
    assert emulator.process.returncode == 0, emulator.output
