"""A scenario `mac:` section may name a ros_acomms (ROS 1) TDMA parameter file as it is
(`ros_acomms_params_file`, relative to the scenario): its values are read with the node's own
reader (acomms_core.ros_acomms_params) under the section's keys, which win. Renamed and
unsupported ros_acomms names become notes (Scenario.warnings); an unknown name or an unreadable
file is refused naming the key."""

from __future__ import annotations

import pathlib
from typing import Any

from acomms_core.ros_acomms_params import PARAMS_FILE_NAME, read_params_file


def mac_params_file_values(ctx, data: dict, key_path: str, specs: dict) -> dict[str, Any]:
    """data (a `mac` section) with the file's values added where the section has none; the
    file key itself removed. ctx: the loader's context (error, notes, base_dir)."""
    spec = data[PARAMS_FILE_NAME]
    if not isinstance(spec, str):
        raise ctx.error(key_path, f"expected a file name, got {spec!r}")
    path = pathlib.Path(spec).expanduser()
    path = path if path.is_absolute() else pathlib.Path(ctx.base_dir) / path
    try:
        values, notes = read_params_file(str(path), tuple(specs.values()))
    except ValueError as exc:
        raise ctx.error(key_path, str(exc)) from None
    ctx.notes.extend(notes)
    given = {key: value for key, value in data.items() if key != PARAMS_FILE_NAME}
    return {**values, **given}
