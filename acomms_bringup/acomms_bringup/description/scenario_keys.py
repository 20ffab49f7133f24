"""The keys of a scenario file, as tables (ROS-free): the loader reads every key through them.

`ScenarioKey` says one key's type, default, range, choices and meaning; a mapping key (or a
list of mappings) names the table of its own keys. `SCENARIO_KEYS` is the top level. The
loader (acomms_bringup.description.scenario) takes type, default and range from here, and
docs/reference/scenario.md is generated from the same tables (scripts/generate_reference.py).
Checks that involve several keys (either sound_speed_mps or sound_speed_profile, a micromodem
needs wall-clock time, ...) stay in the loader.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from acomms_core.mac.registry import MAC_KINDS
from acomms_sim.emulator.usbl_errors import UsblErrorModel
from acomms_sim.modem.location_topic import LOCATION_TOPIC_TYPES
from acomms_sim.physics.fading import MODELS as FADING_MODELS
from acomms_sim.physics.transmission_loss import SpreadingModel

MODEM_KINDS = ("sim", "micromodem", "evologics")
# Modem kinds that run in real time (a real modem, or the EvoLogics emulator on the wall clock).
REAL_TIME_MODEM_KINDS = ("micromodem", "evologics")
NOISE_MODELS = ("fixed", "wenz")
TRANSMISSION_LOSS_MODELS = ("spreading", "bellhop")
SPREADING_KINDS = ("spherical", "practical", "cylindrical")
ABSORPTION_MODELS = ("thorp", "francois_garrison")
MICROMODEM_CONNECTIONS = ("serial", "udp", "tcp")
EVOLOGICS_CONNECTIONS = ("serial", "tcp", "emulated")
MODEM_CONNECTIONS = ("serial", "udp", "tcp", "emulated")
TRAFFIC_ARRIVALS = ("periodic", "poisson")
DEFAULT_START_TIME = "2025-01-01T00:00:00Z"
# Nodes of one vehicle that take per-node parameter overrides (executable names).
VEHICLE_NODE_NAMES = ("trajectory_node", "modem", "message_queue_node", "packet_dispatch_node",
                      "mac")
DEFAULT_ABSORPTION_MODEL = SpreadingModel().absorption_model


class _Required:
    def __repr__(self) -> str:
        return "REQUIRED"


REQUIRED = _Required()  # a key without a default


@dataclasses.dataclass(frozen=True)
class ScenarioKey:
    """One key of a scenario mapping."""

    name: str
    kinds: tuple[type, ...]         # accepted YAML types (float accepts integers)
    description: str
    default: Any = REQUIRED         # REQUIRED, None (absent means "not given") or a value
    minimum: float | None = None
    maximum: float | None = None
    exclusive_minimum: bool = False
    choices: tuple[str, ...] | None = None
    keys: tuple[ScenarioKey, ...] | None = None   # a mapping's (or each list item's) keys
    default_text: str = ""          # the default when it depends on other keys

    @property
    def table(self) -> dict[str, ScenarioKey]:
        return key_table(self.keys or ())


def key_table(keys) -> dict[str, ScenarioKey]:
    return {key.name: key for key in keys}


_ITS_DEFAULTS = "its keys' defaults"


def _key(name, kinds, description, default=REQUIRED, **options) -> ScenarioKey:
    kinds = kinds if isinstance(kinds, tuple) else (kinds,)
    return ScenarioKey(name, kinds, description, default, **options)


POSITION_KEYS = (
    _key("latitude", float, "degrees", minimum=-90.0, maximum=90.0),
    _key("longitude", float, "degrees", minimum=-180.0, maximum=180.0),
    _key("depth", float, "metres, positive down", minimum=0.0, maximum=12000.0),
)
CLOCK_KEYS = (
    _key("use_sim_time", bool, "simulated time (sim modems) or wall-clock time", None,
         default_text="true unless a vehicle has a micromodem or evologics modem"),
    _key("warp_factor", float, "simulated seconds per wall second (needs use_sim_time)", 1.0,
         minimum=0.0, exclusive_minimum=True, maximum=10000.0),
    _key("start_time", (str, float), "ROS time when the simulated clock starts: ISO 8601 (a "
         "zone or Z; none = UTC) or epoch seconds (sim time only)", DEFAULT_START_TIME),
)
MAX_PROCESSES = 64  # runtime.processes, acomms_run --processes
RUNTIME_KEYS = (
    _key("lean", bool, "lean simulated nodes (acomms_run --lean): the nodes the runner drives "
         "in-process serve no type-description, lifecycle or parameter services (the MACs keep "
         "their parameter services); same results", False),
    _key("processes", int, "OS processes the vehicles are split over (acomms_run --processes): "
         "acomms_run and K-1 acomms_participant processes, each at least one vehicle; more "
         "cores for large networks, same results", 1, minimum=1, maximum=MAX_PROCESSES),
)
PROFILE_KEYS = (
    _key("depths_m", list, "strictly increasing depths, m"),
    _key("sound_speeds_mps", list, "one sound speed per depth, 1300..1700 m/s"),
)
NOISE_KEYS = (
    _key("model", str, "ambient noise model", "fixed", choices=NOISE_MODELS),
    _key("level_db", float, "model fixed: noise spectral level, dB", 60.0, minimum=0.0,
         maximum=200.0),
    _key("shipping_activity", float, "model wenz: shipping activity 0..1", 0.5, minimum=0.0,
         maximum=1.0),
    _key("wind_speed_mps", float, "model wenz: wind speed", 5.0, minimum=0.0, maximum=50.0),
)
TRANSMISSION_LOSS_KEYS = (
    _key("model", str, "spreading (with absorption) or bellhop", "spreading",
         choices=TRANSMISSION_LOSS_MODELS),
    _key("spreading", str, "geometric spreading of the spreading model", "practical",
         choices=SPREADING_KINDS),
)
ABSORPTION_KEYS = (
    _key("model", str, "absorption model (spreading transmission loss only)",
         DEFAULT_ABSORPTION_MODEL, choices=ABSORPTION_MODELS),
    _key("temperature_c", float, "water temperature", 10.0, minimum=-2.0, maximum=40.0),
    _key("salinity_ppt", float, "salinity", 35.0, minimum=0.0, maximum=45.0),
    _key("ph", float, "pH", 8.0, minimum=6.0, maximum=9.0),
)
FADING_KEYS = (
    _key("model", str, "fading, seeded per link and packet", "none",
         choices=tuple(FADING_MODELS)),
    _key("k_factor", float, "rician K factor", 0.0, minimum=0.0, maximum=1000.0),
    _key("coherence_time_s", float, "0: one gain per packet", 0.0, minimum=0.0,
         maximum=3600.0),
)
MULTIPATH_KEYS = (
    _key("delay_spread_s", float, "RMS delay spread (spreading model; Bellhop computes it); "
         "0: one path", 0.0, minimum=0.0, maximum=10.0),
    _key("isi_tolerance_s", list, "tolerated delay spread: one value or one per rate 0..6; "
         "0: no ISI", [0.0]),
)
CHANNEL_KEYS = (
    _key("sound_speed_mps", float, "constant sound speed (or sound_speed_profile)", None,
         minimum=1300.0, maximum=1700.0,
         default_text="Mackenzie at the absorption temperature/salinity"),
    _key("sound_speed_profile", dict, "a sound speed profile instead of sound_speed_mps", None,
         keys=PROFILE_KEYS),
    _key("water_depth_m", float, "water depth", 100.0, minimum=0.0, exclusive_minimum=True,
         maximum=12000.0),
    _key("noise", dict, "ambient noise", None, keys=NOISE_KEYS, default_text=_ITS_DEFAULTS),
    _key("transmission_loss", dict, "transmission loss model", None,
         keys=TRANSMISSION_LOSS_KEYS, default_text=_ITS_DEFAULTS),
    _key("absorption", dict, "absorption of the spreading model", None, keys=ABSORPTION_KEYS,
         default_text=_ITS_DEFAULTS),
    _key("center_frequency_hz", float, "carrier frequency", 10000.0, minimum=100.0,
         maximum=1_000_000.0),
    _key("bandwidth_hz", float, "band width (the band must stay above 0 Hz)", 5000.0,
         minimum=0.0, exclusive_minimum=True, maximum=1_000_000.0),
    _key("source_level_db", float, "dB re 1 uPa @ 1 m", None, minimum=100.0, maximum=240.0,
         default_text="the modem profile's for tx_level"),
    _key("tx_level", int, "Micromodem pwramp.txlevel 0 (loudest) .. 3", 3, minimum=0,
         maximum=3),
    _key("fading", dict, "fading", None, keys=FADING_KEYS, default_text=_ITS_DEFAULTS),
    _key("capture_margin_db", float, "a later packet this much stronger takes a locked "
         "receiver; 0: no capture", 0.0, minimum=0.0, maximum=100.0),
    _key("doppler_tolerance_mps", float, "frames fail beyond this closing speed; 0: no limit",
         0.0, minimum=0.0, maximum=100.0),
    _key("multipath", dict, "multipath", None, keys=MULTIPATH_KEYS,
         default_text=_ITS_DEFAULTS),
)
_USBL = UsblErrorModel()  # the emulator's defaults: one source of truth
USBL_KEYS = (
    _key("range_error_fraction", float, "slant range error sigma as a fraction of the range",
         _USBL.range_error_fraction, minimum=0.0, maximum=1.0),
    _key("range_error_floor_m", float, "smallest range error sigma, m", _USBL.range_error_floor_m,
         minimum=0.0, maximum=1000.0),
    _key("bearing_error_deg", float, "bearing error sigma, degrees", _USBL.bearing_error_deg,
         minimum=0.0, maximum=180.0),
    _key("elevation_error_deg", float, "elevation error sigma, degrees",
         _USBL.elevation_error_deg, minimum=0.0, maximum=90.0),
    _key("seed", int, "seed of the errors (mixed with the modem's SRC)", _USBL.seed, minimum=0,
         maximum=2**31 - 1),
)
MODEM_KEYS = (
    _key("kind", str, "simulated modem, a WHOI Micromodem or an EvoLogics S2C (real, or "
         "emulated with connection: emulated)", choices=MODEM_KINDS),
    _key("source_level_db", float, "overrides the channel's", None, minimum=100.0,
         maximum=240.0),
    _key("tx_level", int, "overrides the channel's", None, minimum=0, maximum=3),
    _key("connection", str, "how the driver reaches it: micromodem serial, udp or tcp; "
         "evologics serial, tcp or emulated (acomms_run starts an EvoLogics emulator on a pty "
         "for it, on the scenario's channel)", "serial", choices=MODEM_CONNECTIONS),
    _key("serial_port", str, "micromodem/evologics, serial: device"),
    _key("baud_rate", int, "micromodem/evologics, serial", 19200, minimum=300, maximum=921600),
    _key("remote_host", str, "micromodem udp/tcp, evologics tcp: host"),
    _key("remote_port", int, "micromodem udp/tcp, evologics tcp (S2C: 9200): port", minimum=1,
         maximum=65535),
    _key("local_port", int, "micromodem, udp: local port (0: any)", 0, minimum=0,
         maximum=65535),
    _key("modem_config", dict, "micromodem: NMEA configuration values {name: value}", None),
    _key("set_modem_time", bool, "micromodem: set the modem's clock at start", False),
    _key("usbl", dict, "evologics, emulated: a USBL modem with this error model "
         "(acomms_sim.emulator.usbl_errors)", None, keys=USBL_KEYS),
)
WAYPOINT_KEYS = (
    _key("time_seconds", float, "simulated seconds after the start; strictly increasing",
         minimum=0.0),
    *POSITION_KEYS,
)
ORIGIN_KEYS = (
    *POSITION_KEYS[:2],
    _key("depth", float, "depth of z = 0", 0.0, minimum=-12000.0, maximum=12000.0),
)
POSITION_SOURCE_KEYS = (
    _key("topic", str, "absolute, or relative to the vehicle namespace"),
    _key("type", str, "message type (odometry, pose_stamped: local ENU x east, y north, z up; "
         "navsatfix: depth = -altitude)", choices=tuple(LOCATION_TOPIC_TYPES)),
    _key("origin", dict, "ENU origin (odometry and pose_stamped only, required there)", None,
         keys=ORIGIN_KEYS),
    _key("frame_id", str, "required header.frame_id ('' accepts any)", ""),
    _key("max_age_seconds", float, "refuse messages stamped longer ago (0: no check)", 0.0,
         minimum=0.0, maximum=86400.0),
)
MAC_KEYS = (
    _key("kind", str, "the MAC; the other keys of `mac` are that MAC node's parameters "
         "(docs/reference/nodes.md), checked by its own specs and validator",
         choices=tuple(MAC_KINDS)),
)
MAC_SWITCHER_KEYS = (
    _key("macs", dict, "{sub-namespace: a `mac` section} of the other MACs (kinds with "
         "software_mute); the other keys of `mac_switcher` are mac_switcher_node's parameters"),
)
TRAFFIC_KEYS = (
    _key("topic", str, "relative topic (in the vehicle's namespace); a subscribe_topic of the "
         "vehicle's codec config"),
    _key("type", str, "ROS type; must match the codec config's", None,
         default_text="the codec config's ros_type"),
    _key("period_seconds", float, "one message every period (simulated time), >= 0.01",
         minimum=0.0, exclusive_minimum=True),
    _key("start_seconds", float, "first message at this simulated time", 0.0, minimum=0.0),
    _key("fields", dict, "message fields; nested messages as mappings; strings may use {seq}, "
         "{vehicle}, {time}", {}),
    _key("arrivals", str, "poisson: random (seeded) with period_seconds as the mean interval",
         "periodic", choices=TRAFFIC_ARRIVALS),
    _key("file", str, "acomms_interfaces/msg/FileTransfer only: send this file (relative to "
         "the scenario)", ""),
)
EVENT_KEYS = (
    _key("at_seconds", float, "publish once at this simulated time (seconds after the start)",
         minimum=0.0),
    _key("topic", str, "relative topic (in the vehicle's namespace), e.g. "
         "mac_switcher_node/aloha/select; not a subscribe_topic of the codec config"),
    _key("type", str, "ROS message type, pkg/msg/Name or pkg/Name"),
    _key("fields", dict, "message fields; nested messages as mappings; strings may use "
         "{vehicle}, {time}", {}),
)
BRIDGE_KEYS = (
    _key("kind", str, "a key of acomms_bringup.bridges.registry.BRIDGES "
         "(docs/reference/registries.md); a list item may be just the kind"),
    _key("parameters", dict, "that node's parameters", {}),
)
VEHICLE_KEYS = (
    _key("name", str, "ROS name token"),
    _key("namespace", str, "absolute ROS namespace", None, default_text="/<name>"),
    _key("src", int, "modem address, unique", minimum=0, maximum=255),
    _key("modem", dict, "the vehicle's modem", keys=MODEM_KEYS),
    _key("position", dict, "fixed position (or trajectory, or position_source)", None,
         keys=POSITION_KEYS),
    _key("trajectory", list, "waypoints, linear in between", None, keys=WAYPOINT_KEYS),
    _key("position_source", dict, "sim modems: an external simulator publishes the position",
         None, keys=POSITION_SOURCE_KEYS),
    _key("mac", dict, "the MAC", keys=MAC_KEYS),
    _key("mac_switcher", dict, "more MACs, one transmitting at a time", None,
         keys=MAC_SWITCHER_KEYS),
    _key("codec_config", str, "codec YAML: relative to the scenario, absolute, or "
         "package://<package>/<path>"),
    _key("traffic", list, "messages the embedded runner (acomms_run) publishes", None,
         keys=TRAFFIC_KEYS),
    _key("events", list, "local events: messages the embedded runner publishes once on the "
         "vehicle's own topics, not sent over the link", None, keys=EVENT_KEYS),
    _key("bridges", list, "bridge nodes started after the MAC, in this order", None,
         keys=BRIDGE_KEYS),
    _key("file_transfer", dict, "start file_transfer_node with these parameters of its own "
         "({} sends only)", None),
    _key("relay", dict, "relay overheard packets of relayable packet codecs (issue 32): routes "
         "({dest: next_hop}, required), enabled (default true), priority, max_hops, "
         "backlog_size, ttl_seconds, duplicate_memory: message_queue_node's relay_* "
         "parameters", None),
    _key("parameters", dict, "{node: {parameter: value}} per-node overrides, applied last "
         f"(nodes: {', '.join(VEHICLE_NODE_NAMES)})", None),
)
SCENARIO_KEYS = (
    _key("name", str, "letters, digits and _", None, default_text="the file stem"),
    _key("duration_seconds", float, "simulated seconds the runner runs", minimum=0.0,
         exclusive_minimum=True),
    _key("seed", int, "seeds every random process of the simulation", 0, minimum=0,
         maximum=2**32 - 1),
    _key("clock", dict, "time", None, keys=CLOCK_KEYS, default_text=_ITS_DEFAULTS),
    _key("channel", dict, "the simulated channel", None, keys=CHANNEL_KEYS,
         default_text=_ITS_DEFAULTS),
    _key("vehicles", list, "at least one", keys=VEHICLE_KEYS),
    _key("runtime", dict, "how the embedded runner runs the nodes", None, keys=RUNTIME_KEYS,
         default_text=_ITS_DEFAULTS),
)
