"""One vehicle's stack from a standard ROS 2 parameters file (ROS-free; vehicle.launch.py).

A real vehicle is not a simulation scenario: its nodes are described by the parameters file
`ros2 run --params-file` reads, one section per node:

    /**:                          # every node
      ros__parameters: {use_sim_time: false}
    /**/modem_sim_node:           # or acomms_driver_node: which modem this vehicle has
      ros__parameters: {SRC: 1, latitude: 41.52, longitude: -70.67}
    /**/message_queue_node:
      ros__parameters: {src: 1, codec_config_file: package://acomms_bringup/config/demo_codecs.yaml}
    /**/packet_dispatch_node:
      ros__parameters: {codec_config_file: package://acomms_bringup/config/demo_codecs.yaml}
    /**/tdma_node:                # the MAC: any MAC executable (or mac_node with mac_kind)
      ros__parameters: {num_slots: 2, active_slots: 0}

Keys as rcl reads them: a fully qualified name or pattern (`/auv/tdma_node`, `/**/tdma_node`,
`/*/tdma_node`), the nested namespace form (`auv: {tdma_node: {ros__parameters: ...}}`), `/**`
for every node. A key without a leading `/` is taken relative to the vehicle's namespace (rcl
would read it as `/<key>`). Sections are applied in file order, later ones winning.

`describe_params_vehicle(document, namespace)` returns the `NodeGroup` to start, in dependency
order: [trajectory_node] → the modem → message_queue_node → packet_dispatch_node → the MAC →
bridges (those with a section, in file order), with relative names (so a PushRosNamespace
around the launch file composes) and a lifecycle_manager naming them relative to itself.
Every parameter a node's section sets must be one the node declares (its ParameterSpec table,
plus rclpy's `use_sim_time` and `qos_overrides.*`), of the right type and range: ROS itself
silently ignores a misspelt name. A `/**` section's names must be declared by some node of the
vehicle. (Bridges keep no static table; their sections are not checked here.) A ros_acomms
parameter name that is renamed here (`wait_for_services_timeout_sec`, acomms_core.ros_acomms_names)
is read as ours with a logged note.
Refusals (`ParamsFileError`) name the file and the section.
"""

from __future__ import annotations

import dataclasses
import logging
import pathlib
import re
from collections.abc import Mapping
from typing import Any

import yaml

from acomms_bringup.bridges.registry import BRIDGES
from acomms_bringup.description.scenario import (
    NODE_PARAMETER_TABLES,
    ROS_NODE_PARAMETERS,
    executable_parameter_specs,
    resolve_path,
)
from acomms_bringup.description.stack import (
    MAC_EXECUTABLES,
    MODEM_EXECUTABLES,
    READ_LOCATION_SERVICE,
    SERVICE_WAIT_SECONDS,
    SOUND_SPEED_PROFILE_TOPIC,
    TRANSITION_TIMEOUT_SECONDS,
    NodeGroup,
    _node,
)
from acomms_core.mac.registry import MAC_KINDS
from acomms_core.ros.parameter_spec import spec_table
from acomms_core.ros_acomms_names import did_you_mean, parameter_renames, rename_parameters

_LOG = logging.getLogger("acomms.vehicle_params")

PARAMETERS_KEY = "ros__parameters"
MODEMS = tuple(MODEM_EXECUTABLES.values())
MACS = tuple(dict.fromkeys(MAC_EXECUTABLES.values()))
ALWAYS = ("message_queue_node", "packet_dispatch_node")
OPTIONAL = ("trajectory_node", *BRIDGES)
KNOWN_NODES = (*MODEMS, *ALWAYS, *MACS, *OPTIONAL)
# String parameters that name files or directories: `package://pkg/path` is resolved for them.
FILE_PARAMETERS = ("codec_config_file", "packet_codec_file", "codec_directory")
GENERIC_MAC = "mac_node"  # runs the MAC kind its `mac_kind` parameter names (unset: "tdma")
# Launch-time seconds for the manager of a vehicle started by a launch file (processes start
# slowly on a loaded computer; each answer is retried with backoff until the deadline).
RETRY_DEADLINE_SECONDS = 120.0


class ParamsFileError(ValueError):
    """A parameters file that cannot describe a vehicle; the message names file and section."""


@dataclasses.dataclass(frozen=True)
class Section:
    key: str  # as written (flattened nested form joined by "/")
    parameters: Mapping[str, Any]

    @property
    def node_name(self) -> str:
        return self.key.rstrip("/").rsplit("/", 1)[-1]

    @property
    def for_every_node(self) -> bool:
        return self.node_name in ("*", "**")

    def matches(self, node_name: str, namespace: str) -> bool:
        """Does this section apply to node `node_name` in `namespace` (absolute)?"""
        key = self.key.rstrip("/")
        if not key.startswith("/"):
            key = f"{namespace.rstrip('/')}/{key}"  # relative: in the vehicle's namespace
        return fqn_matches(key, f"{namespace.rstrip('/')}/{node_name}")


def fqn_matches(pattern: str, fqn: str) -> bool:
    """rcl's wildcards in a parameters-file key: `*` one token, `**` any number of tokens."""
    regex = ""
    for token in pattern.strip("/").split("/"):
        regex += ("(/[^/]+)*" if token == "**" else "/[^/]+" if token == "*"
                  else "/" + re.escape(token))
    return re.fullmatch(regex, fqn) is not None


def read_params_file(path: str | pathlib.Path) -> list[Section]:
    """The sections of a ROS 2 parameters file, in file order."""
    try:
        document = yaml.safe_load(pathlib.Path(path).read_text())
    except OSError as exc:
        raise ParamsFileError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except yaml.YAMLError as exc:
        raise ParamsFileError(f"{path}: not YAML: {exc}") from None
    return sections_of(document, str(path))


def sections_of(document: Any, source: str = "params") -> list[Section]:
    if not isinstance(document, Mapping):
        raise ParamsFileError(f"{source}: expected a mapping of node names to "
                              f"{{{PARAMETERS_KEY}: ...}}")
    sections: list[Section] = []
    _flatten(document, "", source, sections)
    return sections


def _flatten(mapping: Mapping, prefix: str, source: str, out: list[Section]) -> None:
    for key, value in mapping.items():
        key = f"{prefix}{key}" if prefix else str(key)
        if not isinstance(value, Mapping):
            raise ParamsFileError(f"{source}: {key}: expected {PARAMETERS_KEY} or a namespace "
                                  "mapping")
        if PARAMETERS_KEY in value:
            parameters = value[PARAMETERS_KEY] or {}
            if not isinstance(parameters, Mapping):
                raise ParamsFileError(f"{source}: {key}.{PARAMETERS_KEY}: expected a mapping")
            out.append(Section(key, dict(parameters)))
        else:
            _flatten(value, key.rstrip("/") + "/", source, out)


def node_parameters(sections: list[Section], node_name: str, namespace: str) -> dict[str, Any]:
    """Every section that applies to the node, merged in file order."""
    merged: dict[str, Any] = {}
    for section in sections:
        if section.matches(node_name, namespace):
            merged.update(section.parameters)
    return merged


def _chosen(named: list[str], choices: tuple[str, ...], what: str, source: str) -> str | None:
    found = [name for name in choices if name in named]
    if len(found) > 1:
        raise ParamsFileError(f"{source}: sections for more than one {what}: {found}; "
                              "a vehicle has one")
    return found[0] if found else None


def _resolve_files(parameters: dict[str, Any], base_dir: pathlib.Path) -> dict[str, Any]:
    for name in FILE_PARAMETERS:
        value = parameters.get(name)
        if isinstance(value, str) and value.startswith("package://"):
            parameters[name] = str(resolve_path(value, base_dir))
    return parameters


def describe_params_vehicle(sections: list[Section], namespace: str = "/",
                            source: str = "params", use_sim_time: bool | None = None,
                            autostart: bool = True, base_dir: pathlib.Path | None = None
                            ) -> NodeGroup:
    """The vehicle's nodes (relative names) and their manager; `namespace` (absolute, where
    they will run) decides which namespaced sections apply."""
    named = [s.node_name for s in sections if not s.for_every_node]
    unknown = sorted({n for n in named if n not in KNOWN_NODES})
    if unknown:
        raise ParamsFileError(f"{source}: sections for nodes acomms does not start: {unknown}; "
                              f"known: {sorted(set(KNOWN_NODES))}")
    modem = _chosen(named, MODEMS, "modem", source)
    mac = _chosen(named, MACS, "MAC", source)
    if modem is None or mac is None:
        raise ParamsFileError(f"{source}: a vehicle needs a section for its modem (one of "
                              f"{list(MODEMS)}) and its MAC (one of {list(MACS)})")
    order = [*(["trajectory_node"] if "trajectory_node" in named else []), modem, *ALWAYS, mac,
             *[n for n in dict.fromkeys(named) if n in BRIDGES]]
    sections = renamed_sections(sections, order, namespace, source)
    check_parameter_names(sections, order, namespace, source)
    nodes = []
    for name in order:
        parameters = _resolve_files(node_parameters(sections, name, namespace),
                                    base_dir or pathlib.Path.cwd())
        if use_sim_time is not None:
            parameters["use_sim_time"] = use_sim_time
        nodes.append(_node(name, None, "", parameters, _remappings(name, parameters)))
    nodes_tuple = tuple(nodes)
    manager = _node("lifecycle_manager", None, "", {
        "node_names": [n.name for n in nodes_tuple], "autostart": autostart,
        "transition_timeout_seconds": TRANSITION_TIMEOUT_SECONDS,
        "service_wait_seconds": SERVICE_WAIT_SECONDS,
        "retry_deadline_seconds": RETRY_DEADLINE_SECONDS,
        **({"use_sim_time": use_sim_time} if use_sim_time is not None else {})},
        lifecycle=False)
    return NodeGroup(name=namespace.strip("/") or "vehicle", namespace="", nodes=nodes_tuple,
                     manager=manager)


def declared_parameters(executable: str, parameters: Mapping[str, Any], source: str = "params"
                        ) -> dict[str, Any] | None:
    """{name: ParameterSpec, or None for rclpy's own} of what the node declares (its own table:
    one source of truth); None for a node without a static table (bridges)."""
    ros = dict.fromkeys(ROS_NODE_PARAMETERS)
    if executable in NODE_PARAMETER_TABLES:
        return {**executable_parameter_specs(executable), **ros}
    kinds = [kind for kind in MAC_KINDS.values() if kind.executable == executable]
    if executable == GENERIC_MAC:
        name = parameters.get("mac_kind", "tdma")
        if name not in MAC_KINDS:
            raise ParamsFileError(f"{source}: {executable}: mac_kind {name!r}: expected one of "
                                  f"{sorted(MAC_KINDS)}")
        kinds, ros["mac_kind"] = [MAC_KINDS[name]], None
    return {**spec_table(kinds[0].parameters), **ros} if kinds else None


def renamed_sections(sections: list[Section], names: list[str], namespace: str,
                     source: str = "params") -> list[Section]:
    """sections with ros_acomms parameter names read as ours (a logged note each), where the
    node (a `/**` section: some node in `names`) declares our name and not theirs."""
    tables = [declared_parameters(name, node_parameters(sections, name, namespace), source)
              for name in names]
    everyone = {n for table in tables if table for n in table}
    out = []
    for section in sections:
        table = everyone if section.for_every_node else (
            declared_parameters(section.node_name, section.parameters, source) or {})
        renames = {old: new for old, new in parameter_renames().items()
                   if old in section.parameters and new in table and old not in table}
        try:
            parameters, notes = rename_parameters(section.parameters, renames,
                                                  f"{source}: {section.key}")
        except ValueError as exc:
            raise ParamsFileError(str(exc)) from None
        for note in notes:
            _LOG.warning(note)
        out.append(Section(section.key, parameters))
    return out


def check_parameter_names(sections: list[Section], names: list[str], namespace: str,
                          source: str = "params") -> None:
    """ParamsFileError unless every name a section sets is declared by its node (a `/**`
    section: by some node in `names`), and a node section's values have the node's types and
    ranges."""
    tables = {name: declared_parameters(name, node_parameters(sections, name, namespace), source)
              for name in names}
    if any(table is None for table in tables.values()):
        everyone = None  # a node without a static table may declare anything
    else:
        everyone = {name: None for table in tables.values() for name in table}
    for section in sections:
        table = everyone if section.for_every_node else tables.get(section.node_name)
        if table is None:
            continue
        for name, value in section.parameters.items():
            if str(name).startswith("qos_overrides."):
                continue
            if name not in table:
                node = "any node of the vehicle" if section.for_every_node else section.node_name
                valid = ", ".join(sorted(map(str, table), key=str.lower))
                hint = did_you_mean(str(name), table)
                raise ParamsFileError(f"{source}: {section.key}: {name}: unknown parameter of "
                                      f"{node}{hint}; valid: {valid}")
            reason = table[name].check_value(value) if table[name] is not None else None
            if reason:
                raise ParamsFileError(f"{source}: {section.key}: {reason}")


def _remappings(name: str, parameters: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    """A sim modem reaches the simulator's global names, as in a scenario (stack)."""
    if name != MODEM_EXECUTABLES["sim"]:
        return ()
    remappings = [("sound_speed_profile", SOUND_SPEED_PROFILE_TOPIC)]
    if parameters.get("location_source") == "service":
        remappings.insert(0, ("read_location", READ_LOCATION_SERVICE))
    return tuple(remappings)


def parse_bool_argument(value: str, name: str) -> bool | None:
    """A launch argument `true`/`false` (any case), or "" for not given."""
    lowered = value.strip().lower()
    if lowered == "":
        return None
    if lowered in ("true", "1", "yes"):
        return True
    if lowered in ("false", "0", "no"):
        return False
    raise ParamsFileError(f"launch argument {name}:={value!r}: expected true or false")


def params_vehicle_from_arguments(params_file: str, namespace: str, use_sim_time: str = "",
                                  autostart: str = "true") -> NodeGroup:
    """vehicle.launch.py's arguments (strings) → the vehicle's NodeGroup."""
    path = resolve_path(params_file, pathlib.Path.cwd())
    return describe_params_vehicle(
        read_params_file(path), namespace or "/", source=str(path),
        use_sim_time=parse_bool_argument(use_sim_time, "use_sim_time"),
        autostart=parse_bool_argument(autostart, "autostart") is not False,
        base_dir=path.parent)
