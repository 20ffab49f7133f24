"""Stack description: which nodes a scenario starts, with which names and parameters (ROS-free).

`describe_stack(scenario)` turns a `Scenario` into node groups in start-up order:

1. `simulation` (namespace `/`, only with sim modems): platform_location_node (unless every
   sim vehicle follows a `position_source` topic), sim_transmission_loss_node,
   sim_packet_performance_node — the services the sim modems use.
2. one group per vehicle (namespace `/<vehicle>`), in dependency order:
   [trajectory_node (if the vehicle moves)] → modem (modem_sim_node, acomms_driver_node or
   evologics_driver_node) →
   message_queue_node → packet_dispatch_node → MAC (the kind's node; with `mac_switcher`, every
   managed MAC in its sub-namespace `/<vehicle>/<ns>`, started muted, with the vehicle's
   interfaces remapped to it, then mac_switcher_node) → the vehicle's `bridges`
   (acomms_bringup.bridges.registry), in order → file_transfer_node (with `file_transfer`).
3. `clock` (namespace `/`, only with `use_sim_time`): sim_clock_node, started last so simulated
   time starts moving when every node is ready.

Each group has a start-up `stage` (`STAGE_SIMULATION`, `STAGE_VEHICLES`, `STAGE_CLOCK`): a stage
starts when every group of the earlier stages is active, and the groups of one stage do not depend
on each other, so a runner may bring them up together (`StackDescription.stages()`).

Each group has its own lifecycle_manager (a plain node) whose `node_names` parameter lists the
group's lifecycle nodes in that order. The embedded runner instantiates `NodeDescription.plugin`
classes in one process; the launch files turn the same descriptions into launch_ros actions, so
both start the same nodes with the same parameters and remappings.

Node parameter names follow docs/ARCHITECTURE.md and the issue that defines each node.
Per-node overrides from the scenario (`vehicles[i].parameters.<node>`) are applied last.
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Mapping
from typing import Any

import yaml

from acomms_bringup.bridges.registry import BRIDGES
from acomms_bringup.description.scenario import MODEM_EXECUTABLES, MacConfig, Scenario, Vehicle
from acomms_core.mac.registry import MAC_KINDS, MAC_VEHICLE_INTERFACES
from acomms_core.modems.evologics_s2c import EVOLOGICS_S2C
from acomms_core.modems.registry import MODEM_PROFILE_PARAMETER

# executable -> (package, "module:Class"), as in docs/ARCHITECTURE.md.
NODE_TYPES: dict[str, tuple[str, str]] = {
    "message_queue_node": ("acomms_core", "acomms_core.nodes.message_queue_node:MessageQueueNode"),
    "packet_dispatch_node": ("acomms_core",
                             "acomms_core.nodes.packet_dispatch_node:PacketDispatchNode"),
    # The MAC nodes, from the MAC registry (one line per kind there).
    **{kind.executable: (kind.package, kind.plugin) for kind in MAC_KINDS.values()},
    "modem_sim_node": ("acomms_sim", "acomms_sim.nodes.modem_sim_node:ModemSimNode"),
    "sim_transmission_loss_node": (
        "acomms_sim", "acomms_sim.nodes.sim_transmission_loss_node:SimTransmissionLossNode"),
    "sim_packet_performance_node": (
        "acomms_sim", "acomms_sim.nodes.sim_packet_performance_node:SimPacketPerformanceNode"),
    "platform_location_node": ("acomms_sim",
                               "acomms_sim.nodes.platform_location_node:PlatformLocationNode"),
    "sim_clock_node": ("acomms_sim", "acomms_sim.nodes.sim_clock_node:SimClockNode"),
    "acomms_driver_node": ("acomms_driver",
                           "acomms_driver.nodes.acomms_driver_node:AcommsDriverNode"),
    "evologics_driver_node": ("acomms_driver",
                              "acomms_driver.nodes.evologics_driver_node:EvologicsDriverNode"),
    "trajectory_node": ("acomms_bringup", "acomms_bringup.nodes.trajectory_node:TrajectoryNode"),
    "mac_switcher_node": ("acomms_core", "acomms_core.nodes.mac_switcher_node:MacSwitcherNode"),
    "lifecycle_manager": ("acomms_bringup",
                          "acomms_bringup.nodes.lifecycle_manager:LifecycleManager"),
    "file_transfer_node": ("acomms_bringup",
                           "acomms_bringup.file_transfer.file_transfer_node:FileTransferNode"),
    # The bridge nodes, from the bridge registry (one line per bridge there).
    **{kind: ("acomms_bringup", bridge.plugin) for kind, bridge in BRIDGES.items()},
}
MAC_EXECUTABLES = {name: kind.executable for name, kind in MAC_KINDS.items()}
# Global service names the sim modems reach (ARCHITECTURE: only these sim names are global).
READ_LOCATION_SERVICE = "/read_location"
SOUND_SPEED_PROFILE_TOPIC = "/sound_speed_profile"
# evologics_driver_node's modem_serial_port for `connection: emulated` until acomms_run opens the
# emulator's pty (acomms_bringup.run.emulated_modems puts the pty's path there)
EMULATED_PORT = "(emulated: the pty acomms_run opens)"
FIX_TOPIC = "fix"  # relative: /<vehicle>/fix (NavSatFix), published by trajectory_node
TRAJECTORY_PUBLISH_RATE_HZ = 2.0
# Wall-clock seconds the manager waits for one transition / for a node's services.
TRANSITION_TIMEOUT_SECONDS = 30.0
SERVICE_WAIT_SECONDS = 30.0
# Start-up stages (NodeGroup.stage), in order.
STAGE_SIMULATION, STAGE_VEHICLES, STAGE_CLOCK = 0, 1, 2


@dataclasses.dataclass(frozen=True)
class NodeDescription:
    """One node to start: what to run, under which name, with which parameters."""

    package: str
    executable: str
    plugin: str  # "module:Class" for composing in one process
    name: str
    namespace: str  # absolute, "/" for global nodes
    parameters: Mapping[str, Any]
    remappings: tuple[tuple[str, str], ...] = ()
    lifecycle: bool = True

    @property
    def fully_qualified_name(self) -> str:
        return f"{self.namespace.rstrip('/')}/{self.name}"

    def load_class(self) -> type:
        """Import the node class (raises ImportError naming the module if it is not there)."""
        module_name, _, class_name = self.plugin.partition(":")
        return getattr(importlib.import_module(module_name), class_name)


@dataclasses.dataclass(frozen=True)
class NodeGroup:
    """Lifecycle nodes brought up together (in order) by one lifecycle manager."""

    name: str
    namespace: str
    nodes: tuple[NodeDescription, ...]
    manager: NodeDescription
    stage: int = STAGE_VEHICLES  # groups of one stage may start together, after earlier stages

    def node(self, name: str) -> NodeDescription:
        for node in self.nodes:
            if node.name == name:
                return node
        raise KeyError(f"group {self.name} has no node {name!r}: {[n.name for n in self.nodes]}")


@dataclasses.dataclass(frozen=True)
class StackDescription:
    groups: tuple[NodeGroup, ...]  # in start-up order
    # ROS time (s) the simulated clock starts at (scenario clock.start_time); None: wall time
    sim_start_s: float | None = None

    def group(self, name: str) -> NodeGroup:
        for group in self.groups:
            if group.name == name:
                return group
        raise KeyError(f"no group {name!r}: {[g.name for g in self.groups]}")

    def stages(self) -> list[tuple[NodeGroup, ...]]:
        """The groups by start-up stage (earliest first), each in start-up order."""
        stages = sorted({group.stage for group in self.groups})
        return [tuple(g for g in self.groups if g.stage == stage) for stage in stages]

    def all_nodes(self) -> list[NodeDescription]:
        """Every node, managers included, in start-up order (each group's manager last)."""
        return [node for group in self.groups for node in (*group.nodes, group.manager)]


def _node(executable: str, name: str | None, namespace: str, parameters: dict[str, Any],
          remappings: tuple[tuple[str, str], ...] = (), lifecycle: bool = True
          ) -> NodeDescription:
    package, plugin = NODE_TYPES[executable]
    return NodeDescription(package=package, executable=executable, plugin=plugin,
                           name=name or executable, namespace=namespace,
                           parameters=dict(parameters), remappings=tuple(remappings),
                           lifecycle=lifecycle)


def _manager(name: str, namespace: str, nodes: tuple[NodeDescription, ...]) -> NodeDescription:
    return _node("lifecycle_manager", name, namespace, {
        "node_names": [n.fully_qualified_name for n in nodes],
        "autostart": True,
        "transition_timeout_seconds": TRANSITION_TIMEOUT_SECONDS,
        "service_wait_seconds": SERVICE_WAIT_SECONDS,
    }, lifecycle=False)


def channel_parameters(scenario: Scenario) -> dict[str, Any]:
    """Propagation and water parameters, declared alike by modem_sim_node and
    sim_transmission_loss_node (acomms_sim.nodes.sim_node_support.PROPAGATION_SPECS)."""
    channel = scenario.channel
    return {
        "transmission_loss_model": channel.transmission_loss_model,
        "spreading": channel.spreading,
        "absorption_model": channel.absorption.model,
        "water_temperature_c": channel.absorption.temperature_c,
        "salinity_ppt": channel.absorption.salinity_ppt,
        "ph": channel.absorption.ph,
        # With a profile: its mean until the profile is published on /sound_speed_profile;
        # none given: 0 = Mackenzie at water_temperature_c / salinity_ppt.
        "sound_speed_mps": channel.sound_speed_mps or 0.0,
        "water_depth_m": channel.water_depth_m,
        "delay_spread_s": channel.multipath.delay_spread_s,
    }


def noise_parameters(scenario: Scenario) -> dict[str, Any]:
    noise = scenario.channel.noise
    return {"ambient_noise_model": noise.model, "ambient_noise_db": noise.level_db,
            "shipping_activity": noise.shipping_activity, "wind_speed_mps": noise.wind_speed_mps}


def run_start_seconds(scenario: Scenario) -> float:
    """Node-clock time of the run's start for nodes that count from it: the simulated clock's
    start (clock.start_time) in sim time; -1 in wall-clock time (each node's activation)."""
    return scenario.clock.start_time_s if scenario.clock.use_sim_time else -1.0


def _bridge_start(scenario: Scenario, bridge) -> dict[str, float]:
    """{start parameter: run start} for a bridge kind that has one (registry), else {}."""
    name = BRIDGES[bridge.kind].start_parameter
    return {name: run_start_seconds(scenario)} if name else {}


def _modem_sim_parameters(scenario: Scenario, vehicle: Vehicle) -> dict[str, Any]:
    channel = scenario.channel
    source_level = vehicle.modem.source_level_db
    if source_level is None:
        source_level = channel.source_level_db
    tx_level = vehicle.modem.tx_level
    return {
        "SRC": vehicle.src,
        "center_frequency_hz": channel.center_frequency_hz,
        "bandwidth_hz": channel.bandwidth_hz,
        # 0: the modem profile's level for tx_level in the band
        "source_level_db": source_level if source_level is not None else 0.0,
        "tx_level": tx_level if tx_level is not None else channel.tx_level,
        "capture_margin_db": channel.capture_margin_db,
        "doppler_tolerance_mps": channel.doppler_tolerance_mps,
        "isi_tolerance_s": list(channel.multipath.isi_tolerance_s),
        "fading_model": channel.fading.model, "fading_k_factor": channel.fading.k_factor,
        "coherence_time_s": channel.fading.coherence_time_s,
        **_location_parameters(vehicle),
        "seed": scenario.seed,  # the node mixes in its SRC: distinct streams per modem
        **channel_parameters(scenario),
        **noise_parameters(scenario),
    }


def _location_parameters(vehicle: Vehicle) -> dict[str, Any]:
    """Where the sim modem gets its position: the topic an external simulator publishes
    (position_source), the platform location service following the vehicle's trajectory_node
    (trajectory), or the static position."""
    if vehicle.position_source is not None:
        return {"location_source": "topic", **vehicle.position_source.modem_parameters()}
    return {
        "location_source": "service" if vehicle.trajectory else "static",
        "platform_name": vehicle.name,
        "latitude": vehicle.position.latitude,
        "longitude": vehicle.position.longitude,
        "depth": vehicle.position.depth,
    }


def _driver_parameters(vehicle: Vehicle) -> dict[str, Any]:
    connection = vehicle.modem.connection
    parameters = {**_link_parameters(connection),
                  "set_modem_time": connection.get("set_modem_time", False)}
    # $CCCFG settings as one YAML mapping string (a ROS parameter cannot be a mapping); the
    # scenario's SRC is written to the modem unless the scenario sets SRC itself.
    config = {"SRC": vehicle.src, **connection.get("modem_config", {})}
    parameters["modem_config"] = yaml.safe_dump(config, default_flow_style=True,
                                                sort_keys=False).strip()
    return parameters


def _evologics_parameters(vehicle: Vehicle) -> dict[str, Any]:
    """evologics_driver_node's link: the real modem's port or host, or for `connection:
    emulated` the pty acomms_run's emulator serves (EMULATED_PORT until the run opens it:
    acomms_bringup.run.emulated_modems); the scenario's SRC is set with AT!AL."""
    connection = vehicle.modem.connection
    if connection["connection"] == "emulated":
        return {"modem_connection_type": "serial", "modem_serial_port": EMULATED_PORT,
                "SRC": vehicle.src}
    return {**_link_parameters(connection), "SRC": vehicle.src}


def _link_parameters(connection: dict[str, Any]) -> dict[str, Any]:
    """A real modem's link as the drivers' parameters (the Micromodem and the S2C drivers name
    them alike): serial port and baud rate, or remote host and port (and a UDP local port)."""
    parameters: dict[str, Any] = {"modem_connection_type": connection["connection"]}
    if connection["connection"] == "serial":
        parameters["modem_serial_port"] = connection["serial_port"]
        parameters["modem_baud_rate"] = connection["baud_rate"]
    else:
        parameters["modem_remote_host"] = connection["remote_host"]
        parameters["modem_remote_port"] = connection["remote_port"]
        if "local_port" in connection:
            parameters["modem_local_port"] = connection["local_port"]
    return parameters


def emulated_vehicles(scenario: Scenario) -> list[Vehicle]:
    """The vehicles whose modem acomms_run emulates (`{kind: evologics, connection: emulated}`)."""
    return [v for v in scenario.vehicles if v.modem.kind == "evologics"
            and v.modem.connection.get("connection") == "emulated"]


def _profile_for_modem(vehicle: Vehicle) -> dict[str, Any]:
    """An EvoLogics vehicle's MAC budgets with the S2C profile (unless the scenario says)."""
    names = {spec.name for spec in MAC_KINDS[vehicle.mac.kind].parameters}
    if vehicle.modem.kind == "evologics" and MODEM_PROFILE_PARAMETER.name in names:
        return {MODEM_PROFILE_PARAMETER.name: EVOLOGICS_S2C.name}
    return {}


def _with_overrides(node: NodeDescription, overrides: Mapping[str, Any] | None
                    ) -> NodeDescription:
    if not overrides:
        return node
    return dataclasses.replace(node, parameters={**node.parameters, **overrides})


def describe_vehicle(scenario: Scenario, vehicle: Vehicle | str) -> NodeGroup:
    """The lifecycle nodes of one vehicle in dependency order, plus their manager."""
    if isinstance(vehicle, str):
        vehicle = scenario.vehicle(vehicle)
    namespace = vehicle.namespace
    common = {"use_sim_time": scenario.clock.use_sim_time}
    overrides = vehicle.parameters
    nodes: list[NodeDescription] = []

    if vehicle.trajectory is not None:
        waypoints = vehicle.trajectory.waypoints
        nodes.append(_with_overrides(_node("trajectory_node", None, namespace, {
            **common,
            "waypoint_times_seconds": [w.time_seconds for w in waypoints],
            "waypoint_latitudes": [w.position.latitude for w in waypoints],
            "waypoint_longitudes": [w.position.longitude for w in waypoints],
            "waypoint_depths": [w.position.depth for w in waypoints],
            "publish_rate_hz": TRAJECTORY_PUBLISH_RATE_HZ,
            # Sim time: trajectory time 0 is the clock's start (scenario clock.start_time).
            # Wall time: trajectory time 0 is the node's activation.
            "start_time_seconds": run_start_seconds(scenario),
        }), overrides.get("trajectory_node")))

    modem_executable = MODEM_EXECUTABLES[vehicle.modem.kind]
    if vehicle.modem.kind == "sim":
        modem_parameters = {**common, **_modem_sim_parameters(scenario, vehicle)}
        remappings = [("sound_speed_profile", SOUND_SPEED_PROFILE_TOPIC)]
        if vehicle.trajectory:
            remappings.insert(0, ("read_location", READ_LOCATION_SERVICE))
    elif vehicle.modem.kind == "evologics":
        modem_parameters = {**common, **_evologics_parameters(vehicle)}
        remappings = []
    else:
        modem_parameters = {**common, **_driver_parameters(vehicle)}
        remappings = []
    nodes.append(_with_overrides(_node(modem_executable, None, namespace, modem_parameters,
                                       tuple(remappings)), overrides.get("modem")))

    codec_config_file = str(vehicle.codec_config)
    nodes.append(_with_overrides(_node("message_queue_node", None, namespace, {
        **common, "src": vehicle.src, "codec_config_file": codec_config_file}),
        overrides.get("message_queue_node")))
    nodes.append(_with_overrides(_node("packet_dispatch_node", None, namespace, {
        **common, "src": vehicle.src, "codec_config_file": codec_config_file}),
        overrides.get("packet_dispatch_node")))

    nodes += _mac_nodes(vehicle, common, overrides.get("mac"))
    nodes += [_node(bridge.kind, None, namespace, {**common, **_bridge_start(scenario, bridge),
                                                   **bridge.parameters})
              for bridge in vehicle.bridges]
    if vehicle.file_transfer is not None:
        nodes.append(_node("file_transfer_node", None, namespace,
                           {**common, **vehicle.file_transfer}))

    nodes_tuple = tuple(nodes)
    return NodeGroup(name=vehicle.name, namespace=namespace, nodes=nodes_tuple,
                     manager=_manager("lifecycle_manager", namespace, nodes_tuple))


def _mac_node(vehicle: Vehicle, mac_config: MacConfig, namespace: str, parameters: dict,
              remappings: tuple = ()) -> NodeDescription:
    # The scenario holds the MAC parameters as ROS carries them (MacKind.ros_values).
    mac = MAC_KINDS[mac_config.kind]
    from_vehicle = {name: getattr(vehicle, name) for name in mac.vehicle_parameters}
    return _node(mac.executable, None, namespace, {
        **mac.fixed_parameters, **from_vehicle, **_profile_for_modem(vehicle),
        **mac_config.parameters, **parameters},
        remappings)


def _mac_nodes(vehicle: Vehicle, common: dict, overrides) -> list[NodeDescription]:
    """The vehicle's MAC; with a switcher, each managed MAC in its sub-namespace (started muted:
    mac_switcher_node unmutes the default one), then the switcher."""
    switcher = vehicle.mac_switcher
    if switcher is None:
        return [_with_overrides(_mac_node(vehicle, vehicle.mac, vehicle.namespace, common),
                                overrides)]
    remappings = tuple((name, f"{vehicle.namespace}/{name}") for name in MAC_VEHICLE_INTERFACES)
    nodes = [_mac_node(vehicle, mac, f"{vehicle.namespace}/{ns}",
                       {**common, "software_mute": True}, remappings)
             for ns, mac in ((switcher.default_namespace, vehicle.mac), *switcher.macs)]
    nodes[0] = _with_overrides(nodes[0], overrides)
    nodes.append(_node("mac_switcher_node", None, vehicle.namespace,
                       {**common, **switcher.parameters}))
    return nodes


def describe_simulation(scenario: Scenario) -> NodeGroup | None:
    """The global simulator services the sim modems use; None without sim modems."""
    if not scenario.has_sim_modems:
        return None
    common = {"use_sim_time": scenario.clock.use_sim_time}
    # read_location serves the vehicles with a scenario position (not those following a topic).
    sim_vehicles = [v for v in scenario.vehicles
                    if v.modem.kind == "sim" and v.position_source is None]
    location: dict[str, Any] = {
        **common,
        "platform_names": [v.name for v in sim_vehicles],
        "latitudes": [v.position.latitude for v in sim_vehicles],
        "longitudes": [v.position.longitude for v in sim_vehicles],
        "depths": [v.position.depth for v in sim_vehicles],
        # A moving vehicle's position follows its trajectory_node's fixes.
        "position_topics": [f"{v.namespace}/{FIX_TOPIC}" if v.trajectory else ""
                            for v in sim_vehicles],
    }
    transmission_loss = {**common, **channel_parameters(scenario)}
    nodes = (
        *([_node("platform_location_node", None, "/", location)] if sim_vehicles else []),
        _node("sim_transmission_loss_node", None, "/", transmission_loss),
        _node("sim_packet_performance_node", None, "/", {**common, "seed": scenario.seed}),
    )
    return NodeGroup(name="simulation", namespace="/", nodes=nodes,
                     manager=_manager("simulation_lifecycle_manager", "/", nodes),
                     stage=STAGE_SIMULATION)


def describe_clock(scenario: Scenario) -> NodeGroup | None:
    """The simulated clock (publishes /clock at the warp factor); None in wall-clock time."""
    if not scenario.clock.use_sim_time:
        return None
    nodes = (_node("sim_clock_node", None, "/", {
        "mode": "free_running", "warp_factor": scenario.clock.warp_factor,
        "start_time_s": scenario.clock.start_time_s}),)
    return NodeGroup(name="clock", namespace="/", nodes=nodes,
                     manager=_manager("clock_lifecycle_manager", "/", nodes), stage=STAGE_CLOCK)


def describe_stack(scenario: Scenario) -> StackDescription:
    """Every group of the scenario in start-up order: simulation, vehicles, clock."""
    groups = [describe_simulation(scenario)]
    groups += [describe_vehicle(scenario, vehicle) for vehicle in scenario.vehicles]
    groups.append(describe_clock(scenario))
    return StackDescription(groups=tuple(g for g in groups if g is not None),
                            sim_start_s=(scenario.clock.start_time_s if scenario.clock.use_sim_time
                                         else None))


def active_slots(vehicle: Vehicle) -> list[int]:
    """The vehicle's TDMA active slots as a sorted list (for summaries and checks)."""
    schedule = getattr(MAC_KINDS[vehicle.mac.kind].config(vehicle.mac.parameters), "schedule",
                       None)
    return [] if schedule is None else list(schedule.active_slots)


def format_stack(stack: StackDescription) -> str:
    """A readable listing: one line per node with its parameters and remappings."""
    lines = []
    for group in stack.groups:
        lines.append(f"[{group.name}] managed by {group.manager.fully_qualified_name}")
        for node in group.nodes:
            lines.append(f"  {node.fully_qualified_name}  ({node.package}/{node.executable})")
            for name, value in node.parameters.items():
                lines.append(f"      {name} = {value!r}")
            for source, target in node.remappings:
                lines.append(f"      remap {source} -> {target}")
    return "\n".join(lines)


def _check_traffic(scenario, stack) -> None:
    """TrafficError for a traffic entry whose fields do not fit its message type (unknown field,
    wrong type), as acomms_run would find it when it starts (acomms_bringup.run.traffic)."""
    if any(vehicle.traffic for vehicle in scenario.vehicles):
        from acomms_bringup.run.traffic import plan_traffic

        plan_traffic(scenario, stack)
    if any(vehicle.events for vehicle in scenario.vehicles):  # local events: type and fields
        from acomms_bringup.run.local_events import plan_events

        plan_events(scenario)


def main(argv: list[str] | None = None) -> int:
    """`acomms_check_scenario FILE...`: validate scenarios and list the nodes they start."""
    import argparse
    import sys

    from acomms_bringup.description.scenario import ScenarioError, load_scenario

    parser = argparse.ArgumentParser(prog="acomms_check_scenario", description=main.__doc__)
    parser.add_argument("scenario", nargs="+", help="scenario YAML file(s)")
    parser.add_argument("--quiet", "-q", action="store_true", help="only report errors")
    arguments = parser.parse_args(argv)
    status = 0
    for path in arguments.scenario:
        try:
            scenario = load_scenario(path)
            stack = describe_stack(scenario)
            _check_traffic(scenario, stack)  # traffic fields against the message types
        except ValueError as exc:  # ScenarioError, TrafficError: one line naming the key
            print(exc if isinstance(exc, ScenarioError) else f"{path}: {exc}", file=sys.stderr)
            status = 1
            continue
        for warning in scenario.warnings:
            print(f"{path}: warning: {warning}", file=sys.stderr)
        if not arguments.quiet:
            print(f"{path}: scenario {scenario.name!r}, {len(scenario.vehicles)} vehicles, "
                  f"{scenario.duration_seconds:g} s, warp {scenario.clock.warp_factor:g}")
            print(format_stack(stack))
    return status


if __name__ == "__main__":
    raise SystemExit(main())
