"""What a scenario file means, as plain frozen dataclasses (ROS-free): the `Scenario` the loader
(acomms_bringup.description.scenario) returns and everything in it, section by section, and the
one `ScenarioError` every refused file raises. The section parsers (scenario_clock,
scenario_channel, scenario_vehicle, scenario_mac, scenario_traffic) build these."""

from __future__ import annotations

import dataclasses
import pathlib
from collections.abc import Mapping
from typing import Any

from acomms_bringup.description.scenario_events import LocalEvent
from acomms_bringup.description.scenario_keys import DEFAULT_ABSORPTION_MODEL
from acomms_sim.physics.geodesy import bearing_deg


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

    def course_deg_at(self, time_seconds: float) -> float:
        """Course over ground at that time, degrees clockwise from true north: the direction of
        the leg under way, else of the last leg with horizontal motion before it, else of the
        first one after it (a trajectory that never moves: 0)."""
        legs = list(zip(self.waypoints, self.waypoints[1:], strict=False))
        current = sum(1 for before, _ in legs if before.time_seconds < time_seconds) - 1
        order = list(range(max(current, 0), -1, -1)) + list(range(max(current, 0) + 1, len(legs)))
        for index in order:
            a, b = legs[index][0].position, legs[index][1].position
            course = bearing_deg(a.latitude, a.longitude, b.latitude, b.longitude)
            if course is not None:
                return course
        return 0.0


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
    lean: bool = False  # runtime.lean: lean simulated nodes (acomms_run --lean)
    processes: int = 1  # runtime.processes: the vehicles split over K processes (--processes)

    def vehicle(self, name: str) -> Vehicle:
        for vehicle in self.vehicles:
            if vehicle.name == name:
                return vehicle
        raise KeyError(f"no vehicle named {name!r} (have {[v.name for v in self.vehicles]})")

    @property
    def has_sim_modems(self) -> bool:
        return any(v.modem.kind == "sim" for v in self.vehicles)
