"""docs/reference/scenario.md: the scenario schema, from the loader's own key tables
(acomms_bringup.description.scenario_keys: the loader reads every key through them)."""

from __future__ import annotations

from reference_pages.markdown import code, number, table, value_range

_TYPE_NAMES = {int: "integer", float: "number", str: "string", bool: "bool", list: "list",
               dict: "mapping"}


def _default(key) -> str:
    from acomms_bringup.description.scenario_keys import REQUIRED

    if key.default is REQUIRED:
        return "required"
    if key.default_text:
        return key.default_text
    if key.default is None:
        return "not given"
    return code(key.default)


def _range(key) -> str:
    if key.exclusive_minimum and key.maximum is None:
        return f"> {number(key.minimum)}"
    text = value_range(key.minimum, key.maximum)
    if key.exclusive_minimum:
        text = text.replace(" .. ", " (exclusive) .. ", 1)
    return text


def _sections(path: str, keys, out: list[str]) -> None:
    """One table per mapping, depth first, in the tables' order (the loader's)."""
    rows = []
    for key in keys:
        kind = " or ".join(_TYPE_NAMES[k] for k in key.kinds)
        if key.keys:
            child = f"{path}.{key.name}" if path else key.name
            if list in key.kinds:
                child += "[]"
            kind += f" (see `{child}`)"
        choices = ", ".join(f"`{c}`" for c in key.choices) if key.choices else ""
        rows.append((f"`{key.name}`", kind, _default(key), _range(key) or choices,
                     key.description))
    out.append(f"## `{path or '(top level)'}`\n")
    out.append(table(("key", "type", "default", "range / choices", "description"), rows))
    for key in keys:
        if key.keys:
            child = f"{path}.{key.name}" if path else key.name
            _sections(child + ("[]" if list in key.kinds else ""), key.keys, out)


def scenario_page() -> str:
    from acomms_bringup.description.scenario_keys import SCENARIO_KEYS

    out = ["# Scenario file reference\n",
           "The keys of a scenario YAML file (`acomms_run`, `acomms_check_scenario`, the launch "
           "files), generated from the tables the loader reads them through "
           "(`acomms_bringup.description.scenario_keys`). Unknown keys are errors. Checks "
           "that involve several keys are the loader's (`acomms_bringup.description.scenario`)"
           "; a MAC's, mac_switcher's, bridge's and node's own parameters are in "
           "[nodes.md](nodes.md), the kinds in [registries.md](registries.md). `[]` marks the "
           "items of a list.\n"]
    _sections("", SCENARIO_KEYS, out)
    return "\n".join(out)
