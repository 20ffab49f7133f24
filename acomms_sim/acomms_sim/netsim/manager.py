"""A netsim-compatible manager in front of emulated Micromodems on our simulated channel.

    netsim_manager --config netsim_manager.yaml     # (manager_config.py shows the file)

Vehicle simulators connect over TCP (default port 61999) and send
`NETSIM|netsim.protobuf.NetSimManagerRequest|<base64>` lines; each request is answered with a
`NetSimManagerResponse` line carrying its id and a status (`manager_config.validate_nav`: the
first NavUpdate that fails decides it, as in netsim). Every accepted NavUpdate moves that
modem on the simulated channel (`SimChannelBackend.set_position`). ReceiveStats pushes are
accepted, counted and handed to `on_stats(stats, peer_address, request_id)` (the console
script logs them; netsim_manager_node publishes them).

Each configured modem is a `MicromodemModel` served on its `modem_tcp_port`
(`micromodem_emulator.TcpServer`), speaking the Micromodem's NMEA, so an unmodified vehicle
simulator plus a Micromodem driver (ours, Goby's, pyacomms) works against our channel.

Bad input never stops the server: a line that is not a request (framing, unknown name, bad
base64, undecodable protobuf, over 64 KiB) is counted under its kind and skipped, and the
connection stays open for the next line. ROS-free.
"""

from __future__ import annotations

import argparse
import collections
import select
import signal
import socket
import sys
import threading
from collections.abc import Callable

from acomms_sim.emulator.micromodem_emulator import (
    EmulatorNetwork,
    TcpServer,
    channel_backend_from_spec,
)
from acomms_sim.emulator.micromodem_model import MicromodemModel
from acomms_sim.netsim.manager_config import ManagerConfig, load_config, validate_nav
from acomms_sim.netsim.proto import netsim_pb2
from acomms_sim.netsim.wire import LINE_TOO_LONG, LineSplitter, WireError, decode_line, encode_line

Request = netsim_pb2.NetSimManagerRequest
Response = netsim_pb2.NetSimManagerResponse
STATUS_NAMES = {v.number: v.name for v in Response.Status.DESCRIPTOR.values}
MAX_CLIENTS = 64


class EmulatedModems(EmulatorNetwork):
    """The configured modems: models on one simulated channel, each on its TCP port. An
    EmulatorNetwork (its close()) whose modems may start without a position."""

    def __init__(self, config: ManagerConfig):  # replaces EmulatorNetwork's YAML set-up
        self.endpoints = {}
        self.backend = channel_backend_from_spec(config.channel, "netsim_manager")
        self.models: list[MicromodemModel] = []
        self.servers: list[TcpServer] = []
        self.pairs = {}  # bound modem TCP port -> SimEnvironmentPair
        try:
            for pair in config.pairs:
                if pair.position is not None:
                    self.backend.set_position(pair.src, *pair.position)
                model = MicromodemModel(pair.src, self.backend,
                                        airtime_scale=config.airtime_scale, config=pair.config)
                self.models.append(model)
                server = TcpServer(model, pair.modem_tcp_port, pair.modem_host)
                self.servers.append(server)
                self.pairs[server.port] = pair
                self.endpoints[pair.src] = f"tcp {pair.modem_host}:{server.port}"
                server.start()
        except (OSError, ValueError):
            self.close()
            raise

    def move(self, port: int, lat: float, lon: float, depth_m: float) -> None:
        self.backend.set_position(self.pairs[port].src, lat, lon, depth_m)


class NetsimManager:
    """The manager's TCP server (see module docstring). `port` is the bound port."""

    def __init__(self, config: ManagerConfig, on_stats: Callable | None = None,
                 on_log: Callable[[str], None] | None = None):
        self.config = config
        self.counters = collections.Counter()
        self.last_status: dict[int, int] = {}  # modem port -> status of its last NavUpdate
        self.on_stats = on_stats or (lambda stats, peer, request_id: None)
        self.on_log = on_log or (lambda text: None)
        self.modems = EmulatedModems(config)
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            self._listener.bind((config.host, config.port))
            self._listener.listen(8)
        except OSError:
            self._listener.close()
            self.modems.close()
            raise
        self.port = self._listener.getsockname()[1]
        self._clients: dict[socket.socket, tuple[str, LineSplitter]] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="netsim_manager")

    @property
    def modem_ports(self) -> dict[int, int]:
        """SRC -> the TCP port its emulated modem listens on."""
        return {pair.src: port for port, pair in self.modems.pairs.items()}

    def start(self) -> NetsimManager:
        self._thread.start()
        return self

    def close(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(2.0)
        self._listener.close()  # first: a client must not reconnect while we close the rest
        for client in list(self._clients):
            client.close()
        self._clients.clear()
        self.modems.close()

    # ------------------------------------------------------------------ requests
    def process_request(self, request, peer_address: str):
        """The response to one request from peer_address; accepted NavUpdates move modems."""
        status = Response.UPDATE_ACCEPTED
        for nav in request.nav:
            status = validate_nav(nav, peer_address, self.modems.pairs, self.config.bounds)
            self.last_status[nav.modem_tcp_port] = status
            if status != Response.UPDATE_ACCEPTED:
                break
            try:
                self.modems.move(nav.modem_tcp_port, nav.lat, nav.lon, nav.depth)
            except ValueError as exc:  # inside the bounds yet impossible (bad bounds config)
                self.counters["nav_unusable"] += 1
                self.on_log(f"NavUpdate for port {nav.modem_tcp_port} unusable: {exc}")
                status = Response.UPDATE_FAILED_OUT_OF_DEFINED_REGION
                break
            self.counters["nav_accepted"] += 1
        if status != Response.UPDATE_ACCEPTED:
            self.counters[f"status_{STATUS_NAMES[status].lower()}"] += 1
        if request.stats:
            self.counters["stats_received"] += len(request.stats)
            self.on_stats(list(request.stats), peer_address, request.id)
        self.counters["requests"] += 1
        return Response(request_id=request.id, status=status)

    def handle_line(self, line: bytes, peer_address: str) -> bytes | None:
        """The response line for one received line, or None (a counted, logged error)."""
        try:
            request = decode_line(line, Request)
        except WireError as exc:
            self.counters[exc.kind] += 1
            self.on_log(f"{peer_address}: {exc}")
            return None
        return encode_line(self.process_request(request, peer_address))

    # ------------------------------------------------------------------ TCP
    def _run(self) -> None:
        while not self._stop.is_set():
            ready, _, _ = select.select([self._listener, *self._clients], [], [], 0.1)
            for sock in ready:
                if sock is self._listener:
                    self._accept()
                else:
                    self._receive(sock)

    def _accept(self) -> None:
        try:
            client, (address, _) = self._listener.accept()
        except OSError:
            return
        if len(self._clients) >= MAX_CLIENTS:
            self.counters["clients_refused"] += 1
            client.close()
            return
        client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._clients[client] = (address, LineSplitter())
        self.counters["connections"] += 1

    def _receive(self, client: socket.socket) -> None:
        address, splitter = self._clients[client]
        try:
            data = client.recv(65536)
        except OSError:
            data = b""
        if not data:
            self._drop(client)
            return
        too_long = splitter.too_long
        lines = splitter.feed(data)
        if splitter.too_long > too_long:
            self.counters[LINE_TOO_LONG] += splitter.too_long - too_long
            self.on_log(f"{address}: line over {splitter.max_line_bytes} bytes dropped")
        for line in lines:
            try:
                response = self.handle_line(line, address)
            except Exception as exc:  # noqa: BLE001 - a bug must not stop the server
                self.counters["internal_errors"] += 1
                self.on_log(f"{address}: internal error on a request: {exc!r}")
                continue
            if response is not None:
                try:
                    client.sendall(response)
                except OSError:
                    self._drop(client)
                    return

    def _drop(self, client: socket.socket) -> None:
        self._clients.pop(client, None)
        client.close()
        self.counters["disconnections"] += 1


def _log_stats(stats, peer: str, request_id: int) -> None:
    for item in stats:
        print(f"netsim_manager: ReceiveStats from {peer} (request {request_id}): rx port "
              f"{item.modem_tcp_port} tx port {item.tx_modem_tcp_port} success "
              f"{item.packet_success}", flush=True)


def main(args=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", required=True, help="manager YAML (see manager_config)")
    parser.add_argument("--port", type=int, default=None, help="override manager.port")
    options = parser.parse_args(args)
    try:
        config = load_config(options.config)
        if options.port is not None:
            config.port = options.port
        manager = NetsimManager(config, on_stats=_log_stats,
                                on_log=lambda text: print(f"netsim_manager: {text}",
                                                          file=sys.stderr, flush=True))
    except (ValueError, OSError) as exc:
        print(f"netsim_manager: {exc}", file=sys.stderr)
        return 1
    manager.start()
    print(f"netsim_manager: listening on {config.host}:{manager.port}", flush=True)
    for src, port in sorted(manager.modem_ports.items()):
        print(f"netsim_manager: modem SRC {src} on tcp port {port}", flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    while not stop.wait(0.5):
        pass
    manager.close()
    print(f"netsim_manager: {dict(sorted(manager.counters.items()))}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
