"""Abusive TCP clients against netsim_manager, micromodem_emulator and evologics_emulator ports
(issues 28, 31).

Starts each server as a user would (`netsim_manager --config ...`, `micromodem_emulator --src 1
--tcp-port 0 [--on-new-client share]`, `evologics_emulator --modem 1:0,0,2 --tcp-port 0`: the
raw byte mode), opens N abusive clients in four kinds (idle, half a line, never reading while
flooding requests, random garbage with and without newlines) and keeps them open; then a proper
client connects and sends one valid request. Reported per server: the abusers' outcome (still
open / closed by the server), the server's RSS before and after (from /proc), whether it is
alive, the time until the proper client got its answer (target: within 1 s), and the server's
own counters (its exit summary). The raw-mode server also gets a garbage flood (random bytes,
CR/LF, `+++`, broken AT frames, for --flood-seconds: megabytes taken per second) and a churn of
--churn connect/send/close clients (connections per second), each followed by a proper client.
Run:

    source env.sh && python bench/tcp_server_abuse.py [--clients 500]
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import socket
import subprocess
import tempfile
import time

import yaml

from acomms_driver.micromodem import nmea
from acomms_sim.netsim import wire
from acomms_sim.netsim.proto import netsim_pb2

KINDS = ("idle", "half_line", "never_read", "garbage")
MANAGER_CONFIG = {
    "manager": {"port": 0},
    "env_bounds": [{"environment_id": 1, "lat_min": 41.0, "lat_max": 42.0, "lon_min": -71.0,
                    "lon_max": -70.0, "depth_max": 100.0}],
    "sim_env_pair": [{"modem_tcp_port": 0, "endpoint_ip_address": "127.0.0.1",
                      "environment_id": 1, "src": 1}],
}


EVOLOGICS = ["evologics_emulator", "--modem", "1:0,0,2", "--tcp-port", "0"]


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return float("nan")


class Target:
    """A server process, its port and what a proper request / its answer look like."""

    def __init__(self, name: str, command: list[str], port_word: str, ready_word: str,
                 request: tuple[bytes, bytes] | None = None):
        self.name = name
        self.proper_request = request  # (request, answer) of a server that is no NMEA modem
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
        self.port = self.modem_port = None
        end = time.monotonic() + 30.0
        line = ""
        while ready_word not in line and time.monotonic() < end:
            line = self.process.stdout.readline()
            if not line:
                raise RuntimeError(f"{name}: exited before listening")
            if port_word in line:
                self.port = int(line.rsplit(":", 1)[1].split()[0])
            if "modem SRC" in line:  # netsim_manager: the modem a NavUpdate moves
                self.modem_port = int(line.rsplit(" ", 1)[1])

    def request(self) -> tuple[bytes, bytes]:
        if self.proper_request is not None:
            return self.proper_request
        if self.modem_port is None:  # an emulator port: ask for SRC
            return nmea.format_sentence("CCCFQ", ["SRC"]).encode(), b"$CACFG,SRC,"
        request = netsim_pb2.NetSimManagerRequest(id=7)
        request.nav.add(modem_tcp_port=self.modem_port, time=1.7e9, lat=41.5, lon=-70.5,
                        depth=5.0, speed=1.0, heading=0.0)
        return wire.encode_line(request), b"NETSIM|netsim.protobuf.NetSimManagerResponse|"

    def stop(self) -> list[str]:
        self.process.send_signal(signal.SIGTERM)
        out, _ = self.process.communicate(timeout=20)
        return [line for line in out.splitlines() if line.strip()][-3:]


def abuse(target: Target, kind: str, rng: random.Random) -> socket.socket | None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if kind == "never_read":
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    try:
        sock.connect(("127.0.0.1", target.port))
        sock.setblocking(False)
        if kind == "half_line":
            sock.send(target.request()[0][:20])
        elif kind == "garbage":
            junk = rng.randbytes(rng.randrange(1, 100_000))
            sock.send(junk if rng.random() < 0.5 else junk.replace(b"\n", b""))
        elif kind == "never_read":
            sock.send(target.request()[0] * 2000 if target.modem_port
                      else nmea.format_sentence("CCCFQ", ["ALL"]).encode() * 500)
    except (BlockingIOError, ConnectionError):
        pass
    except OSError as exc:
        print(f"  {kind}: {exc}")
        sock.close()
        return None
    return sock


def still_open(sock: socket.socket) -> bool:
    """False once the server closed it (what it sent before is read and discarded)."""
    sock.setblocking(False)
    try:
        while sock.recv(1 << 20):
            pass
    except (BlockingIOError, InterruptedError):
        return True
    except OSError:
        return False
    return False


def proper_client(target: Target, timeout_s: float = 10.0) -> float | None:
    """Seconds from connect to the answer of one valid request; None if none came."""
    data, answer = target.request()
    start = time.monotonic()
    try:
        with socket.create_connection(("127.0.0.1", target.port), timeout=timeout_s) as sock:
            sock.sendall(data)
            received = b""
            while answer not in received and time.monotonic() - start < timeout_s:
                chunk = sock.recv(65536)
                if not chunk:
                    return None
                received += chunk
    except OSError:
        return None
    return time.monotonic() - start if answer in received else None


def run(target: Target, clients: int, seed: int) -> None:
    rng = random.Random(seed)
    pid = target.process.pid
    rss_before = rss_mb(pid)
    before = proper_client(target)
    socks = {kind: [] for kind in KINDS}
    start = time.monotonic()
    for index in range(clients):
        kind = KINDS[index % len(KINDS)]
        sock = abuse(target, kind, rng)
        if sock is not None:
            socks[kind].append(sock)
    opened_s = time.monotonic() - start
    time.sleep(1.0)  # let the server read, answer and drop
    served_s = proper_client(target)
    rss_after = rss_mb(pid)
    alive = target.process.poll() is None
    print(f"{target.name}: {clients} abusive clients opened in {opened_s:.1f} s")
    for kind, items in socks.items():
        open_count = sum(still_open(sock) for sock in items)
        print(f"  {kind:10s} {len(items):4d} opened, {open_count:4d} still open, "
              f"{len(items) - open_count:4d} closed by the server")
        for sock in items:
            sock.close()
    served = "no answer" if served_s is None else f"{served_s * 1000:.0f} ms"
    before_text = "no answer" if before is None else f"{before * 1000:.0f} ms"
    print(f"  alive {alive}; RSS {rss_before:.1f} -> {rss_after:.1f} MB; proper client "
          f"served in {served} (before the abuse: {before_text})")
    for line in target.stop():
        print(f"  exit: {line}")


def hostile_bytes(rng: random.Random) -> bytes:
    """One piece of a raw-mode flood: random bytes, line ends, escapes, broken AT frames."""
    kind = rng.randrange(4)
    if kind == 0:
        return rng.randbytes(rng.randrange(1, 8192))
    if kind == 1:
        return rng.randbytes(rng.randrange(1, 200)) + rng.choice((b"\r\n", b"\n", b"\r"))
    if kind == 2:
        return b"+++" * rng.randrange(1, 50) + b"AT" + rng.randbytes(rng.randrange(0, 40))
    length = rng.choice((0, 1, 64, 65, 1024, 99999))  # lengths that lie about the data
    return f"AT*SEND{rng.choice(('IM', ''))},{length},2,ack,".encode() + rng.randbytes(
        rng.randrange(0, 100)) + b"\n"


def flood(target: Target, seconds: float, rng: random.Random) -> None:
    """One client sends hostile bytes as fast as the server takes them (reading its replies)."""
    sent = replies = 0
    rss_before = rss_mb(target.process.pid)
    start = time.monotonic()
    with socket.create_connection(("127.0.0.1", target.port), timeout=5.0) as sock:
        sock.setblocking(False)
        pending = b""
        while time.monotonic() - start < seconds:
            pending = pending or hostile_bytes(rng)
            try:
                count = sock.send(pending)
                sent, pending = sent + count, pending[count:]
            except BlockingIOError:
                time.sleep(0.001)
            except OSError as exc:
                print(f"  flood: closed by the server after {sent} bytes ({exc})")
                break
            try:
                replies += len(sock.recv(1 << 20))
            except (BlockingIOError, InterruptedError):
                pass
    elapsed = time.monotonic() - start
    served = proper_client(target)
    print(f"  flood: {sent / 1e6:.1f} MB of hostile bytes taken in {elapsed:.1f} s "
          f"({sent / 1e6 / elapsed:.2f} MB/s), {replies} bytes of replies; RSS "
          f"{rss_before:.1f} -> {rss_mb(target.process.pid):.1f} MB; alive "
          f"{target.process.poll() is None}; proper client served in "
          f"{'no answer' if served is None else f'{served * 1000:.0f} ms'}")


def churn(target: Target, clients: int, rng: random.Random) -> None:
    """Clients that connect, send a little garbage and close, one after another."""
    failures = 0
    rss_before = rss_mb(target.process.pid)
    start = time.monotonic()
    for _ in range(clients):
        try:
            with socket.create_connection(("127.0.0.1", target.port), timeout=5.0) as sock:
                sock.sendall(hostile_bytes(rng)[:512])
        except OSError:
            failures += 1
    elapsed = time.monotonic() - start
    served = proper_client(target)
    print(f"  churn: {clients} connect/send/close clients in {elapsed:.1f} s "
          f"({clients / elapsed:.0f}/s, {failures} failed to connect); RSS "
          f"{rss_before:.1f} -> {rss_mb(target.process.pid):.1f} MB; alive "
          f"{target.process.poll() is None}; proper client served in "
          f"{'no answer' if served is None else f'{served * 1000:.0f} ms'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=500)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--flood-seconds", type=float, default=5.0)
    parser.add_argument("--churn", type=int, default=2000)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        config = os.path.join(tmp, "netsim_manager.yaml")
        with open(config, "w") as stream:
            yaml.safe_dump(MANAGER_CONFIG, stream)
        emulator = ["micromodem_emulator", "--src", "1", "--tcp-port", "0"]
        for name, command, words in (
                ("netsim_manager", ["netsim_manager", "--config", config],
                 ("listening on", "modem SRC 1")),
                ("micromodem_emulator (replace)", emulator, ("on tcp", "on tcp")),
                ("micromodem_emulator (share)", emulator + ["--on-new-client", "share"],
                 ("on tcp", "on tcp"))):
            run(Target(name, command, *words), options.clients, options.seed)
        raw = Target("evologics_emulator (raw, replace)", EVOLOGICS, "tcp 127.0.0.1:",
                     "tcp 127.0.0.1:", (b"AT?AL\n", b"1\r\n"))
        rng = random.Random(options.seed)
        print(f"{raw.name}: a garbage flood, then connect/close churn")
        flood(raw, options.flood_seconds, rng)
        churn(raw, options.churn, rng)
        run(raw, options.clients, options.seed)


if __name__ == "__main__":
    main()
