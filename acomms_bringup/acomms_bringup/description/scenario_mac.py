"""The `mac:` and `mac_switcher:` sections of a scenario's vehicle (ROS-free): the MAC kind's own
ParameterSpecs and validator decide (acomms_core.mac.registry), slot tags as the node reads
them, and a warning when vehicles' TDMA slots overlap."""

from __future__ import annotations

from typing import Any

import yaml

from acomms_bringup.description.scenario_keys import MAC_KEYS
from acomms_bringup.description.scenario_parsing import (
    _NAME_TOKEN,
    _check_type,
    _Context,
    _Section,
    resolve_path,
)
from acomms_bringup.description.scenario_ros_acomms import mac_params_file_values
from acomms_bringup.description.scenario_types import MacConfig, MacSwitcherConfig, Vehicle
from acomms_core.mac.policy import split_reason
from acomms_core.mac.registry import MAC_KINDS, ros_parameter_values
from acomms_core.mac.switcher import SWITCHER_PARAMETERS, check_switcher_values
from acomms_core.ros.parameter_spec import check_values, spec_table
from acomms_core.ros_acomms_names import parameter_renames
from acomms_core.ros_acomms_params import PARAMS_FILE_NAME


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
