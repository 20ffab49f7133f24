"""Scenario files: load and validate the YAML that describes a network of vehicles (ROS-free).

A scenario names every vehicle (namespace, modem SRC, modem kind, position or trajectory, MAC and
its parameters, codec config file), the simulated channel, the clock and the run length. Both the
embedded runner and the launch files start what
`acomms_bringup.description.stack.describe_stack` derives from a `Scenario`, so this module is the
one place where a scenario's meaning is defined.

Every problem in a file raises one `ScenarioError` whose message names the file and the key path,
e.g. ``demo.yaml: vehicles[1].src: duplicate SRC 3 (also vehicles[0])``. Unknown keys are errors
(a typo must not silently fall back to a default).

Schema (defaults in brackets)::

    name: demo                          # [file stem]
    duration_seconds: 600               # simulated seconds the runner runs, > 0
    seed: 1                             # [0] seeds every random process of the simulation
    clock:
      use_sim_time: true                # [true unless a vehicle has a micromodem]
      warp_factor: 10.0                 # [1.0] simulated seconds per wall second
      start_time: 2025-01-01T00:00:00Z  # [2025-01-01T00:00:00Z] ROS time when the simulated
                                        # clock starts: ISO 8601 (a zone or Z; none = UTC) or
                                        # epoch seconds (sim time only)
    channel:
      sound_speed_mps: 1500.0           # [Mackenzie at the absorption temperature/salinity]
                                        # constant sound speed, or instead:
      sound_speed_profile: {depths_m: [0, 100], sound_speeds_mps: [1500, 1490]}
      water_depth_m: 100.0              # [100.0]
      noise: {model: fixed, level_db: 60.0}        # or {model: wenz, shipping_activity: 0.5,
                                                    #     wind_speed_mps: 5.0}
      transmission_loss: {model: spreading, spreading: practical}   # or {model: bellhop}
      absorption: {model: francois_garrison, temperature_c: 10.0, salinity_ppt: 35.0, ph: 8.0}
                                        # model: thorp | francois_garrison (spreading TL only)
      center_frequency_hz: 10000.0      # [10000.0]
      bandwidth_hz: 5000.0              # [5000.0]
      source_level_db: 185.0            # [the modem profile's for tx_level] dB re 1 uPa @ 1 m
      tx_level: 3                       # [3] Micromodem pwramp.txlevel 0 (loudest) .. 3
      fading: {model: rayleigh, k_factor: 0.0, coherence_time_s: 0.0}
                                        # [none] none | rayleigh | rician (seeded per link
                                        # and packet; coherence 0: one gain per packet)
      capture_margin_db: 0.0            # [0: no capture] a later packet this much stronger
                                        # takes a locked receiver
      doppler_tolerance_mps: 0.0        # [0: no limit] frames fail beyond this closing speed
      multipath: {delay_spread_s: 0.0, isi_tolerance_s: [0.0]}
                                        # [0: one path / no ISI] RMS delay spread (spreading
                                        # model; Bellhop computes it), tolerance: one or 7 values
    vehicles:
      - name: auv                       # ROS name token; namespace defaults to /auv
        namespace: /auv                 # optional
        src: 1                          # modem address 0..255, unique
        modem: {kind: sim}              # [source_level_db, tx_level: override the channel's]
                                        # or {kind: micromodem, connection: serial,
                                        #     serial_port: /dev/ttyUSB0, baud_rate: 19200}
        position: {latitude: 41.5, longitude: -70.6, depth: 10.0}
        trajectory:                     # instead of position: waypoints, linear in between
          - {time_seconds: 0, latitude: 41.5, longitude: -70.6, depth: 10}
          - {time_seconds: 600, latitude: 41.51, longitude: -70.6, depth: 30}
        position_source:                # instead of position/trajectory (sim modems): an
                                        # external simulator publishes the position; unknown
                                        # (no transmissions) until the first message
          topic: /gazebo/auv1/odom      # absolute, or relative to the vehicle namespace
          type: odometry                # odometry | pose_stamped (local ENU: x east, y north,
                                        # z up) | navsatfix (depth = -altitude) | location
          origin: {latitude: 41.5, longitude: -70.6, depth: 0.0}
                                        # ENU origin, odometry/pose_stamped only; depth [0] of
                                        # z = 0 (so a vehicle's depth = origin depth - z)
          frame_id: world               # [''] required header.frame_id ('' accepts any)
          max_age_seconds: 2.0          # [0] refuse messages stamped longer ago (0: no check)
        mac: {kind: tdma, num_slots: 3, active_slots: [0], slot_duration_seconds: 20}
                                        # kind: a key of acomms_core.mac.registry.MAC_KINDS;
                                        # the other keys: that MAC node's parameters, checked
                                        # by the node's own specs and validator; slot_tags:
                                        # YAML text, a YAML list, or a file (relative to this
                                        # file); ros_acomms names with a counterpart here
                                        # (wait_for_services_timeout_sec) are read with a note
        mac_switcher:                   # optional: more MACs, one transmitting at a time
          default_mac_namespace: tdma   # [tdma] sub-namespace of the `mac` above
          managed_mac_heartbeat_timeout_sec: 60.0  # and revert_on_deselect: mac_switcher_node's
          macs:                         # sub-namespace: a MAC section like `mac` (kinds with
            aloha: {kind: tdma_slotted_aloha, aloha_slots: "1"}  # software_mute only)
        codec_config: demo_codecs.yaml  # relative to this file, absolute, or
                                        # package://acomms_bringup/config/demo_codecs.yaml
        parameters:                     # per-node parameter overrides, applied last
          message_queue_node: {default_priority: 20}
        traffic:                        # messages the embedded runner (acomms_run) publishes
          - topic: to_acomms/nav_status # relative (in the vehicle's namespace); must be a
                                        # subscribe_topic of the vehicle's codec config
            type: sensor_msgs/msg/NavSatFix  # [the codec config's ros_type]; must match it
            period_seconds: 30.0        # one message every period (simulated time), > 0
            start_seconds: 5.0          # [0] first message at this simulated time
            arrivals: periodic          # [periodic] or poisson: random (seeded by the scenario
                                        # seed) with period_seconds as the mean interval
            fields: {latitude: 41.5, altitude: -20.0}  # message fields; nested messages as
                                        # mappings; strings may use {seq}, {vehicle}, {time}
            file: survey.bin            # [none] acomms_interfaces/msg/FileTransfer only: send
                                        # this file (name, data, sha256; relative to this file)
        bridges:                        # bridge nodes started after the MAC, in this order
          - wec_telemetry_bridge        # a key of acomms_bringup.bridges.registry.BRIDGES,
          - kind: remote_service_server # or kind + that node's parameters
            parameters: {target_prefix: /}
        file_transfer:                  # [none] start file_transfer_node (send_file service;
          receive_directory: received   # acomms_send_file) with these parameters of its own
                                        # (checked against its specs); {} sends only.
                                        # receive_directory: relative to the working directory

Every key's type, default and range: the tables of `scenario_keys` (the reference page
docs/reference/scenario.md is generated from them).

Traffic is for demos and tests: the runner stamps `header.stamp` (when the type has a header)
with the publish time, and matches arrivals to sent messages by that stamp, or else by content
(so a type without a header should carry a unique string, e.g. "cmd {seq}"). Field names and
value types are checked against the ROS type by acomms_check_scenario and when the runner
starts. An unknown key anywhere is refused naming the closest allowed one ("did you mean",
acomms_core.ros_acomms_names.did_you_mean). Keys with units are written `_mps`; `_m_s` is read
as `_mps` with a note in Scenario.warnings.
"""

from __future__ import annotations

import copy
import dataclasses
import datetime
import importlib
import math
import os
import pathlib
import re
from collections.abc import Callable, Mapping
from typing import Any

import yaml

from acomms_bringup.description.scenario_events import EVENT_KEYS, LocalEvent, parse_events
from acomms_bringup.description.scenario_keys import (
    DEFAULT_ABSORPTION_MODEL,
    DEFAULT_START_TIME,
    MAC_KEYS,
    REQUIRED,
    SCENARIO_KEYS,
    TRAFFIC_KEYS,
    VEHICLE_NODE_NAMES,
    WAYPOINT_KEYS,
    ScenarioKey,
    key_table,
)
from acomms_bringup.description.scenario_ros_acomms import mac_params_file_values
from acomms_core.codecs.config_yaml import CodecYamlError, read_codec_yaml
from acomms_core.mac.policy import split_reason
from acomms_core.mac.registry import MAC_KINDS, ros_parameter_values
from acomms_core.mac.switcher import SWITCHER_PARAMETERS, check_switcher_values
from acomms_core.ros.parameter_spec import check_values, spec_table
from acomms_core.ros_acomms_names import (
    did_you_mean,
    parameter_renames,
    rename_parameters,
    unit_alias,
)
from acomms_core.ros_acomms_params import PARAMS_FILE_NAME
from acomms_sim.modem.location_topic import (
    LOCATION_TOPIC_SPECS,
    LOCATION_TOPIC_TYPES,
    check_location_topic,
)
from acomms_sim.physics.multipath import tolerance_table

SCENARIO_KEYS_TABLE = key_table(SCENARIO_KEYS)

MODEM_EXECUTABLES = {"sim": "modem_sim_node", "micromodem": "acomms_driver_node"}
# Where each vehicle node's ParameterSpec table lives ("module:ATTRIBUTE", by executable; the MAC
# nodes' tables are MAC_KINDS[kind].parameters). Imported only when a scenario overrides that
# node's parameters (the node modules import rclpy). Every node also has rclpy's own parameters.
NODE_PARAMETER_TABLES = {
    "trajectory_node": "acomms_bringup.nodes.trajectory_node:PARAMETERS",
    "modem_sim_node": "acomms_sim.nodes.modem_sim_node:SPECS",
    "acomms_driver_node": "acomms_driver.nodes.driver_parameters:PARAMETERS",
    "message_queue_node": "acomms_core.nodes.message_queue_node:DECLARED_PARAMETERS",
    "packet_dispatch_node": "acomms_core.nodes.packet_dispatch_node:DECLARED_PARAMETERS",
    "file_transfer_node": "acomms_bringup.file_transfer.file_transfer_node:PARAMETERS",
}
ROS_NODE_PARAMETERS = ("use_sim_time",)

_NAME_TOKEN = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
_NAMESPACE = re.compile(r"^(/[A-Za-z][A-Za-z0-9_]*)+$")
_TOPIC = re.compile(r"^/?[A-Za-z_][A-Za-z0-9_]*(/[A-Za-z_][A-Za-z0-9_]*)*$")


class ScenarioError(ValueError):
    """A scenario file that cannot be used; the message names the file and the key path."""

    def __init__(self, file: str, key_path: str, problem: str):
        self.file = file
        self.key_path = key_path
        self.problem = problem
        where = f"{file}: {key_path}" if key_path else file
        super().__init__(f"{where}: {problem}")


@dataclasses.dataclass(frozen=True)
class Position:
    """Geographic position; depth in metres, positive down."""

    latitude: float
    longitude: float
    depth: float


@dataclasses.dataclass(frozen=True)
class Waypoint:
    time_seconds: float
    position: Position


@dataclasses.dataclass(frozen=True)
class Trajectory:
    """Waypoints with strictly increasing times; positions in between are linear interpolations.

    Before the first waypoint the vehicle sits at the first one, after the last at the last one.
    (Linear in latitude/longitude is exact enough for the few-kilometre legs of a scenario.)
    """

    waypoints: tuple[Waypoint, ...]

    def position_at(self, time_seconds: float) -> Position:
        points = self.waypoints
        if time_seconds <= points[0].time_seconds:
            return points[0].position
        for before, after in zip(points, points[1:], strict=False):
            if time_seconds <= after.time_seconds:
                fraction = ((time_seconds - before.time_seconds)
                            / (after.time_seconds - before.time_seconds))
                a, b = before.position, after.position
                return Position(a.latitude + fraction * (b.latitude - a.latitude),
                                a.longitude + fraction * (b.longitude - a.longitude),
                                a.depth + fraction * (b.depth - a.depth))
        return points[-1].position


@dataclasses.dataclass(frozen=True)
class PositionSource:
    """An external simulator publishes the vehicle's position on a topic; its sim modem follows
    it (modem_sim_node `location_source: topic`, see acomms_sim.modem.location_topic)."""

    topic: str  # absolute, or relative to the vehicle namespace
    type: str  # a key of LOCATION_TOPIC_TYPES
    origin: Position | None  # ENU origin of odometry / pose_stamped; depth of z = 0
    frame_id: str = ""  # required header.frame_id ("" accepts any)
    max_age_seconds: float = 0.0  # refuse messages stamped longer ago (0: no check)

    def modem_parameters(self) -> dict[str, Any]:
        """The modem_sim_node parameters (LOCATION_TOPIC_SPECS) that say this."""
        origin = self.origin or Position(0.0, 0.0, 0.0)
        return {"modem_location_topic": self.topic, "location_topic_type": self.type,
                "enu_origin_latitude": origin.latitude, "enu_origin_longitude": origin.longitude,
                "enu_origin_altitude_m": 0.0 - origin.depth, "location_frame_id": self.frame_id,
                "location_max_age_s": self.max_age_seconds}


FILE_TRANSFER_TYPE = "acomms_interfaces/msg/FileTransfer"
# modem_sim_node parameter -> position_source key, to name a refused value's key path
_SOURCE_KEYS = {"modem_location_topic": "topic", "location_topic_type": "type",
                "enu_origin_latitude": "origin", "enu_origin_longitude": "origin",
                "enu_origin_altitude_m": "origin", "location_frame_id": "frame_id",
                "location_max_age_s": "max_age_seconds"}


@dataclasses.dataclass(frozen=True)
class ModemConfig:
    """`kind` is "sim" or "micromodem"; `connection` holds the micromodem connection settings."""

    kind: str
    source_level_db: float | None = None
    connection: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    tx_level: int | None = None


@dataclasses.dataclass(frozen=True)
class MacConfig:
    kind: str
    parameters: Mapping[str, Any]


@dataclasses.dataclass(frozen=True)
class MacSwitcherConfig:
    """mac_switcher_node's parameters; the managed MACs besides the vehicle's `mac` (which runs
    in default_namespace), each in its sub-namespace of the vehicle."""

    parameters: Mapping[str, Any]
    default_namespace: str
    macs: tuple[tuple[str, MacConfig], ...]


@dataclasses.dataclass(frozen=True)
class Vehicle:
    name: str
    namespace: str
    src: int
    modem: ModemConfig
    # static position or the trajectory's first waypoint; None with position_source (known
    # from its first message on)
    position: Position | None
    trajectory: Trajectory | None
    mac: MacConfig
    codec_config: pathlib.Path  # absolute, exists
    parameters: Mapping[str, Mapping[str, Any]]  # node key -> overrides
    traffic: tuple[Traffic, ...] = ()
    position_source: PositionSource | None = None
    bridges: tuple[BridgeNode, ...] = ()
    mac_switcher: MacSwitcherConfig | None = None
    # file_transfer_node's parameters (`file_transfer:`); None: the vehicle has none
    file_transfer: Mapping[str, Any] | None = None
    events: tuple[LocalEvent, ...] = ()  # `events:` (scenario_events)


@dataclasses.dataclass(frozen=True)
class BridgeNode:
    """A bridge node of a vehicle (acomms_bringup.bridges.registry.BRIDGES)."""

    kind: str
    parameters: Mapping[str, Any]




@dataclasses.dataclass(frozen=True)
class Traffic:
    """Synthetic messages published on one of a vehicle's subscribe topics (see module doc)."""

    topic: str  # relative to the vehicle namespace
    ros_type: str  # pkg/msg/Msg, from the codec config
    period_seconds: float
    start_seconds: float
    fields: Mapping[str, Any]
    key_path: str  # where it is in the scenario file, for error messages
    arrivals: str = "periodic"  # or "poisson" (period_seconds is then the mean interval)
    file: pathlib.Path | None = None  # issue 15: a FileTransfer carrying this file


@dataclasses.dataclass(frozen=True)
class Noise:
    model: str  # "fixed" | "wenz"
    level_db: float = 60.0
    shipping_activity: float = 0.5
    wind_speed_mps: float = 5.0


@dataclasses.dataclass(frozen=True)
class Absorption:
    model: str = DEFAULT_ABSORPTION_MODEL  # "thorp" | "francois_garrison"
    temperature_c: float = 10.0
    salinity_ppt: float = 35.0
    ph: float = 8.0


@dataclasses.dataclass(frozen=True)
class Fading:
    model: str = "none"  # acomms_sim.physics.fading.MODELS
    k_factor: float = 0.0
    coherence_time_s: float = 0.0


@dataclasses.dataclass(frozen=True)
class Multipath:
    delay_spread_s: float = 0.0  # spreading model's RMS delay spread (Bellhop: its own)
    isi_tolerance_s: tuple[float, ...] = (0.0,)  # one value or one per rate 0..6; 0: no ISI


@dataclasses.dataclass(frozen=True)
class Channel:
    sound_speed_mps: float | None  # None: Mackenzie at the absorption temperature/salinity
    sound_speed_profile: tuple[tuple[float, float], ...] | None  # (depth m, speed m/s) pairs
    water_depth_m: float
    noise: Noise
    transmission_loss_model: str  # "spreading" | "bellhop"
    spreading: str  # "spherical" | "practical" | "cylindrical"
    absorption: Absorption
    center_frequency_hz: float
    bandwidth_hz: float
    source_level_db: float | None  # None: the modem profile's level for tx_level
    tx_level: int = 3
    fading: Fading = Fading()
    capture_margin_db: float = 0.0
    doppler_tolerance_mps: float = 0.0  # issue 14: 0 = no limit
    multipath: Multipath = Multipath()


# The simulated clock starts at a real epoch (time codecs with an epoch expect one), fixed so
# runs repeat; midnight UTC keeps TDMA cycles that divide a day in the phase they had at 0.
MAX_START_TIME_S = 1e10  # sim_clock_node's start_time_s range (year 2286)


def parse_start_time(value: Any) -> float:
    """Epoch seconds of `clock.start_time`: epoch seconds, or ISO 8601 (a zone offset or Z;
    none: UTC). ValueError with the reason otherwise."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str, datetime.datetime,
                                                         datetime.date)):
        raise ValueError(f"expected ISO 8601 (e.g. {DEFAULT_START_TIME}) or epoch seconds, "
                         f"got {_describe_type(value)}")
    if isinstance(value, str):
        try:
            value = datetime.datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            raise ValueError(f"{value!r} is not ISO 8601 (e.g. {DEFAULT_START_TIME})") from None
    if isinstance(value, datetime.date) and not isinstance(value, datetime.datetime):
        value = datetime.datetime(value.year, value.month, value.day)
    if isinstance(value, datetime.datetime):  # YAML reads an unquoted timestamp itself
        if value.tzinfo is None:
            value = value.replace(tzinfo=datetime.timezone.utc)
        value = value.timestamp()
    seconds = float(value)
    if not math.isfinite(seconds) or not 0.0 <= seconds <= MAX_START_TIME_S:
        raise ValueError(f"{seconds!r} s is outside 0 .. {MAX_START_TIME_S:g} s")
    return seconds


def format_start_time(seconds: float) -> str:
    """ISO 8601 UTC of epoch seconds (summaries)."""
    moment = datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc)
    return moment.isoformat(timespec="milliseconds" if seconds % 1 else "seconds").replace(
        "+00:00", "Z")


@dataclasses.dataclass(frozen=True)
class Clock:
    use_sim_time: bool
    warp_factor: float
    # ROS time (epoch s) when the simulated clock starts; 0 with use_sim_time false
    start_time_s: float = 0.0

    @property
    def origin_s(self) -> float:
        """ROS time of the run's simulated second 0 (outputs count from there)."""
        return self.start_time_s if self.use_sim_time else 0.0


@dataclasses.dataclass(frozen=True)
class Scenario:
    name: str
    path: pathlib.Path | None
    duration_seconds: float
    seed: int
    clock: Clock
    channel: Channel
    vehicles: tuple[Vehicle, ...]
    # Suspicious but legal choices (e.g. overlapping TDMA slots); the runner logs them.
    warnings: tuple[str, ...] = ()

    def vehicle(self, name: str) -> Vehicle:
        for vehicle in self.vehicles:
            if vehicle.name == name:
                return vehicle
        raise KeyError(f"no vehicle named {name!r} (have {[v.name for v in self.vehicles]})")

    @property
    def has_sim_modems(self) -> bool:
        return any(v.modem.kind == "sim" for v in self.vehicles)


# ---------------------------------------------------------------------------------------------
# Parsing helpers: every read goes through a _Section so errors carry the key path.

_REQUIRED = REQUIRED
_FROM_TABLE = object()
_TYPE_NAMES = {int: "an integer", float: "a number", str: "a string", bool: "true/false",
               list: "a list", dict: "a mapping"}


def _describe_type(value: Any) -> str:
    if value is None:
        return "nothing (null)"
    return f"{type(value).__name__} {value!r}"


class _Context:
    def __init__(self, file: str):
        self.file = file
        self.notes: list[str] = []  # accepted old names (ros_acomms, `_m_s`): Scenario.warnings
        self.base_dir = pathlib.Path.cwd()  # relative file names (slot_tags) are read from here

    def error(self, key_path: str, problem: str) -> ScenarioError:
        return ScenarioError(self.file, key_path, problem)


def _matches(value: Any, kinds: tuple[type, ...]) -> bool:
    for kind in kinds:
        if kind is bool and isinstance(value, bool):
            return True
        if kind is int and isinstance(value, int) and not isinstance(value, bool):
            return True
        if kind is float and isinstance(value, (int, float)) and not isinstance(value, bool):
            return True
        if kind in (str, list, dict) and isinstance(value, kind):
            return True
    return False


def _check_type(ctx: _Context, path: str, value: Any, kinds: tuple[type, ...]) -> Any:
    if not _matches(value, kinds):
        expected = " or ".join(_TYPE_NAMES[k] for k in kinds)
        raise ctx.error(path, f"expected {expected}, got {_describe_type(value)}")
    if kinds == (float,):
        value = float(value)
        if not math.isfinite(value):
            raise ctx.error(path, f"expected a finite number, got {value}")
    return value


class _Section:
    """A mapping being read; remembers which keys were used so unknown ones can be refused.

    `keys` is its table of ScenarioKeys (scenario_keys): `take` reads a key with the type,
    default and range the table gives it, `section` a mapping key with its own table."""

    def __init__(self, ctx: _Context, data: Any, path: str,
                 keys: tuple[ScenarioKey, ...] = ()):
        if not isinstance(data, dict):
            raise ctx.error(path or "(top level)",
                            f"expected a mapping, got {_describe_type(data)}")
        self.ctx, self.data, self.path, self.used = ctx, data, path, set()
        self.keys = key_table(keys)
        if any(isinstance(key, str) and unit_alias(key) for key in data):
            self.rename({key: unit_alias(key) for key in data
                         if isinstance(key, str) and unit_alias(key)}, "the old unit spelling")

    def take(self, key: str, default: Any = _FROM_TABLE, **options) -> Any:
        """The key's value, checked as its ScenarioKey says; `default` and `options` (e.g.
        choices known only at run time) where the value depends on other keys."""
        spec = self.keys[key]
        if default is _FROM_TABLE:  # a fresh copy of a list/mapping default per read
            default = copy.deepcopy(spec.default) if isinstance(spec.default, (list, dict)) \
                else spec.default
        return self.get(key, spec.kinds, default,
                        **{"minimum": spec.minimum, "maximum": spec.maximum,
                           "exclusive_minimum": spec.exclusive_minimum,
                           "choices": spec.choices, **options})

    def raw(self, key: str) -> Any:
        """The key's value unchecked (the caller parses it); None when absent."""
        self.used.add(self.keys[key].name)
        return self.data.get(key)

    def rename(self, renames: dict[str, str], what: str = "the ros_acomms name") -> None:
        """Read old names (ros_acomms', `_m_s` units) as ours, with a note; both: refused."""
        try:
            self.data, notes = rename_parameters(self.data, renames, self.path or "(top level)",
                                                 what)
        except ValueError as exc:
            raise self.ctx.error(self.path, str(exc).partition(": ")[2]) from None
        self.ctx.notes.extend(notes)

    def missing(self, key: str, problem: str = "missing (required)") -> ScenarioError:
        """A required key is absent: a misspelling of it present is named as the unknown key."""
        for other in self.data:
            if other not in self.used and did_you_mean(str(other), [key]):
                return self.ctx.error(self.key_path(str(other)),
                                      f"unknown key{did_you_mean(str(other), [key])}")
        return self.ctx.error(self.key_path(key), problem)

    def key_path(self, key: str) -> str:
        return f"{self.path}.{key}" if self.path else key

    def has(self, key: str) -> bool:
        return key in self.data

    def get(self, key: str, kinds: tuple[type, ...], default: Any = _REQUIRED, *,
            minimum: float | None = None, maximum: float | None = None,
            exclusive_minimum: bool = False, choices: tuple[str, ...] | None = None) -> Any:
        self.used.add(key)
        path = self.key_path(key)
        if key not in self.data or self.data[key] is None:
            if default is _REQUIRED:
                raise self.missing(key)
            return default
        value = _check_type(self.ctx, path, self.data[key], kinds)
        if minimum is not None and (value <= minimum if exclusive_minimum else value < minimum):
            relation = ">" if exclusive_minimum else ">="
            raise self.ctx.error(path, f"must be {relation} {minimum}, got {value}")
        if maximum is not None and value > maximum:
            raise self.ctx.error(path, f"must be <= {maximum}, got {value}")
        if choices is not None and value not in choices:
            raise self.ctx.error(path, f"unknown value {value!r}; expected one of {list(choices)}")
        return value

    def section(self, key: str, required: bool = False,
                keys: tuple[ScenarioKey, ...] | None = None) -> _Section | None:
        """A mapping key, with the keys of its table (or `keys`)."""
        self.used.add(key)
        if key not in self.data or self.data[key] is None:
            if required:
                raise self.missing(key)
            return None
        if keys is None:
            spec = self.keys.get(key)
            keys = spec.keys if spec is not None and spec.keys else ()
        return _Section(self.ctx, self.data[key], self.key_path(key), keys)

    def empty(self, key: str) -> _Section:
        """An absent mapping key as an empty section (its keys take their defaults)."""
        return _Section(self.ctx, {}, self.key_path(key), self.keys[key].keys or ())

    def items(self, key: str, required: bool = False) -> list[tuple[str, Any]]:
        """The entries of a list: [(key path, item), ...]."""
        self.used.add(key)
        value = self.data.get(key)
        if value is None:
            if required:
                raise self.missing(key)
            return []
        _check_type(self.ctx, self.key_path(key), value, (list,))
        return [(f"{self.key_path(key)}[{i}]", item) for i, item in enumerate(value)]

    def finish(self, allowed: tuple[str, ...] | None = None) -> None:
        unknown = sorted(set(self.data) - self.used, key=str)
        if unknown:
            allowed = sorted(allowed if allowed is not None else self.used, key=str)
            hint = did_you_mean(str(unknown[0]), allowed)
            raise self.ctx.error(self.key_path(str(unknown[0])),
                                 f"unknown key{hint}; allowed here: {allowed}")


# ---------------------------------------------------------------------------------------------


def default_package_share(package: str) -> pathlib.Path:
    """The installed share directory of a ROS package (ament index), or raise LookupError."""
    try:
        from ament_index_python.packages import (
            PackageNotFoundError,
            get_package_share_directory,
        )
    except ImportError:  # no ament_index_python: search AMENT_PREFIX_PATH by hand
        for prefix in os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep):
            marker = pathlib.Path(prefix, "share/ament_index/resource_index/packages", package)
            if prefix and marker.exists():
                return pathlib.Path(prefix, "share", package)
        raise LookupError(f"package {package!r} not found in AMENT_PREFIX_PATH") from None
    try:
        return pathlib.Path(get_package_share_directory(package))
    except (PackageNotFoundError, ValueError, KeyError) as exc:
        raise LookupError(f"package {package!r} not found ({exc})") from None


PackageShareResolver = Callable[[str], pathlib.Path]


def resolve_path(spec: str, base_dir: pathlib.Path,
                 package_share: PackageShareResolver = default_package_share) -> pathlib.Path:
    """`package://pkg/rel/path`, an absolute path, or a path relative to base_dir."""
    if spec.startswith("package://"):
        package, _, relative = spec[len("package://"):].partition("/")
        if not package or not relative:
            raise LookupError(f"{spec!r}: expected package://<package>/<path>")
        return package_share(package) / relative
    path = pathlib.Path(os.path.expanduser(spec))
    return path if path.is_absolute() else base_dir / path


def load_scenario(path: str | os.PathLike,
                  package_share: PackageShareResolver = default_package_share) -> Scenario:
    """Read and validate a scenario file; raises ScenarioError (never a bare YAML/KeyError)."""
    path = pathlib.Path(path)
    ctx = _Context(str(path))
    try:
        text = path.read_text()
    except OSError as exc:
        raise ctx.error("", f"cannot read scenario file: {exc.strerror or exc}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise ctx.error("", f"not valid YAML{where}: {problem}") from None
    return parse_scenario(data, file=str(path), base_dir=path.resolve().parent,
                          package_share=package_share, default_name=path.stem, path=path)


def parse_scenario(data: Any, file: str = "<scenario>", base_dir: pathlib.Path | None = None,
                   package_share: PackageShareResolver = default_package_share,
                   default_name: str = "scenario",
                   path: pathlib.Path | None = None) -> Scenario:
    """Validate an already-loaded scenario mapping; `file` is the name used in error messages."""
    ctx = _Context(file)
    base_dir = base_dir or pathlib.Path.cwd()
    ctx.base_dir = base_dir
    top = _Section(ctx, data, "", SCENARIO_KEYS)
    name = top.take("name", default_name)
    if not _NAME_TOKEN.match(name):
        raise ctx.error("name", f"{name!r} must be letters, digits and _ (starting with a letter)")
    duration = top.take("duration_seconds")
    seed = top.take("seed")
    channel = _parse_channel(ctx, top.section("channel"))
    vehicle_items = top.items("vehicles", required=True)
    if not vehicle_items:
        raise ctx.error("vehicles", "needs at least one vehicle")
    vehicles = tuple(_parse_vehicle(ctx, key_path, item, base_dir, package_share)
                     for key_path, item in vehicle_items)
    has_micromodem = any(v.modem.kind == "micromodem" for v in vehicles)
    clock = _parse_clock(ctx, top.section("clock"), has_micromodem)
    top.finish()
    _check_unique(ctx, vehicles, "src", "SRC")
    _check_unique(ctx, vehicles, "name", "vehicle name")
    _check_unique(ctx, vehicles, "namespace", "namespace")
    warnings = (*ctx.notes, *_slot_overlap_warnings(vehicles))
    return Scenario(name=name, path=path, duration_seconds=duration, seed=seed, clock=clock,
                    channel=channel, vehicles=vehicles, warnings=warnings)


def _check_unique(ctx: _Context, vehicles: tuple[Vehicle, ...], attribute: str,
                  label: str) -> None:
    seen: dict[Any, int] = {}
    for index, vehicle in enumerate(vehicles):
        value = getattr(vehicle, attribute)
        if value in seen:
            raise ctx.error(f"vehicles[{index}].{attribute}",
                            f"duplicate {label} {value} (also vehicles[{seen[value]}])")
        seen[value] = index


def _parse_clock(ctx: _Context, section: _Section | None, has_micromodem: bool) -> Clock:
    default_start = parse_start_time(DEFAULT_START_TIME)
    if section is None:
        return Clock(use_sim_time=not has_micromodem, warp_factor=1.0,
                     start_time_s=0.0 if has_micromodem else default_start)
    use_sim_time = section.take("use_sim_time", not has_micromodem)
    warp = section.take("warp_factor")
    start_time = section.raw("start_time")
    section.finish()
    if start_time is not None and not use_sim_time:
        raise ctx.error(section.key_path("start_time"),
                        "needs use_sim_time: true (wall-clock time starts where it is)")
    try:
        start_s = default_start if start_time is None else parse_start_time(start_time)
    except ValueError as exc:
        raise ctx.error(section.key_path("start_time"), str(exc)) from None
    if has_micromodem and use_sim_time:
        raise ctx.error(section.key_path("use_sim_time"),
                        "a micromodem runs in real time: use_sim_time must be false")
    if not use_sim_time and warp != 1.0:
        raise ctx.error(section.key_path("warp_factor"),
                        f"warp {warp} needs use_sim_time: true (wall-clock time cannot be warped)")
    return Clock(use_sim_time=use_sim_time, warp_factor=warp,
                 start_time_s=start_s if use_sim_time else 0.0)


def _parse_sound_speed_profile(ctx: _Context, profile_section: _Section
                               ) -> tuple[tuple[float, float], ...]:
    depths = profile_section.take("depths_m")
    speeds = profile_section.take("sound_speeds_mps")
    profile_section.finish()
    if not depths or len(depths) != len(speeds):
        raise ctx.error(profile_section.path,
                        f"depths_m ({len(depths)}) and sound_speeds_mps ({len(speeds)}) "
                        "must be non-empty lists of the same length")
    pairs = []
    for index, (depth, speed) in enumerate(zip(depths, speeds, strict=True)):
        depth = _check_type(ctx, f"{profile_section.path}.depths_m[{index}]", depth, (float,))
        speed = _check_type(ctx, f"{profile_section.path}.sound_speeds_mps[{index}]", speed,
                            (float,))
        if not 1300.0 <= speed <= 1700.0:
            raise ctx.error(f"{profile_section.path}.sound_speeds_mps[{index}]",
                            f"{speed} m/s outside 1300..1700")
        if pairs and depth <= pairs[-1][0]:
            raise ctx.error(f"{profile_section.path}.depths_m[{index}]",
                            "depths must increase strictly")
        pairs.append((depth, speed))
    return tuple(pairs)


def _parse_channel(ctx: _Context, section: _Section | None) -> Channel:
    if section is None:
        section = _Section(ctx, {}, "channel", SCENARIO_KEYS_TABLE["channel"].keys)
    sound_speed = section.take("sound_speed_mps")
    profile = None
    profile_section = section.section("sound_speed_profile")
    if profile_section is not None:
        if section.has("sound_speed_mps"):
            raise ctx.error(profile_section.path,
                            "give either sound_speed_mps or sound_speed_profile, not both")
        profile = _parse_sound_speed_profile(ctx, profile_section)
        sound_speed = sum(s for _, s in profile) / len(profile)
    water_depth = section.take("water_depth_m")
    noise = _parse_noise(ctx, section.section("noise"), section.key_path("noise"))
    tl_section = section.section("transmission_loss")
    if tl_section is None:
        tl_section = section.empty("transmission_loss")
    tl_model = tl_section.take("model")
    spreading = tl_section.take("spreading")
    tl_section.finish()
    absorption = Absorption()
    absorption_section = section.section("absorption")
    if absorption_section is not None:
        absorption = Absorption(
            model=absorption_section.take("model"),
            temperature_c=absorption_section.take("temperature_c"),
            salinity_ppt=absorption_section.take("salinity_ppt"),
            ph=absorption_section.take("ph"))
        absorption_section.finish()
    center = section.take("center_frequency_hz")
    bandwidth = section.take("bandwidth_hz")
    if bandwidth / 2 >= center:
        raise ctx.error(section.key_path("bandwidth_hz"),
                        f"band {center} Hz +/- {bandwidth / 2} Hz reaches 0 Hz")
    source_level = section.take("source_level_db")
    tx_level = section.take("tx_level")
    fading = _parse_fading(ctx, section.section("fading"))
    capture = section.take("capture_margin_db")
    doppler = section.take("doppler_tolerance_mps")
    multipath = _parse_multipath(ctx, section.section("multipath"))
    section.finish()
    return Channel(sound_speed_mps=sound_speed, sound_speed_profile=profile,
                   water_depth_m=water_depth, noise=noise, transmission_loss_model=tl_model,
                   spreading=spreading, absorption=absorption, center_frequency_hz=center,
                   bandwidth_hz=bandwidth, source_level_db=source_level, tx_level=tx_level,
                   fading=fading, capture_margin_db=capture, doppler_tolerance_mps=doppler,
                   multipath=multipath)


def _parse_fading(ctx: _Context, section: _Section | None) -> Fading:
    if section is None:
        return Fading()
    fading = Fading(section.take("model"), section.take("k_factor"),
                    section.take("coherence_time_s"))
    section.finish()
    return fading


def _parse_multipath(ctx: _Context, section: _Section | None) -> Multipath:
    if section is None:
        return Multipath()
    spread = section.take("delay_spread_s")
    tolerance = section.take("isi_tolerance_s")
    try:
        tolerance_table(tolerance)
    except (TypeError, ValueError) as exc:
        raise ctx.error(section.key_path("isi_tolerance_s"), str(exc)) from None
    section.finish()
    return Multipath(spread, tuple(float(v) for v in tolerance))


def _parse_noise(ctx: _Context, section: _Section | None, path: str) -> Noise:
    if section is None:
        return Noise(model="fixed")
    model = section.take("model")
    if model == "fixed":
        noise = Noise(model=model, level_db=section.take("level_db"))
    else:
        noise = Noise(model=model, shipping_activity=section.take("shipping_activity"),
                      wind_speed_mps=section.take("wind_speed_mps"))
    section.finish()
    return noise


def _parse_position(ctx: _Context, section: _Section) -> Position:
    return Position(latitude=section.take("latitude"), longitude=section.take("longitude"),
                    depth=section.take("depth"))


def _parse_vehicle(ctx: _Context, path: str, data: Any, base_dir: pathlib.Path,
                   package_share: PackageShareResolver) -> Vehicle:
    section = _Section(ctx, data, path, SCENARIO_KEYS_TABLE["vehicles"].keys)
    name = section.take("name")
    if not _NAME_TOKEN.match(name):
        raise ctx.error(section.key_path("name"),
                        f"{name!r} must be letters, digits and _ (starting with a letter)")
    namespace = section.take("namespace", f"/{name}")
    if not _NAMESPACE.match(namespace):
        raise ctx.error(section.key_path("namespace"),
                        f"{namespace!r} must be an absolute ROS namespace like /{name}")
    src = section.take("src")
    modem = _parse_modem(ctx, section.section("modem", required=True))
    position, trajectory, position_source = _parse_motion(ctx, section, modem)
    mac = _parse_mac(ctx, section.section("mac", required=True))
    mac_switcher = _parse_mac_switcher(ctx, section.section("mac_switcher"), mac)
    codec_spec = section.take("codec_config")
    codec_path = section.key_path("codec_config")
    try:
        codec_config = resolve_path(codec_spec, base_dir, package_share)
    except LookupError as exc:
        raise ctx.error(codec_path, str(exc)) from None
    if not codec_config.is_file():
        raise ctx.error(codec_path, f"codec config file not found: {codec_config}")
    codec_data = _check_codec_config(ctx, codec_path, codec_config)
    traffic = tuple(_parse_traffic(ctx, key_path, item, codec_data, codec_config, base_dir)
                    for key_path, item in section.items("traffic"))
    _check_unique_topics(ctx, traffic)
    events = parse_events(section.items("events"), lambda d, p: _Section(ctx, d, p, EVENT_KEYS),
                          ctx.error, _subscribe_topics(codec_data))
    bridges = _parse_bridges(ctx, section)
    file_section = section.section("file_transfer")
    file_transfer = None
    if file_section is not None:
        file_transfer = _checked_node_parameters(
            ctx, file_section, executable_parameter_specs("file_transfer_node"),
            "file_transfer_node")

    parameters = _parse_node_overrides(ctx, section.section("parameters"), modem, mac)
    section.finish()
    return Vehicle(name=name, namespace=namespace, src=src, modem=modem, position=position,
                   trajectory=trajectory, mac=mac, codec_config=codec_config.resolve(),
                   parameters=parameters, traffic=traffic, position_source=position_source,
                   bridges=bridges, mac_switcher=mac_switcher, file_transfer=file_transfer,
                   events=events)


def node_parameter_specs(node_key: str, modem_kind: str, mac_kind: str) -> dict:
    """{name: ParameterSpec} of the node a vehicle's `parameters.<node_key>` overrides (the
    node's own table: one source of truth), without rclpy's own parameters."""
    if node_key == "mac":
        return spec_table(MAC_KINDS[mac_kind].parameters)
    return executable_parameter_specs(MODEM_EXECUTABLES[modem_kind] if node_key == "modem"
                                      else node_key)


def executable_parameter_specs(executable: str) -> dict:
    """{name: ParameterSpec} a node of NODE_PARAMETER_TABLES declares (its own table)."""
    module_name, _, attribute = NODE_PARAMETER_TABLES[executable].partition(":")
    return spec_table(getattr(importlib.import_module(module_name), attribute))


def _parse_node_overrides(ctx: _Context, overrides: _Section | None, modem: ModemConfig,
                          mac: MacConfig) -> dict[str, dict[str, Any]]:
    """`parameters: {<node>: {<parameter>: value}}`: each name must be one the node declares
    (a misspelt override would otherwise be ignored by ROS), each value of its type and range."""
    parameters: dict[str, dict[str, Any]] = {}
    if overrides is None:
        return parameters
    for node_key in list(overrides.data):
        node_section = overrides.section(str(node_key))
        if str(node_key) not in VEHICLE_NODE_NAMES:
            raise ctx.error(node_section.path,
                            f"unknown node; expected one of {list(VEHICLE_NODE_NAMES)}")
        specs = node_parameter_specs(str(node_key), modem.kind, mac.kind)
        node = (MAC_KINDS[mac.kind].executable if node_key == "mac" else
                MODEM_EXECUTABLES[modem.kind] if node_key == "modem" else str(node_key))
        parameters[str(node_key)] = _checked_node_parameters(ctx, node_section, specs, node)
    overrides.finish()
    return parameters


def _checked_node_parameters(ctx: _Context, section: _Section, specs: dict, node: str
                             ) -> dict[str, Any]:
    """A mapping of a node's parameters: each name one the node declares (specs), each value
    of its type and range (the node's own ParameterSpec table: one source of truth)."""
    section.rename(_renames_into(specs))
    for parameter, value in section.data.items():
        section.used.add(parameter)
        path = section.key_path(str(parameter))
        _check_parameter_value(ctx, path, value)
        if parameter in ROS_NODE_PARAMETERS:
            continue
        spec = specs.get(parameter)
        if spec is None:
            valid = ", ".join(sorted((*specs, *ROS_NODE_PARAMETERS), key=str.lower))
            hint = did_you_mean(str(parameter), [*specs, *ROS_NODE_PARAMETERS])
            raise ctx.error(path, f"unknown parameter of {node}{hint}; valid: {valid}")
        reason = spec.check_value(value)
        if reason:
            raise ctx.error(path, reason.partition(": ")[2] or reason)
    return dict(section.data)


def _parse_bridges(ctx: _Context, section: _Section) -> tuple[BridgeNode, ...]:
    """`bridges`: kinds of the bridge registry, each once, with parameter values ROS carries."""
    from acomms_bringup.bridges.registry import BRIDGES

    bridges: list[BridgeNode] = []
    for key_path, item in section.items("bridges"):
        if isinstance(item, str):
            item = {"kind": item}
        entry = _Section(ctx, item, key_path, section.keys["bridges"].keys)
        kind = entry.take("kind", choices=tuple(BRIDGES))
        if any(b.kind == kind for b in bridges):
            raise ctx.error(entry.key_path("kind"), f"bridge {kind} listed twice")
        parameters = entry.take("parameters")
        for name, value in parameters.items():
            _check_parameter_value(ctx, f"{entry.key_path('parameters')}.{name}", value)
        entry.finish()
        bridges.append(BridgeNode(kind, dict(parameters)))
    return tuple(bridges)


def _parse_motion(ctx: _Context, section: _Section, modem: ModemConfig
                  ) -> tuple[Position | None, Trajectory | None, PositionSource | None]:
    """One of position, trajectory or position_source: where the vehicle is. With
    position_source the position is unknown (None) until the first message, as in ros_acomms."""
    position_section = section.section("position")
    trajectory_items = section.items("trajectory")
    source_section = section.section("position_source")
    given = [key for key, present in (("position", position_section is not None),
                                      ("trajectory", bool(trajectory_items)),
                                      ("position_source", source_section is not None))
             if present]
    if not given:
        for key in ("trajectory", "position_source"):  # a misspelling of one is named
            error = section.missing(key)
            if error.key_path != section.key_path(key):
                raise error
        raise section.missing("position", "missing (give position, trajectory or "
                                          "position_source)")
    if len(given) > 1:
        raise ctx.error(section.key_path(given[-1]),
                        f"give either {given[0]} or {given[1]}, not both")
    if trajectory_items:
        trajectory = _parse_trajectory(ctx, trajectory_items)
        return trajectory.waypoints[0].position, trajectory, None
    if source_section is not None:
        if modem.kind != "sim":
            raise ctx.error(source_section.path,
                            f"a {modem.kind} modem has its own position; position_source is for "
                            "sim modems")
        return None, None, _parse_position_source(ctx, source_section)
    position = _parse_position(ctx, position_section)
    position_section.finish()
    return position, None, None


def _parse_position_source(ctx: _Context, section: _Section) -> PositionSource:
    topic = section.take("topic")
    if not _TOPIC.match(topic):
        raise ctx.error(section.key_path("topic"),
                        f"{topic!r} is not a topic name (e.g. /gazebo/auv1/odom, or odom "
                        "relative to the vehicle namespace)")
    kind = section.take("type")
    origin_section = section.section("origin")
    origin = None
    if LOCATION_TOPIC_TYPES[kind].local:
        if origin_section is None:
            raise ctx.error(section.key_path("origin"),
                            f"missing (required: a {kind} position is in a local ENU frame)")
        origin = _parse_position(ctx, origin_section)
        origin_section.finish()
    elif origin_section is not None:
        raise ctx.error(origin_section.path, f"a {kind} position is geodetic: no origin")
    source = PositionSource(
        topic=topic, type=kind, origin=origin, frame_id=section.take("frame_id"),
        max_age_seconds=section.take("max_age_seconds"))
    section.finish()
    reason = check_values(LOCATION_TOPIC_SPECS, source.modem_parameters(), check_location_topic)
    if reason:  # the node's own checks (e.g. an origin at a pole), with the node's reason
        name, _, problem = reason.partition(": ")
        key = _SOURCE_KEYS.get(name.split("/")[0])
        raise ctx.error(section.key_path(key) if key else section.path,
                        problem if key else reason)
    return source


def _check_parameter_value(ctx: _Context, path: str, value: Any) -> None:
    """ROS parameters are scalars or homogeneous lists of scalars; refuse what ROS would."""
    scalar = (bool, int, float, str)
    if isinstance(value, scalar):
        return
    if isinstance(value, list) and value and all(isinstance(v, scalar) for v in value):
        kinds = {bool if isinstance(v, bool) else float if isinstance(v, float) else type(v)
                 for v in value}
        if kinds == {int, float}:
            return
        if len(kinds) == 1:
            return
    raise ctx.error(path, f"not a ROS parameter value (scalar or list of one scalar type): "
                          f"{_describe_type(value)}")


def _check_codec_config(ctx: _Context, path: str, codec_config: pathlib.Path) -> list:
    """Cheap shape check (a YAML list of packet codecs) of the file as the nodes read it (the
    codec loader's own reader: includes, duplicate keys); the codec loader does the rest."""
    try:
        data = read_codec_yaml(str(codec_config))
    except CodecYamlError as exc:
        raise ctx.error(path, f"codec config {codec_config}: {exc}") from None
    if not isinstance(data, list) or not data or not all(isinstance(p, dict) for p in data):
        raise ctx.error(path, f"codec config {codec_config} must be a non-empty YAML list of "
                              "packet codecs")
    return data


def _ros2_type_name(name: str) -> str:
    """'pkg/Msg' or 'pkg/msg/Msg' -> 'pkg/msg/Msg'."""
    parts = name.strip().split("/")
    return f"{parts[0]}/msg/{parts[1]}" if len(parts) == 2 else "/".join(parts)


def _subscribe_topics(codec_data: list) -> dict[str, str]:
    """{subscribe_topic: ros_type} of every message codec in a codec config."""
    topics = {}
    for packet_codec in codec_data:
        for message_codec in packet_codec.get("message_codecs") or []:
            if isinstance(message_codec, dict) and message_codec.get("subscribe_topic"):
                topics[str(message_codec["subscribe_topic"]).lstrip("~/")] = str(
                    message_codec.get("ros_type", ""))
    return topics


def _parse_traffic(ctx: _Context, path: str, data: Any, codec_data: list,
                   codec_config: pathlib.Path, base_dir: pathlib.Path | None = None) -> Traffic:
    section = _Section(ctx, data, path, TRAFFIC_KEYS)
    topic = section.take("topic")
    if not topic or topic.startswith("/") or not all(
            _NAME_TOKEN.match(part) for part in topic.split("/")):
        raise ctx.error(section.key_path("topic"),
                        f"{topic!r} must be a relative topic name like to_acomms/nav_status")
    known = _subscribe_topics(codec_data)
    if topic not in known:
        raise ctx.error(section.key_path("topic"),
                        f"{topic!r} is not a subscribe_topic of codec config {codec_config} "
                        f"(it has {sorted(known)})")
    codec_type = _ros2_type_name(known[topic])
    ros_type = section.take("type", codec_type)
    if _ros2_type_name(ros_type) != codec_type:
        raise ctx.error(section.key_path("type"),
                        f"{ros_type} differs from the codec config's ros_type {codec_type}")
    period = section.take("period_seconds")
    if period < 0.01:
        raise ctx.error(section.key_path("period_seconds"), f"must be >= 0.01, got {period}")
    start = section.take("start_seconds")
    fields = section.take("fields")
    arrivals = section.take("arrivals")
    file = _traffic_file(ctx, section, codec_type, base_dir or codec_config.parent)
    section.finish()
    return Traffic(topic=topic, ros_type=codec_type, period_seconds=period, start_seconds=start,
                   fields=fields, key_path=path, arrivals=arrivals, file=file)


def _traffic_file(ctx: _Context, section, codec_type: str, base_dir: pathlib.Path):
    """issue 15: `file:` (relative to the scenario) sends that file as a FileTransfer."""
    spec = section.take("file")
    if not spec:
        return None
    if codec_type != FILE_TRANSFER_TYPE:
        raise ctx.error(section.key_path("file"), f"files travel as {FILE_TRANSFER_TYPE}, "
                        f"not {codec_type}")
    path = pathlib.Path(spec) if pathlib.Path(spec).is_absolute() else base_dir / spec
    if not path.is_file():
        raise ctx.error(section.key_path("file"), f"file not found: {path}")
    return path


def _check_unique_topics(ctx: _Context, traffic: tuple[Traffic, ...]) -> None:
    seen: dict[str, str] = {}
    for item in traffic:
        if item.topic in seen:
            raise ctx.error(f"{item.key_path}.topic",
                            f"duplicate traffic topic {item.topic} (also {seen[item.topic]})")
        seen[item.topic] = item.key_path


def _parse_trajectory(ctx: _Context, items: list[tuple[str, Any]]) -> Trajectory:
    waypoints: list[Waypoint] = []
    for path, item in items:
        section = _Section(ctx, item, path, WAYPOINT_KEYS)
        time_seconds = section.take("time_seconds")
        position = _parse_position(ctx, section)
        section.finish()
        if waypoints and time_seconds <= waypoints[-1].time_seconds:
            raise ctx.error(section.key_path("time_seconds"),
                            f"{time_seconds} must be later than the previous waypoint's "
                            f"{waypoints[-1].time_seconds}")
        waypoints.append(Waypoint(time_seconds, position))
    return Trajectory(tuple(waypoints))


def _parse_modem(ctx: _Context, section: _Section) -> ModemConfig:
    kind = section.take("kind")
    source_level = section.take("source_level_db")
    tx_level = section.take("tx_level")
    connection: dict[str, Any] = {}
    if kind == "micromodem":
        conn = section.take("connection")
        connection["connection"] = conn
        if conn == "serial":
            connection["serial_port"] = section.take("serial_port")
            connection["baud_rate"] = section.take("baud_rate")
        else:
            connection["remote_host"] = section.take("remote_host")
            connection["remote_port"] = section.take("remote_port")
            if conn == "udp":
                connection["local_port"] = section.take("local_port")
        modem_config = section.section("modem_config")
        if modem_config is not None:
            config = {}
            for key, value in modem_config.data.items():
                modem_config.used.add(key)
                config[str(key)] = _check_type(ctx, modem_config.key_path(str(key)), value,
                                               (int, float, str))
            connection["modem_config"] = config
        connection["set_modem_time"] = section.take("set_modem_time")
    section.finish()
    return ModemConfig(kind=kind, source_level_db=source_level, connection=connection,
                       tx_level=tx_level)


def _parse_mac(ctx: _Context, section: _Section) -> MacConfig:
    """The MAC kind's own ParameterSpecs and validator decide (acomms_core.mac.registry): a
    scenario accepts exactly the values the node would accept, refusing with its reason."""
    kind_name = section.take("kind")
    kind = MAC_KINDS[kind_name]
    specs = spec_table(kind.parameters)
    if section.data.get(PARAMS_FILE_NAME):  # a ros_acomms parameter file: its values first
        section.data = mac_params_file_values(ctx, section.data, section.key_path(
            PARAMS_FILE_NAME), specs)
    section.rename(_renames_into(specs))
    if "slot_tags" in specs and section.data.get("slot_tags") is not None:
        section.data = {**section.data, "slot_tags": _slot_tags_text(
            ctx, section.key_path("slot_tags"), section.data["slot_tags"])}
    raw = {key: section.data[key] for key in section.data if key in specs}
    section.used.update(raw)
    section.finish(allowed=("kind", *specs))
    parameters = kind.ros_values(raw)
    reason = kind.check(parameters)
    if reason:
        name, problem = split_reason(reason, specs)
        raise ctx.error(section.key_path(name) if name else section.path, problem)
    return MacConfig(kind=kind_name, parameters=parameters)


def _renames_into(specs: dict) -> dict[str, str]:
    """ros_acomms parameter names whose counterpart is in specs (acomms_core.ros_acomms_names)."""
    return {old: new for old, new in parameter_renames().items()
            if new in specs and old not in specs}


def _slot_tags_text(ctx: _Context, path: str, value: Any) -> str:
    """slot_tags as the node parameter's YAML text: a list (or {slot_tags: [...]}) as YAML, a
    file name resolved against the scenario's directory and checked to exist."""
    if isinstance(value, (list, dict)):
        return yaml.safe_dump(value, default_flow_style=True, width=1_000_000).strip()
    value = _check_type(ctx, path, value, (str, list))
    if "\n" in value or not value.strip().lower().endswith((".yaml", ".yml")):
        return value
    file = resolve_path(value.strip(), ctx.base_dir)
    if not file.is_file():
        raise ctx.error(path, f"file {file} not found")
    return str(file)


def _parse_mac_switcher(ctx: _Context, section: _Section | None, default_mac: MacConfig
                        ) -> MacSwitcherConfig | None:
    """mac_switcher_node's own ParameterSpecs and validator decide its keys (managed namespaces
    come from `macs`); every managed MAC is a `mac` section and needs software_mute."""
    if section is None:
        return None
    specs = spec_table(SWITCHER_PARAMETERS)
    macs_section = section.section("macs", required=True)
    macs = []
    for ns in list(macs_section.data):
        if not isinstance(ns, str) or not _NAME_TOKEN.match(ns):
            raise ctx.error(macs_section.key_path(str(ns)), "a MAC namespace is a ROS name token")
        macs.append((ns, _parse_mac(ctx, macs_section.section(ns, keys=MAC_KEYS))))
    macs_section.finish()
    settable = tuple(name for name in specs if name != "managed_mac_namespaces")
    raw = {key: section.data[key] for key in section.data if key in settable}
    section.used.update(raw)
    section.finish(allowed=("macs", *settable))
    values = ros_parameter_values(SWITCHER_PARAMETERS, {
        **raw, "managed_mac_namespaces": [ns for ns, _ in macs]})
    reason = check_values(SWITCHER_PARAMETERS, values, check_switcher_values)
    if reason:
        name, problem = split_reason(reason, specs)
        raise ctx.error(section.key_path("macs" if name == "managed_mac_namespaces" else name)
                        if name else section.path, problem)
    default_ns = values.get("default_mac_namespace", specs["default_mac_namespace"].default)
    if default_ns in dict(macs):
        raise ctx.error(macs_section.key_path(default_ns),
                        "the default MAC is the vehicle's `mac`; list only the others here")
    vehicle_path = section.path.rpartition(".")[0]
    for path, mac in ((f"{vehicle_path}.mac.kind", default_mac),
                      *((macs_section.key_path(ns), mac) for ns, mac in macs)):
        if "software_mute" not in spec_table(MAC_KINDS[mac.kind].parameters):
            raise ctx.error(path, f"a {mac.kind} MAC has no software_mute, so the switcher "
                            "cannot mute it")
    return MacSwitcherConfig(parameters=values, default_namespace=default_ns, macs=tuple(macs))


def _slot_overlap_warnings(vehicles: tuple[Vehicle, ...]):
    """Vehicles on one TDMA cycle whose active slots overlap will collide: say so."""
    cycles: dict[tuple, list[tuple[Vehicle, set[int]]]] = {}
    for vehicle in vehicles:
        config = MAC_KINDS[vehicle.mac.kind].config(vehicle.mac.parameters)
        schedule = getattr(config, "schedule", None)
        if schedule is None:  # not a TDMA cycle (carrier sense, polled)
            continue
        key = (schedule.num_slots, schedule.slot_duration_seconds,
               schedule.cycle_start_time + schedule.skew_seconds)
        # Shared (aloha) slots are meant to be shared: only a vehicle's own slots count.
        slots = set(getattr(config, "exclusive_slots", schedule.active_slots))
        for other, other_slots in cycles.get(key, []):
            shared = sorted(slots & other_slots)
            if shared:
                yield (f"vehicles {other.name} and {vehicle.name} share TDMA slots {shared}: "
                       "their transmissions can collide")
        cycles.setdefault(key, []).append((vehicle, slots))
