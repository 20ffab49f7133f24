"""EvoLogics S2C emulator: `EvologicsModel`s on pseudo-terminals or TCP ports, on the simulated
channel.

    evologics_emulator --modem 1:0,0,2:usbl --modem 2:600,300,50
        # modem 1 (a USBL) at 0 m north, 0 m east, 2 m depth; modem 2 at 600 m N, 300 m E, 50 m
    evologics_emulator --modem 1:0,0,2:usbl --modem 2:600,300,50 --link-dir /tmp/s2c
        # the same, and /tmp/s2c/modem1, /tmp/s2c/modem2 link to the ptys
    evologics_emulator --modem 1:0,0,2:usbl --modem 2:600,300,50 --tcp-port 9200
        # modem 1 on TCP port 9200, modem 2 on 9201 (the i-th --modem on BASE+i; 0: any ports)

Each modem is served on its own pseudo-terminal (the printed path; a driver opens it as a serial
port) and speaks the S2C AT protocol (`acomms_sim.emulator.evologics_model`); they hear each other
through `SimChannelBackend` with the default channel of `micromodem_emulator --network`. A USBL
modem reports `USBLLONG` / `USBLANGLES` with the seeded default error model
(`acomms_sim.emulator.usbl_errors`; `--usbl-seed`). The bytes are passed through unsplit, so
binary payloads survive. With `--tcp-port BASE` every modem is served on a TCP port instead
(S2C modems serve TCP 9200; the i-th `--modem`, from 0, on BASE+i), through tcp_serving's raw byte
mode: each connection's bytes go to the model unsplit, one host at a time (`--on-new-client`
replace, the default: a reconnecting driver takes over; refuse: the first keeps it), with its
limits (`--idle-timeout`, `--write-timeout`; wall clock) and counters (the exit summary). ROS-free.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from collections.abc import Callable

from acomms_sim.emulator.channel_backend import SimChannelBackend
from acomms_sim.emulator.evologics_model import MAX_ADDRESS, EvologicsModel
from acomms_sim.emulator.micromodem_emulator import (
    PtyServer,
    TcpServer,
    _wait_for_signal,
    channel_backend_from_spec,
)
from acomms_sim.emulator.usbl_errors import UsblErrorModel
from acomms_sim.physics.geodesy import offset_position
from acomms_sim.tcp_serving import ServingLimits, TcpRawServer

ORIGIN = (41.5, -70.6)  # where the north/east offsets start (any open-water point)


class RawPtyServer(PtyServer):
    """A pty for a byte-stream model: host bytes go to `model.feed` unsplit."""

    def __init__(self, model: EvologicsModel, link: str | None = None):
        super().__init__(model, link)
        model.output = self.write_bytes

    def _feed(self, data: bytes) -> None:
        self.model.feed(data)


class RawTcpServer(TcpServer):
    """A TCP port for a byte-stream model (tcp_serving's raw byte mode): client bytes go to
    `model.feed` unsplit, a newly admitted client starts with an empty frame buffer, the model's
    output goes to the client without waiting. `path` says where a driver connects."""

    log_prefix = "evologics_emulator: address"

    def __init__(self, model: EvologicsModel, port: int = 0, host: str = "127.0.0.1",
                 on_new_client: str = "replace", limits: ServingLimits | None = None,
                 on_log: Callable[[str], None] | None = None):
        super().__init__(model, port, host, on_new_client, limits, on_log)
        model.output = self.write_output
        self.path, self.link = f"tcp {host}:{self.port}", None

    def _make_server(self, *args, **kwargs) -> TcpRawServer:
        return TcpRawServer(lambda client, data: self.model.feed(data), *args,
                            on_connect=lambda client: self.model.reader.reset(), **kwargs)


TCP_POLICIES = ("replace", "refuse")  # one host at a time, as on the modem's serial port


@dataclasses.dataclass(frozen=True)
class TcpServing:
    """How `start_modems` serves modems on TCP: the i-th on base_port + i (0: any free port)."""

    base_port: int
    host: str = "127.0.0.1"
    on_new_client: str = "replace"
    limits: ServingLimits = ServingLimits(idle_timeout_s=0.0)

    def port(self, index: int) -> int:
        """The port of the index-th modem; ValueError past 65535."""
        port = self.base_port + index if self.base_port else 0
        if not 0 <= port <= 65535:
            raise ValueError(f"--tcp-port {self.base_port}: modem {index + 1} would be on port "
                             f"{port}, past 65535")
        return port


def parse_modem(text: str) -> dict:
    """"ADDRESS:NORTH,EAST,DEPTH[:usbl]" -> dict; ValueError with the expected form."""
    parts = text.split(":")
    try:
        if len(parts) not in (2, 3) or (len(parts) == 3 and parts[2] != "usbl"):
            raise ValueError
        north, east, depth = (float(v) for v in parts[1].split(","))
        address = int(parts[0])
    except ValueError:
        raise ValueError(f"--modem {text!r}: expected ADDRESS:NORTH,EAST,DEPTH[:usbl]") from None
    if not 1 <= address <= MAX_ADDRESS:
        raise ValueError(f"--modem {text!r}: address must be 1..{MAX_ADDRESS}")
    return {"address": address, "north": north, "east": east, "depth": depth,
            "usbl": len(parts) == 3}


def start_modems(specs: list[dict], usbl_seed: int = 0,
                 backend: SimChannelBackend | None = None, link_dir: str | None = None,
                 tcp: TcpServing | None = None):
    """(backend, [(model, server)]) with every modem placed and served; ValueError (or OSError:
    a port in use) if bad, nothing left served. `link_dir`: also a stable symlink
    `<link_dir>/modem<ADDRESS>` to each pty; `tcp`: TCP ports instead of ptys."""
    own_backend = backend is None
    backend = backend or channel_backend_from_spec(None)
    if link_dir:
        os.makedirs(link_dir, exist_ok=True)
    served = []
    try:
        for index, spec in enumerate(specs):
            served.append(_serve_modem(spec, backend, usbl_seed, link_dir, tcp, index))
    except (ValueError, OSError):
        stop_modems(backend, served, close_backend=own_backend)
        raise
    return backend, served


def _serve_modem(spec: dict, backend, usbl_seed: int, link_dir: str | None,
                 tcp: TcpServing | None, index: int):
    """(model, server) of one --modem spec, placed on the backend and served."""
    latitude, longitude = offset_position(*ORIGIN, spec["north"], spec["east"])
    backend.set_position(spec["address"], latitude, longitude, spec["depth"])
    usbl = UsblErrorModel(seed=usbl_seed) if spec["usbl"] else None
    if tcp is not None:
        return serve_modem(backend, spec["address"], usbl, make_server=lambda model: RawTcpServer(
            model, tcp.port(index), tcp.host, tcp.on_new_client, tcp.limits))
    link = os.path.join(link_dir, f"modem{spec['address']}") if link_dir else None
    return serve_modem(backend, spec["address"], usbl, link)


def serve_modem(backend: SimChannelBackend, address: int, usbl: UsblErrorModel | None,
                link: str | None = None, make_server=None) -> tuple[EvologicsModel, object]:
    """One modem on the backend (it needs a position there to transmit), served on a new pty
    (or on what `make_server(model)` returns: a TCP port); a USBL one when `usbl` is given.
    Close the server, then the model."""
    model = EvologicsModel(address, backend, usbl=usbl, relative_position=backend.relative_enu)
    try:
        server = make_server(model) if make_server else RawPtyServer(model, link)
    except (ValueError, OSError):
        model.close()
        raise
    server.start()
    return model, server


def stop_modems(backend, served, close_backend: bool = True) -> list[str]:
    """Close every server and model (and the backend); the TCP servers' summary lines."""
    lines = []
    for model, server in served:
        server.close()
        model.close()
        if isinstance(server, TcpServer):
            lines.append(f"address {model.src} {server.summary()}")
    if close_backend:
        backend.close()
    return lines


def add_tcp_arguments(parser: argparse.ArgumentParser) -> None:
    """The TCP flags of the command line (`tcp_serving_from` reads them)."""
    tcp = parser.add_argument_group("TCP ports (S2C modems serve TCP 9200)")
    tcp.add_argument("--tcp-port", type=int, metavar="BASE", help="serve the i-th --modem "
                     "(from 0) on TCP port BASE+i instead of a pty (0: any free ports, printed)")
    tcp.add_argument("--host", default="127.0.0.1", help="TCP address to listen on")
    tcp.add_argument("--on-new-client", choices=TCP_POLICIES, default="replace",
                     help="a new connection replaces the current host (default, logged) or is "
                          "refused while one is connected")
    tcp.add_argument("--idle-timeout", type=float, default=0.0, metavar="S",
                     help="wall clock s without a byte before a host is dropped (0 = never)")
    tcp.add_argument("--write-timeout", type=float, default=10.0, metavar="S",
                     help="wall clock s a host may leave output unread before it is dropped")


def tcp_serving_from(options: argparse.Namespace) -> TcpServing | None:
    """TcpServing of the parsed TCP flags (None: ptys); ValueError naming a bad value."""
    if options.tcp_port is None:
        return None
    if options.link_dir:
        raise ValueError("--link-dir links ptys; with --tcp-port drivers connect to the ports")
    if not 0 <= options.tcp_port <= 65535:
        raise ValueError(f"--tcp-port {options.tcp_port} outside 0-65535")
    limits = ServingLimits(idle_timeout_s=options.idle_timeout,
                           write_timeout_s=options.write_timeout).validate()
    return TcpServing(options.tcp_port, options.host, options.on_new_client, limits)


def _print_endpoints(served) -> None:
    for model, server in served:
        print(f"evologics_emulator: address {model.src}"
              f"{' (usbl)' if model.usbl else ''}: {server.path}"
              f"{f' (link {server.link})' if server.link else ''}", flush=True)


def main(args=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("Each modem")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--modem", action="append", default=[], required=True,
                        metavar="ADDRESS:NORTH,EAST,DEPTH[:usbl]", help="one emulated modem")
    parser.add_argument("--usbl-seed", type=int, default=0, help="seed of the USBL errors")
    parser.add_argument("--link-dir", metavar="DIR", help="also link DIR/modem<ADDRESS> to each "
                        "modem's pty (a stable path for a driver's modem_serial_port)")
    add_tcp_arguments(parser)
    options = parser.parse_args(args)
    try:
        specs = [parse_modem(text) for text in options.modem]
        backend, served = start_modems(specs, options.usbl_seed, link_dir=options.link_dir,
                                       tcp=tcp_serving_from(options))
    except (ValueError, OSError) as exc:
        print(f"evologics_emulator: {exc}", file=sys.stderr)
        return 2
    try:
        _wait_for_signal(ready=lambda: _print_endpoints(served))
    finally:
        for line in stop_modems(backend, served):
            print(f"evologics_emulator: {line}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
