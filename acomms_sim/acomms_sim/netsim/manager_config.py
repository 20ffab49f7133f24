"""netsim_manager configuration: which modems exist, who may move them, and where (ROS-free).

The names follow netsim_manager's own configuration (`sim_env_pair`, `env_bounds`), plus what
our simulator needs to serve each modem (its SRC, listen address, initial position) and the
simulated channel (the `channel:` mapping of micromodem_emulator's network file):

    manager: {host: 127.0.0.1, port: 61999}   # and the TCP limits below (defaults shown):
      # max_clients: 64            # when full, a new client drops the client idle longest
      # idle_timeout_s: 3700.0     # wall clock; no line for this long: dropped (0: never; above
      #                            # netsim_client_node's longest report_period_s, 3600)
      # write_timeout_s: 10.0      # wall clock; output not taken for this long: dropped
      # modem_on_new_client: replace   # modem ports: replace | refuse | share (tcp_serving)
    airtime_scale: 1.0            # < 1 shortens on-air times (fast tests)
    channel: {sound_speed_mps: 1500.0, ambient_noise_db: 70.0, seed: 0}
    env_bounds:
      - {environment_id: 1, lat_min: 41.0, lat_max: 42.0, lon_min: -71.0, lon_max: -70.0,
         depth_min: 0.0, depth_max: 200.0}
    sim_env_pair:
      - {modem_tcp_port: 62000, endpoint_ip_address: 127.0.0.1, environment_id: 1, src: 1}
      - {modem_tcp_port: 62001, endpoint_ip_address: 127.0.0.1, environment_id: 1, src: 2,
         modem_host: 127.0.0.1, latitude: 41.5, longitude: -70.5, depth: 10.0}

A `modem_tcp_port` of 0 lets the system pick a free port; the modem is then addressed by the
port it got. A modem without an initial position refuses to transmit (`$CAERR`) until the first
accepted NavUpdate places it. `validate_nav` is the pure rule behind the four status codes.
"""

from __future__ import annotations

import dataclasses

import yaml

from acomms_sim.netsim.proto import netsim_pb2
from acomms_sim.netsim.wire import DEFAULT_MANAGER_PORT
from acomms_sim.tcp_serving import ON_NEW_CLIENT, ServingLimits

Status = netsim_pb2.NetSimManagerResponse

TOP_KEYS = {"manager", "airtime_scale", "channel", "env_bounds", "sim_env_pair"}
MANAGER_KEYS = {"host", "port", "max_clients", "idle_timeout_s", "write_timeout_s",
                "modem_on_new_client"}
BOUNDS_KEYS = {"environment_id", "lat_min", "lat_max", "lon_min", "lon_max", "depth_min",
               "depth_max"}
PAIR_KEYS = {"modem_tcp_port", "endpoint_ip_address", "environment_id", "src", "modem_host",
             "latitude", "longitude", "depth", "config"}


@dataclasses.dataclass(frozen=True)
class EnvironmentBounds:
    environment_id: int
    lat_min: float
    lat_max: float
    lon_min: float
    lon_max: float
    depth_max: float
    depth_min: float = 0.0

    def contains(self, lat: float, lon: float, depth: float) -> bool:
        return (self.lat_min <= lat <= self.lat_max and self.lon_min <= lon <= self.lon_max
                and self.depth_min <= depth <= self.depth_max)


@dataclasses.dataclass(frozen=True)
class SimEnvironmentPair:
    modem_tcp_port: int
    endpoint_ip_address: str
    environment_id: int
    src: int
    modem_host: str = "127.0.0.1"
    position: tuple[float, float, float] | None = None
    config: dict = dataclasses.field(default_factory=dict)


@dataclasses.dataclass
class ManagerConfig:
    pairs: list[SimEnvironmentPair]
    bounds: dict[int, EnvironmentBounds]
    channel: dict = dataclasses.field(default_factory=dict)
    host: str = "127.0.0.1"
    port: int = DEFAULT_MANAGER_PORT
    airtime_scale: float = 1.0
    max_clients: int = 64
    idle_timeout_s: float = 3700.0
    write_timeout_s: float = 10.0
    modem_on_new_client: str = "replace"

    def limits(self) -> ServingLimits:
        """The manager port's TCP limits."""
        return ServingLimits(self.max_clients, self.idle_timeout_s, self.write_timeout_s)

    def modem_limits(self) -> ServingLimits:
        """The modem ports' TCP limits: a driver may stay silent for hours, so no idle
        timeout; in share mode as many clients as the manager port."""
        return ServingLimits(self.max_clients, 0.0, self.write_timeout_s)


def validate_nav(nav, peer_address: str, pairs: dict[int, SimEnvironmentPair],
                 bounds: dict[int, EnvironmentBounds]) -> int:
    """The status netsim_manager gives one NavUpdate from peer_address: the modem port must be
    configured, then the sender's address must be that pair's, then the position must lie in
    that pair's environment bounds."""
    pair = pairs.get(nav.modem_tcp_port)
    if pair is None:
        return Status.UPDATE_FAILED_INVALID_MODEM_TCP_PORT
    if peer_address != pair.endpoint_ip_address:
        return Status.UPDATE_FAILED_INVALID_SOURCE_ADDRESS
    if not bounds[pair.environment_id].contains(nav.lat, nav.lon, nav.depth):
        return Status.UPDATE_FAILED_OUT_OF_DEFINED_REGION
    return Status.UPDATE_ACCEPTED


def _entries(spec: dict, key: str, allowed: set, source: str) -> list[tuple[str, dict]]:
    entries = spec.get(key)
    if not isinstance(entries, list) or not entries:
        raise ValueError(f"{source}: {key}: a non-empty list is required")
    out = []
    for index, entry in enumerate(entries):
        where = f"{source}: {key}[{index}]"
        if not isinstance(entry, dict):
            raise ValueError(f"{where}: expected a mapping")
        unknown = set(entry) - allowed
        if unknown:
            raise ValueError(f"{where}: unknown keys {sorted(unknown)}")
        out.append((where, entry))
    return out


def _bounds(where: str, entry: dict) -> EnvironmentBounds:
    try:
        values = {k: float(entry[k]) for k in BOUNDS_KEYS - {"environment_id", "depth_min"}}
        bounds = EnvironmentBounds(int(entry["environment_id"]),
                                   depth_min=float(entry.get("depth_min", 0.0)), **values)
    except KeyError as exc:
        raise ValueError(f"{where}: missing {exc.args[0]}") from None
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{where}: {exc}") from None
    if bounds.lat_min > bounds.lat_max or bounds.lon_min > bounds.lon_max \
            or bounds.depth_min > bounds.depth_max:
        raise ValueError(f"{where}: a minimum exceeds its maximum")
    return bounds


def _pair(where: str, entry: dict) -> SimEnvironmentPair:
    try:
        position = None
        if any(k in entry for k in ("latitude", "longitude", "depth")):
            position = (float(entry["latitude"]), float(entry["longitude"]),
                        float(entry["depth"]))
        pair = SimEnvironmentPair(
            int(entry["modem_tcp_port"]), str(entry["endpoint_ip_address"]),
            int(entry["environment_id"]), int(entry["src"]),
            str(entry.get("modem_host", "127.0.0.1")), position,
            {str(k): str(v) for k, v in (entry.get("config") or {}).items()})
    except KeyError as exc:
        raise ValueError(f"{where}: missing {exc.args[0]}") from None
    except (TypeError, ValueError, AttributeError) as exc:
        raise ValueError(f"{where}: {exc}") from None
    if not 0 <= pair.modem_tcp_port <= 65535:
        raise ValueError(f"{where}: modem_tcp_port {pair.modem_tcp_port} outside 0-65535")
    if not 0 <= pair.src <= 255:
        raise ValueError(f"{where}: src {pair.src} outside 0-255")
    return pair


def parse_config(spec: dict, source: str = "netsim_manager") -> ManagerConfig:
    """ManagerConfig from a mapping; ValueError naming source and key (netsim_manager's fatal
    configuration errors: a port or environment given twice, a pair without bounds)."""
    if not isinstance(spec, dict):
        raise ValueError(f"{source}: expected a mapping")
    unknown = set(spec) - TOP_KEYS
    if unknown:
        raise ValueError(f"{source}: unknown keys {sorted(unknown)}")
    bounds: dict[int, EnvironmentBounds] = {}
    for where, entry in _entries(spec, "env_bounds", BOUNDS_KEYS, source):
        item = _bounds(where, entry)
        if item.environment_id in bounds:
            raise ValueError(f"{where}: environment {item.environment_id} given twice")
        bounds[item.environment_id] = item
    pairs, ports, srcs = [], set(), set()
    for where, entry in _entries(spec, "sim_env_pair", PAIR_KEYS, source):
        pair = _pair(where, entry)
        if pair.environment_id not in bounds:
            raise ValueError(f"{where}: no env_bounds for environment {pair.environment_id}")
        if pair.modem_tcp_port and pair.modem_tcp_port in ports:
            raise ValueError(f"{where}: modem_tcp_port {pair.modem_tcp_port} given twice")
        if pair.src in srcs:
            raise ValueError(f"{where}: src {pair.src} given twice")
        ports.add(pair.modem_tcp_port)
        srcs.add(pair.src)
        pairs.append(pair)
    manager = _manager(spec, source)
    try:
        airtime_scale = float(spec.get("airtime_scale", 1.0))
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{source}: airtime_scale: {exc}") from None
    if airtime_scale <= 0:
        raise ValueError(f"{source}: airtime_scale must be > 0")
    return ManagerConfig(pairs, bounds, dict(spec.get("channel") or {}),
                         airtime_scale=airtime_scale, **manager)


def _manager(spec: dict, source: str) -> dict:
    """The `manager:` mapping's values (ManagerConfig field names), validated."""
    manager = spec.get("manager") or {}
    if not isinstance(manager, dict):
        raise ValueError(f"{source}: manager: expected a mapping")
    unknown = set(manager) - MANAGER_KEYS
    if unknown:
        raise ValueError(f"{source}: manager: unknown keys {sorted(unknown)}")
    defaults = ManagerConfig([], {})
    try:
        values = {"host": str(manager.get("host", defaults.host)),
                  "port": int(manager.get("port", defaults.port)),
                  "max_clients": int(manager.get("max_clients", defaults.max_clients)),
                  "idle_timeout_s": float(manager.get("idle_timeout_s",
                                                      defaults.idle_timeout_s)),
                  "write_timeout_s": float(manager.get("write_timeout_s",
                                                       defaults.write_timeout_s)),
                  "modem_on_new_client": str(manager.get("modem_on_new_client",
                                                         defaults.modem_on_new_client))}
        ServingLimits(values["max_clients"], values["idle_timeout_s"],
                      values["write_timeout_s"]).validate()
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{source}: manager: {exc}") from None
    if values["modem_on_new_client"] not in ON_NEW_CLIENT:
        raise ValueError(f"{source}: manager: modem_on_new_client "
                         f"{values['modem_on_new_client']!r} not one of {ON_NEW_CLIENT}")
    return values


def load_config(path: str) -> ManagerConfig:
    try:
        with open(path) as stream:
            spec = yaml.safe_load(stream) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise ValueError(f"{path}: {exc}") from None
    return parse_config(spec, path)
