"""One entry of a scenario's `vehicles:` list (ROS-free): name, namespace, SRC, the modem, where
the vehicle is (position, trajectory or position_source), its MAC (scenario_mac), codec config
and traffic (scenario_traffic), bridges, file transfer, and `parameters:` overrides of its
nodes, each checked against the node's own ParameterSpec table."""

from __future__ import annotations

import importlib
import pathlib
from typing import Any

from acomms_bringup.description.scenario_events import EVENT_KEYS, parse_events
from acomms_bringup.description.scenario_keys import (
    EVOLOGICS_CONNECTIONS,
    MICROMODEM_CONNECTIONS,
    VEHICLE_NODE_NAMES,
    WAYPOINT_KEYS,
)
from acomms_bringup.description.scenario_mac import _parse_mac, _parse_mac_switcher, _renames_into
from acomms_bringup.description.scenario_parsing import (
    _NAME_TOKEN,
    _NAMESPACE,
    _TOPIC,
    SCENARIO_KEYS_TABLE,
    PackageShareResolver,
    _check_type,
    _Context,
    _describe_type,
    _Section,
    resolve_path,
)
from acomms_bringup.description.scenario_traffic import (
    _check_codec_config,
    _check_unique_topics,
    _parse_traffic,
    _subscribe_topics,
)
from acomms_bringup.description.scenario_types import (
    BridgeNode,
    MacConfig,
    ModemConfig,
    Position,
    PositionSource,
    Trajectory,
    Vehicle,
    Waypoint,
)
from acomms_core.mac.registry import MAC_KINDS
from acomms_core.relay.relay_policy import RELAY_PARAMETERS, routes_problem
from acomms_core.ros.parameter_spec import check_values, spec_table
from acomms_core.ros_acomms_names import did_you_mean
from acomms_sim.emulator.evologics_model import MAX_ADDRESS
from acomms_sim.modem.location_topic import (
    LOCATION_TOPIC_SPECS,
    LOCATION_TOPIC_TYPES,
    check_location_topic,
)

MODEM_EXECUTABLES = {"sim": "modem_sim_node", "micromodem": "acomms_driver_node",
                     "evologics": "evologics_driver_node"}
# Where each vehicle node's ParameterSpec table lives ("module:ATTRIBUTE", by executable; the MAC
# nodes' tables are MAC_KINDS[kind].parameters). Imported only when a scenario overrides that
# node's parameters (the node modules import rclpy). Every node also has rclpy's own parameters.
NODE_PARAMETER_TABLES = {
    "trajectory_node": "acomms_bringup.nodes.trajectory_node:PARAMETERS",
    "modem_sim_node": "acomms_sim.nodes.modem_sim_node:SPECS",
    "acomms_driver_node": "acomms_driver.nodes.driver_parameters:PARAMETERS",
    "evologics_driver_node": "acomms_driver.nodes.evologics_driver_node:PARAMETERS",
    "message_queue_node": "acomms_core.nodes.message_queue_node:DECLARED_PARAMETERS",
    "packet_dispatch_node": "acomms_core.nodes.packet_dispatch_node:DECLARED_PARAMETERS",
    "file_transfer_node": "acomms_bringup.file_transfer.file_transfer_node:PARAMETERS",
}
ROS_NODE_PARAMETERS = ("use_sim_time",)

# modem_sim_node parameter -> position_source key, to name a refused value's key path
_SOURCE_KEYS = {"modem_location_topic": "topic", "location_topic_type": "type",
                "enu_origin_latitude": "origin", "enu_origin_longitude": "origin",
                "enu_origin_altitude_m": "origin", "location_frame_id": "frame_id",
                "location_max_age_s": "max_age_seconds"}


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
    if modem.kind == "evologics" and not 1 <= src <= MAX_ADDRESS:
        raise ctx.error(section.key_path("src"),
                        f"{src}: an EvoLogics modem address is 1..{MAX_ADDRESS}")
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

    relay = _parse_relay(ctx, section.section("relay"))
    parameters = _parse_node_overrides(ctx, section.section("parameters"), modem, mac)
    if relay:   # explicit message_queue_node parameters apply last
        parameters["message_queue_node"] = {**relay, **parameters.get("message_queue_node", {})}
    section.finish()
    return Vehicle(name=name, namespace=namespace, src=src, modem=modem, position=position,
                   trajectory=trajectory, mac=mac, codec_config=codec_config.resolve(),
                   parameters=parameters, traffic=traffic, position_source=position_source,
                   bridges=bridges, mac_switcher=mac_switcher, file_transfer=file_transfer,
                   events=events)


def _parse_relay(ctx: _Context, section: _Section | None) -> dict[str, Any]:
    """`relay: {routes: {dest: next_hop}, enabled, priority, ...}` -> message_queue_node's
    relay_* parameters, checked by the node's own ParameterSpecs (acomms_core.nodes.relay_ros)."""
    if section is None:
        return {}
    specs = {spec.name.removeprefix("relay_"): spec for spec in RELAY_PARAMETERS}
    routes = section.data.get("routes")
    if not isinstance(routes, dict) or not routes:
        raise ctx.error(section.key_path("routes"), "required: a mapping {dest: next_hop}")
    problem = routes_problem(routes)
    if problem:
        raise ctx.error(section.key_path("routes"), problem)
    values = {"relay_enabled": True,
              "relay_routes": [f"{int(d)}:{int(h)}" for d, h in routes.items()]}
    for key, value in section.data.items():
        if key == "routes":
            continue
        spec = specs.get(str(key))
        if spec is None:
            raise ctx.error(section.key_path(str(key)), "unknown relay key; valid: routes, "
                            + ", ".join(sorted(k for k in specs if k != "routes")))
        reason = spec.check_value(value)
        if reason:
            raise ctx.error(section.key_path(str(key)), reason.partition(": ")[2] or reason)
        values[spec.name] = value
    section.used.update(section.data)
    section.finish()
    return values


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
        connection = _micromodem_connection(ctx, section)
    elif kind == "evologics":
        connection = _evologics_connection(ctx, section)
    section.finish()
    return ModemConfig(kind=kind, source_level_db=source_level, connection=connection,
                       tx_level=tx_level)


def _link_settings(section: _Section, conn: str) -> dict[str, Any]:
    """The serial or network settings of a real modem's connection."""
    if conn == "serial":
        return {"serial_port": section.take("serial_port"),
                "baud_rate": section.take("baud_rate")}
    settings = {"remote_host": section.take("remote_host"),
                "remote_port": section.take("remote_port")}
    if conn == "udp":
        settings["local_port"] = section.take("local_port")
    return settings


def _micromodem_connection(ctx: _Context, section: _Section) -> dict[str, Any]:
    conn = section.take("connection", choices=MICROMODEM_CONNECTIONS)
    connection: dict[str, Any] = {"connection": conn, **_link_settings(section, conn)}
    modem_config = section.section("modem_config")
    if modem_config is not None:
        config = {}
        for key, value in modem_config.data.items():
            modem_config.used.add(key)
            config[str(key)] = _check_type(ctx, modem_config.key_path(str(key)), value,
                                           (int, float, str))
        connection["modem_config"] = config
    connection["set_modem_time"] = section.take("set_modem_time")
    return connection


def _evologics_connection(ctx: _Context, section: _Section) -> dict[str, Any]:
    """An EvoLogics S2C: a real one (serial, tcp) or one acomms_run emulates (`emulated`, with an
    optional `usbl` error model whose defaults are acomms_sim.emulator.usbl_errors')."""
    conn = section.take("connection", choices=EVOLOGICS_CONNECTIONS)
    connection: dict[str, Any] = {"connection": conn}
    if conn != "emulated":
        connection.update(_link_settings(section, conn))
    usbl = section.section("usbl")
    if usbl is not None:
        if conn != "emulated":
            raise ctx.error(usbl.path, "the USBL error model is the emulator's: only with "
                                       "connection: emulated (a real modem measures its own)")
        connection["usbl"] = {   # UsblErrorModel's fields (scenario_keys.USBL_KEYS)
            "range_error_fraction": usbl.take("range_error_fraction"),
            "range_error_floor_m": usbl.take("range_error_floor_m"),
            "bearing_error_deg": usbl.take("bearing_error_deg"),
            "elevation_error_deg": usbl.take("elevation_error_deg"), "seed": usbl.take("seed")}
        usbl.finish()
    return connection
