"""Micromodem emulator: a `MicromodemModel` served on a pseudo-terminal or a TCP port.

    micromodem_emulator --src 1                       # pty; prints the serial device path
    micromodem_emulator --src 1 --link /tmp/modem1    # pty plus a stable symlink to it
    micromodem_emulator --src 2 --tcp-port 4002       # TCP server, one client at a time
    micromodem_emulator --src 2 --tcp-port 4002 --on-new-client refuse   # keep the first

    micromodem_emulator --network network.yaml        # several modems on the simulated channel
    kill -USR1 <pid>                                  # a pulse on every modem's TXTRIG input

A driver connects to it as to a real modem (modem_connection_type serial with the printed path,
or tcp with the port). A single emulated modem has no acoustic peers (its transmissions are
reported sent and heard by nobody). With `--network`, every modem of the file is served (pty or
TCP) in one process and they hear each other through acomms_sim's channel physics
(`channel_backend.SimChannelBackend`): propagation delay, transmission loss, noise, collisions,
half duplex, frame errors. Network file:

    channel:                      # all optional; defaults shown
      sound_speed_mps: 1500.0
      spreading: practical        # spherical | practical | cylindrical
      absorption_model: francois_garrison   # thorp | francois_garrison
      ambient_noise_db: 70.0      # band noise level, dB re 1 uPa
      source_level_db: null       # null: per modem from its pwramp.txlevel and band (profile)
      seed: 0
      fading_model: none          # none | rayleigh | rician (seeded per link and packet)
      fading_k_factor: 0.0        # Rician K
      coherence_time_s: 0.0       # 0: one fading gain per packet
    modems:
      - {src: 1, tcp_port: 4001, latitude: 41.52, longitude: -70.67, depth: 10.0}
      - {src: 2, link: /tmp/modem2, latitude: 41.53, longitude: -70.67, depth: 50.0}

Tests and scenarios can also build models on a shared `AcousticBackend` in their own process and
serve each with `PtyServer` / `TcpServer`. ROS-free.
"""

from __future__ import annotations

import argparse
import os
import select
import signal
import sys
import threading
import tty
from collections.abc import Callable

import yaml

from acomms_sim.emulator.channel_backend import SimChannelBackend
from acomms_sim.emulator.micromodem_model import LoopbackBackend, MicromodemModel
from acomms_sim.physics.ambient_noise import AmbientNoise
from acomms_sim.physics.fading import FadingModel
from acomms_sim.physics.sound_speed import SoundSpeedProfile
from acomms_sim.physics.transmission_loss import Propagation, SpreadingModel
from acomms_sim.tcp_serving import (
    COUNTER_NAMES,
    ON_NEW_CLIENT,
    LineSplitter,
    ServingLimits,
    TcpLineServer,
)


class _LineServer:
    """Splits host bytes into lines for the model; writes model output to the host."""

    def __init__(self, model: MicromodemModel):
        self.model = model
        self._splitter = LineSplitter()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._write_lock = threading.Lock()
        self.dropped_output = 0
        model.output = self.write_text

    def _feed(self, data: bytes) -> None:
        for line in self._splitter.feed(data):  # no newline for 64 KiB: garbage, forgotten
            self.model.handle_line(line)

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


class TcpServer:
    """Serves the model on a TCP port (0 = pick one; see `port`) through `tcp_serving`: no
    client can stall it. on_new_client: `replace` (default, as before: a new connection
    takes over from the current driver, so a driver reconnecting after a half-open
    connection is served at once; logged), `refuse` (the current client keeps the modem) or
    `share` (every client gets the modem's output, any may send). `counters` counts
    connections, refusals, replacements and drops; `summary()` is the one-line summary."""

    log_prefix = "micromodem_emulator: SRC"  # of the default on_log's lines

    def __init__(self, model: MicromodemModel, port: int = 0, host: str = "127.0.0.1",
                 on_new_client: str = "replace", limits: ServingLimits | None = None,
                 on_log: Callable[[str], None] | None = None):
        self.model = model
        self.dropped_output = 0
        self._server = self._make_server(
            port, host, limits or ServingLimits(idle_timeout_s=0.0), on_new_client,
            on_log or (lambda text: print(f"{self.log_prefix} {model.src}: {text}",
                                          file=sys.stderr, flush=True)),
            name=f"modem{model.src}_tcp")
        self.port = self._server.port
        self.counters = self._server.counters
        model.output = self.write_text

    def _make_server(self, *args, **kwargs) -> TcpLineServer:
        """The line server feeding the model (a byte-stream model's server overrides this)."""
        return TcpLineServer(lambda client, line: self.model.handle_line(line), *args, **kwargs)

    def write_text(self, text: str) -> None:
        """The model's output: never waits."""
        self.write_output(text.encode("ascii", errors="replace"))

    def write_output(self, data: bytes) -> None:
        """Model bytes to every client, never waiting (counted when nobody took them)."""
        if not self._server.broadcast(data):
            self.dropped_output += 1  # no client (or none taking output)

    def write_bytes(self, data: bytes) -> None:
        """Raw bytes to the host (tests and benches: faults and floods on demand), as fast
        as the client takes them: waits for room in its output buffer first."""
        self._server.wait_for_room(len(data), self._server.limits.write_timeout_s)
        if not self._server.broadcast(data):
            self.dropped_output += 1

    def start(self) -> None:
        self._server.start()

    def close(self) -> None:
        self._server.close()

    def summary(self) -> str:
        counts = ", ".join(f"{name} {self.counters[name]}" for name in COUNTER_NAMES
                           if self.counters[name])
        return f"port {self.port}: {counts or 'no connections'}"


def _parse_config(items: list[str]) -> dict:
    config = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise argparse.ArgumentTypeError(f"--config expects NAME=VALUE, got {item!r}")
        config[name] = value
    return config


CHANNEL_DEFAULTS = {"sound_speed_mps": 1500.0, "spreading": SpreadingModel().spreading,
                    "absorption_model": SpreadingModel().absorption_model,
                    "ambient_noise_db": 70.0, "source_level_db": None, "seed": 0,
                    "fading_model": "none", "fading_k_factor": 0.0, "coherence_time_s": 0.0}
MODEM_KEYS = {"src", "tcp_port", "host", "link", "latitude", "longitude", "depth", "config"}


def channel_backend_from_spec(channel: dict | None, source: str = "network") -> SimChannelBackend:
    """The simulated channel a network file's `channel:` mapping describes (defaults above);
    ValueError naming source and the key. Shared by EmulatorNetwork and the netsim manager."""
    channel = {**CHANNEL_DEFAULTS, **(channel or {})}
    unknown = set(channel) - set(CHANNEL_DEFAULTS)
    if unknown:
        raise ValueError(f"{source}: channel: unknown keys {sorted(unknown)}")
    model = SpreadingModel(channel["spreading"], channel["absorption_model"])
    try:
        fading = FadingModel(str(channel["fading_model"]), float(channel["fading_k_factor"]),
                             float(channel["coherence_time_s"]))
        model.validate()
        fading.validate()
        sound_speed_mps = float(channel["sound_speed_mps"])
        noise_db = float(channel["ambient_noise_db"])
        level_db = None if channel["source_level_db"] is None else float(channel["source_level_db"])
        seed = int(channel["seed"])
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{source}: channel: {exc}") from None
    return SimChannelBackend(Propagation(model, SoundSpeedProfile.constant(sound_speed_mps)),
                             AmbientNoise("fixed", noise_db), source_level_db=level_db, seed=seed,
                             fading=fading)


class EmulatorNetwork:
    """Several emulated modems on one simulated channel, each served on a pty or TCP port."""

    def __init__(self, spec: dict, source: str = "network", airtime_scale: float = 1.0,
                 on_new_client: str = "replace", limits: ServingLimits | None = None):
        self.serving = (on_new_client, limits)  # of every TCP modem (TcpServer's arguments)
        self.backend = channel_backend_from_spec(spec.get("channel"), source)
        modems = spec.get("modems")
        if not isinstance(modems, list) or not modems:
            raise ValueError(f"{source}: modems: a non-empty list is required")
        self.models, self.servers, self.endpoints = [], [], {}
        try:
            for index, entry in enumerate(modems):
                self._add(entry, f"{source}: modems[{index}]", airtime_scale)
        except Exception:
            self.close()
            raise

    def _add(self, entry: dict, where: str, airtime_scale: float) -> None:
        if not isinstance(entry, dict):
            raise ValueError(f"{where}: expected a mapping")
        unknown = set(entry) - MODEM_KEYS
        if unknown:
            raise ValueError(f"{where}: unknown keys {sorted(unknown)}")
        try:
            src = int(entry["src"])
            position = (float(entry["latitude"]), float(entry["longitude"]),
                        float(entry["depth"]))
        except KeyError as exc:
            raise ValueError(f"{where}: missing {exc.args[0]}") from None
        if not 0 <= src <= 255:
            raise ValueError(f"{where}: src {src} outside 0-255")
        try:
            self.backend.set_position(src, *position)
            model = MicromodemModel(src, self.backend, airtime_scale=airtime_scale,
                                    config=entry.get("config"))
        except ValueError as exc:
            raise ValueError(f"{where}: {exc}") from None
        self.models.append(model)
        if "tcp_port" in entry:
            server = TcpServer(model, int(entry["tcp_port"]), entry.get("host", "127.0.0.1"),
                               *self.serving)
            self.endpoints[src] = f"tcp {entry.get('host', '127.0.0.1')}:{server.port}"
        else:
            server = PtyServer(model, entry.get("link"))
            self.endpoints[src] = server.path
        self.servers.append(server)
        server.start()

    def summary(self) -> list[str]:
        """One line per TCP modem: its connection counters (micromodem_emulator's exit
        summary)."""
        return [f"SRC {model.src} {server.summary()}"
                for model, server in zip(self.models, self.servers, strict=True)
                if isinstance(server, TcpServer)]

    def close(self) -> None:
        for server in self.servers:
            server.close()
        for model in self.models:
            model.close()
        self.backend.close()


def load_network(path: str, airtime_scale: float = 1.0, on_new_client: str = "replace",
                 limits: ServingLimits | None = None) -> EmulatorNetwork:
    """EmulatorNetwork from a network YAML file; ValueError naming the file and key."""
    try:
        with open(path) as stream:
            spec = yaml.safe_load(stream) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise ValueError(f"{path}: {exc}") from None
    if not isinstance(spec, dict):
        raise ValueError(f"{path}: expected a mapping with channel and modems")
    return EmulatorNetwork(spec, path, airtime_scale, on_new_client, limits)


def _wait_for_signal(models=(), ready: Callable[[], None] | None = None) -> None:
    """Until SIGTERM / SIGINT; SIGUSR1 pulses every modem's TXTRIG input. `ready` runs once the
    handlers are in place (e.g. prints the ports: a stop sent when they appear is handled)."""
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    signal.signal(signal.SIGUSR1, lambda *_: [model.pulse_txtrig() for model in models])
    if ready is not None:
        ready()
    while not stop.wait(0.5):
        pass


def _parser() -> argparse.ArgumentParser:
    # the usage lines and the network file format of the module docstring
    # (docs/guide/drivers.md: "file format in micromodem_emulator --help")
    parser = argparse.ArgumentParser(description=__doc__.split("Tests and scenarios")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
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
    parser.add_argument("--network", default=None, metavar="YAML",
                        help="serve every modem of this network file on the simulated channel")
    tcp = parser.add_argument_group("TCP ports (--tcp-port and the network's tcp_port modems)")
    tcp.add_argument("--on-new-client", choices=ON_NEW_CLIENT, default="replace",
                     help="a new connection replaces the current client (default, logged), "
                          "is refused while one is connected, or shares the modem")
    tcp.add_argument("--idle-timeout", type=float, default=0.0, metavar="S",
                     help="wall clock s without a complete line before a client is dropped "
                          "(0 = never, default)")
    tcp.add_argument("--write-timeout", type=float, default=10.0, metavar="S",
                     help="wall clock s a client may leave output unread before it is dropped")
    tcp.add_argument("--max-clients", type=int, default=8,
                     help="clients at once with --on-new-client share (then the client idle "
                          "longest is dropped)")
    return parser


def main(args=None) -> int:
    parser = _parser()
    options = parser.parse_args(args)
    if not 0 <= options.src <= 255:
        parser.error("--src must be 0-255")
    if options.airtime_scale <= 0:
        parser.error("--airtime-scale must be > 0")
    try:
        limits = ServingLimits(options.max_clients, options.idle_timeout,
                               options.write_timeout).validate()
        config = _parse_config(options.config)
    except (ValueError, argparse.ArgumentTypeError) as exc:
        parser.error(str(exc))
    if options.network:
        return _serve_network(options, limits)
    backend = LoopbackBackend()
    model = MicromodemModel(options.src, backend, airtime_scale=options.airtime_scale,
                            config=config)
    try:
        if options.tcp_port is not None:
            server = TcpServer(model, options.tcp_port, options.host, options.on_new_client,
                               limits)
            where = f"tcp {options.host}:{server.port}"
        else:
            server = PtyServer(model, options.link)
            where = server.path + (f" (link {options.link})" if options.link else "")
    except OSError as exc:
        print(f"micromodem_emulator: {exc}", file=sys.stderr)
        return 1
    server.start()
    _wait_for_signal([model], ready=lambda: print(f"micromodem_emulator: SRC {options.src} on "
                                                  f"{where}", flush=True))
    server.close()
    if isinstance(server, TcpServer):
        print(f"micromodem_emulator: SRC {options.src} {server.summary()}", flush=True)
    model.close()
    backend.close()
    return 0


def _serve_network(options, limits: ServingLimits) -> int:
    try:
        network = load_network(options.network, options.airtime_scale, options.on_new_client,
                               limits)
    except (ValueError, OSError) as exc:
        print(f"micromodem_emulator: {exc}", file=sys.stderr)
        return 1

    def print_endpoints() -> None:  # once a stop is handled: whoever waits for them may stop it
        for src, where in network.endpoints.items():
            print(f"micromodem_emulator: SRC {src} on {where}", flush=True)

    _wait_for_signal(network.models, ready=print_endpoints)
    network.close()
    for line in network.summary():
        print(f"micromodem_emulator: {line}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
