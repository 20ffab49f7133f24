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
connection stays open for the next line. No client can stall or lock the manager or a modem
port (`tcp_serving`: idle and write timeouts, a bounded number of clients with the client idle
longest dropped first, bounded per-client output; limits in the `manager:` mapping); every
refusal and drop is counted in `counters`. ROS-free.
"""

from __future__ import annotations

import argparse
import collections
import signal
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
from acomms_sim.netsim.wire import WireError, decode_line, encode_line
from acomms_sim.tcp_serving import Client, LimitedLog, TcpLineServer

Request = netsim_pb2.NetSimManagerRequest
Response = netsim_pb2.NetSimManagerResponse
STATUS_NAMES = {v.number: v.name for v in Response.Status.DESCRIPTOR.values}


class EmulatedModems(EmulatorNetwork):
    """The configured modems: models on one simulated channel, each on its TCP port. An
    EmulatorNetwork (its close()) whose modems may start without a position."""

    def __init__(self, config: ManagerConfig, on_log: Callable[[str], None] | None = None):
        # replaces EmulatorNetwork's YAML set-up
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
                log = on_log and (lambda text, src=pair.src: on_log(f"modem SRC {src}: {text}"))
                server = TcpServer(model, pair.modem_tcp_port, pair.modem_host,
                                   config.modem_on_new_client, config.modem_limits(), log)
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
        self._log = LimitedLog(self.on_log)  # (kind, text): bad lines cannot flood the log
        self.modems = EmulatedModems(config, self.on_log)
        try:
            self._server = TcpLineServer(self._on_line, config.port, config.host,
                                         config.limits(), "share", self.on_log, self.counters,
                                         "netsim_manager")
        except OSError:
            self.modems.close()
            raise
        self.port = self._server.port

    @property
    def modem_ports(self) -> dict[int, int]:
        """SRC -> the TCP port its emulated modem listens on."""
        return {pair.src: port for port, pair in self.modems.pairs.items()}

    def start(self) -> NetsimManager:
        self._server.start()
        return self

    def close(self) -> None:
        self._server.close()
        self.modems.close()

    def modem_counters(self) -> dict[str, int]:
        """The modem ports' non-zero TCP counters, as `modem_src_{src}_{counter}`."""
        return {f"modem_src_{model.src}_{name}": count
                for model, server in zip(self.modems.models, self.modems.servers, strict=True)
                for name, count in server.counters.items() if count}

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
            self._log(exc.kind, f"{peer_address}: {exc}")
            return None
        return encode_line(self.process_request(request, peer_address))

    def _on_line(self, client: Client, line: bytes) -> None:
        """One line from a client of the manager port (the TCP server's thread)."""
        try:
            response = self.handle_line(line, client.address)
        except Exception as exc:  # noqa: BLE001 - a bug must not stop the server
            self.counters["internal_errors"] += 1
            self._log("internal_errors", f"{client.address}: internal error on a request: "
                      f"{exc!r}")
            return
        if response is not None:
            self._server.send(client, response)


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
    counters = {**manager.counters, **manager.modem_counters()}
    print(f"netsim_manager: {dict(sorted(counters.items()))}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
