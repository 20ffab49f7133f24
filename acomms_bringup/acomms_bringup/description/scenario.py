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
      use_sim_time: true                # [true unless a vehicle has a micromodem/evologics]
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
                                        # or {kind: evologics, connection: emulated, usbl:
                                        #     {bearing_error_deg: 0.5}}: an EvoLogics S2C
                                        #     emulator acomms_run starts (wall clock; usbl:
                                        #     a USBL head with that error model), or a real
                                        #     one: connection: serial | tcp (remote_host,
                                        #     remote_port 9200)
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

This module is the entry point (load_scenario, parse_scenario; every public name below is
importable from here). Each section is parsed in its own module: scenario_types (the
dataclasses, ScenarioError), scenario_parsing (the key-by-key reader all of them share),
scenario_clock, scenario_channel, scenario_vehicle, scenario_mac and scenario_traffic.
"""

from __future__ import annotations

import os
import pathlib
from typing import Any

import yaml

from acomms_bringup.description.scenario_channel import _parse_channel
from acomms_bringup.description.scenario_clock import (
    MAX_START_TIME_S,
    _parse_clock,
    format_start_time,
    parse_start_time,
)
from acomms_bringup.description.scenario_keys import (
    DEFAULT_START_TIME,
    REAL_TIME_MODEM_KINDS,
    SCENARIO_KEYS,
)
from acomms_bringup.description.scenario_mac import _slot_overlap_warnings
from acomms_bringup.description.scenario_parsing import (
    _NAME_TOKEN,
    SCENARIO_KEYS_TABLE,
    PackageShareResolver,
    _Context,
    _Section,
    default_package_share,
    resolve_path,
)
from acomms_bringup.description.scenario_traffic import FILE_TRANSFER_TYPE
from acomms_bringup.description.scenario_types import (
    Absorption,
    BridgeNode,
    Channel,
    Clock,
    Fading,
    MacConfig,
    MacSwitcherConfig,
    ModemConfig,
    Multipath,
    Noise,
    Position,
    PositionSource,
    Scenario,
    ScenarioError,
    Traffic,
    Trajectory,
    Vehicle,
    Waypoint,
)
from acomms_bringup.description.scenario_vehicle import (
    MODEM_EXECUTABLES,
    NODE_PARAMETER_TABLES,
    ROS_NODE_PARAMETERS,
    _parse_vehicle,
    executable_parameter_specs,
    node_parameter_specs,
)

# The names `from acomms_bringup.description.scenario import X` has always offered.
__all__ = [
    "DEFAULT_START_TIME", "FILE_TRANSFER_TYPE", "MAX_START_TIME_S", "MODEM_EXECUTABLES",
    "NODE_PARAMETER_TABLES", "ROS_NODE_PARAMETERS", "SCENARIO_KEYS_TABLE", "Absorption",
    "BridgeNode", "Channel", "Clock", "Fading", "MacConfig", "MacSwitcherConfig", "ModemConfig",
    "Multipath", "Noise", "PackageShareResolver", "Position", "PositionSource", "Scenario",
    "ScenarioError", "Traffic", "Trajectory", "Vehicle", "Waypoint", "default_package_share",
    "executable_parameter_specs", "format_start_time", "load_scenario", "node_parameter_specs",
    "parse_scenario", "parse_start_time", "resolve_path",
]


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
    real_time_kind = next((v.modem.kind for v in vehicles
                           if v.modem.kind in REAL_TIME_MODEM_KINDS), None)
    clock = _parse_clock(ctx, top.section("clock"), real_time_kind)
    _check_emulated_channel(ctx, channel, vehicles)
    runtime = top.section("runtime")
    lean = False if runtime is None else runtime.take("lean")
    processes = 1 if runtime is None else runtime.take("processes")
    if processes > len(vehicles):
        raise ctx.error("runtime.processes", f"{processes} processes for {len(vehicles)} "
                        "vehicles: each process runs at least one vehicle")
    if runtime is not None:
        runtime.finish()
    top.finish()
    _check_unique(ctx, vehicles, "src", "SRC")
    _check_unique(ctx, vehicles, "name", "vehicle name")
    _check_unique(ctx, vehicles, "namespace", "namespace")
    warnings = (*ctx.notes, *_slot_overlap_warnings(vehicles))
    return Scenario(name=name, path=path, duration_seconds=duration, seed=seed, clock=clock,
                    channel=channel, vehicles=vehicles, warnings=warnings, lean=lean,
                    processes=processes)


def _check_unique(ctx: _Context, vehicles: tuple[Vehicle, ...], attribute: str,
                  label: str) -> None:
    seen: dict[Any, int] = {}
    for index, vehicle in enumerate(vehicles):
        value = getattr(vehicle, attribute)
        if value in seen:
            raise ctx.error(f"vehicles[{index}].{attribute}",
                            f"duplicate {label} {value} (also vehicles[{seen[value]}])")
        seen[value] = index


def _check_emulated_channel(ctx: _Context, channel, vehicles: tuple[Vehicle, ...]) -> None:
    """The EvoLogics emulator's channel (acomms_bringup.run.emulated_modems) is built from the
    scenario's channel keys; Bellhop (a worker per modem node) it does not run."""
    emulated = [v.name for v in vehicles if v.modem.connection.get("connection") == "emulated"]
    if emulated and channel.transmission_loss_model != "spreading":
        raise ctx.error("channel.transmission_loss.model",
                        f"the EvoLogics emulator (vehicle {emulated[0]}, connection: emulated) "
                        "runs the spreading model only, not bellhop")
