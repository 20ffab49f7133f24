"""A ros_acomms (ROS 1) parameter file, read as given (ROS-free).

ros_acomms users keep a node's private parameters in a flat YAML file that ROS 1 loads with
`<rosparam command="load" file="tdma.yaml"/>` inside the node tag:

    num_slots: 4
    active_slots: '0,2'
    slot_duration_seconds: 15          # integers where ROS 2 wants a double
    guard_time_seconds: 2
    wait_for_services_timeout_sec: 10  # renamed here: service_timeout_seconds
    publish_private_status: true       # not supported here: dropped with a note

ROS 2 cannot read that file (`--params-file` wants `<node>: {ros__parameters: ...}`), so the
MAC nodes take it as the parameter `ros_acomms_params_file` (and a scenario `mac:` section as
the key of that name, relative to the scenario). `read_params_file` turns it into our parameter
values, as the node's specs want them:
- ros_acomms names with a counterpart here are renamed (acomms_core.ros_acomms_names), with a
  note; names without one (`unsupported_parameters`) are dropped with a note saying why;
- integers become floats where the parameter is a double; a YAML list or mapping given for a
  string parameter (`slot_tags`) becomes its YAML text; a YAML timestamp (an unquoted
  `cycle_start_time`) its ISO 8601 text; `null` means "the default" and is dropped;
- any other name is refused (ValueError naming the file and the closest name).
Values given directly (node parameters, scenario keys) win over the file's.
"""

from __future__ import annotations

import datetime
import os
from collections.abc import Mapping
from typing import Any

import yaml

from acomms_core.ros.parameter_spec import ParameterSpec, spec_table
from acomms_core.ros_acomms_names import (
    did_you_mean,
    parameter_renames,
    rename_parameters,
    unsupported_parameters,
)

PARAMS_FILE_NAME = "ros_acomms_params_file"
PARAMS_FILE_PARAMETER = ParameterSpec(
    PARAMS_FILE_NAME, "", "A ros_acomms (ROS 1) parameter file of this node, a flat YAML "
    "mapping, read as given when the node starts: ros_acomms names are renamed and "
    "unsupported ones dropped, each with a note in the log; parameters given directly win; "
    "empty: none", parameter_type="string", read_only=True)


def as_parameter_value(spec: ParameterSpec, value: Any) -> Any:
    """value as the spec's parameter type wants it (ROS 1 YAML is loosely typed)."""
    if spec.dynamic_typing:
        if isinstance(value, (datetime.date, datetime.datetime)):
            return value.isoformat()
        return value
    if isinstance(spec.default, float) and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if isinstance(spec.default, str) and isinstance(value, (datetime.date, datetime.datetime)):
        return value.isoformat()
    if isinstance(spec.default, str) and isinstance(value, (list, dict)):
        return yaml.safe_dump(value, default_flow_style=True, width=1_000_000).strip()
    return value


def _is_ros2_params_file(data: Mapping) -> bool:
    return "ros__parameters" in data or any(
        isinstance(value, Mapping) and _is_ros2_params_file(value) for value in data.values())


def params_from_mapping(data: Any, specs, where: str,
                        executable: str | None = None) -> tuple[dict[str, Any], list[str]]:
    """({our name: value}, notes) from a ros_acomms parameter mapping; ValueError if a name is
    neither ours nor a ros_acomms one."""
    if not isinstance(data, Mapping):
        raise ValueError(f"{where}: a ros_acomms parameter file is a YAML mapping of parameter "
                         f"names to values, got {type(data).__name__}")
    if _is_ros2_params_file(data):
        raise ValueError(f"{where}: this is a ROS 2 parameters file: give it with --params-file")
    table = spec_table(specs)
    renames = {old: new for old, new in parameter_renames(executable).items()
               if new in table and old not in table}
    values, notes = rename_parameters({str(k): v for k, v in data.items()}, renames, where)
    unsupported = unsupported_parameters(executable) if executable else unsupported_parameters()
    result = {}
    for name, value in values.items():
        if name in unsupported and name not in table:
            notes.append(f"{where}: '{name}' (ros_acomms) is not supported here and is "
                         f"ignored: {unsupported[name]}")
        elif name not in table or name == PARAMS_FILE_NAME:
            raise ValueError(f"{where}: unknown parameter '{name}'"
                             f"{did_you_mean(name, [*table, *renames])}")
        elif value is not None:
            result[name] = as_parameter_value(table[name], value)
    return result, notes


def read_params_file(path: str, specs, executable: str | None = None
                     ) -> tuple[dict[str, Any], list[str]]:
    """The file's values as our parameters, and the notes (see the module docstring)."""
    path = os.path.expanduser(path)
    try:
        with open(path, encoding="utf-8") as stream:
            data = yaml.safe_load(stream)
    except OSError as exc:
        raise ValueError(f"{PARAMS_FILE_NAME} {path}: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise ValueError(f"{PARAMS_FILE_NAME} {path}: not valid YAML ({exc})") from None
    return params_from_mapping(data or {}, specs, path, executable)
