"""The plan of a Monte Carlo sweep (`acomms_sweep SWEEP.yaml`), without ROS.

A sweep file names a scenario, a run length, the overrides to try and the seeds:

    scenario: demo.yaml              # relative to the sweep file
    duration_seconds: 600
    grid:                            # cartesian product of every key's values
      vehicles[*].mac.kind: [tdma, aloha]
      channel.fading.model: [none, rayleigh]
    points:                          # and/or explicit override sets (block style: a
      - vehicles[name=auv].modem.tx_level: 1   # [ in a key needs quotes in {...})
    seeds: 1..10                     # or a list; default: the scenario's seed
    plot: {x: channel.fading.model, metric: delivered_ratio}   # series: one line per value

An override path is a dotted key path into the scenario's YAML data: `channel.fading.model`,
`vehicles[0].src`, `vehicles[*].mac.kind` (every vehicle), `vehicles[name=auv].mac.kind` (the
list item whose `name` is auv). Missing mapping keys are created (the scenario parser then checks
them); a path through something that is not a mapping or list, an index out of range or a name no
item has is a SweepError naming the sweep file and the path. Every point's scenario is parsed
before anything runs, so a bad value fails at once with the scenario parser's message.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import itertools
import json
import pathlib
import re
from typing import Any

import yaml

from acomms_bringup.description.scenario import ScenarioError, parse_scenario

SWEEP_KEYS = ("scenario", "duration_seconds", "grid", "points", "seeds", "plot")
_RANGE = re.compile(r"^\s*(-?\d+)\s*\.\.\s*(-?\d+)\s*$")
_STEP = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)?((?:\[[^\]]*\])*)$")
_SELECTOR = re.compile(r"\[([^\]]*)\]")


class SweepError(Exception):
    """A bad sweep file: one line naming the file and the key."""


@dataclasses.dataclass(frozen=True)
class PlotSpec:
    x: str
    metric: str = "delivered_ratio"
    series: str | None = None  # one line per value of this override


@dataclasses.dataclass(frozen=True)
class RunPoint:
    """One run of the sweep: its overrides (path -> value), its seed and its folder name."""
    index: int
    point: int  # index of the override set (the same for every seed)
    overrides: tuple[tuple[str, Any], ...]
    seed: int | None

    @property
    def name(self) -> str:
        digest = hashlib.sha1(json.dumps(self.overrides, sort_keys=True).encode()).hexdigest()
        seed = "default" if self.seed is None else self.seed
        return f"p{self.point:03d}-{digest[:6]}-seed{seed}"


@dataclasses.dataclass(frozen=True)
class Sweep:
    file: str
    scenario_path: pathlib.Path
    scenario_data: dict
    duration_seconds: float | None
    override_sets: tuple[tuple[tuple[str, Any], ...], ...]
    seeds: tuple[int | None, ...]
    plot: PlotSpec | None

    @property
    def parameters(self) -> list[str]:
        """Every override path, in first-seen order (the sweep.csv columns)."""
        seen: dict[str, None] = {}
        for overrides in self.override_sets:
            seen.update((path, None) for path, _ in overrides if path != "seed")
        return list(seen)

    def runs(self) -> list[RunPoint]:
        """Every (override set, seed) pair, override sets outermost."""
        return [RunPoint(i, p, overrides, seed) for i, (p, overrides, seed) in enumerate(
            (p, o, s) for p, o in enumerate(self.override_sets) for s in self.seeds)]

    def scenario_for(self, run: RunPoint) -> dict:
        """The scenario's YAML data with the run's overrides and seed applied."""
        data = copy.deepcopy(self.scenario_data)
        for path, value in run.overrides:
            apply_override(data, path, value, self.file)
        if run.seed is not None:
            data["seed"] = run.seed
        if self.duration_seconds is not None:
            data["duration_seconds"] = self.duration_seconds
        return data


def parse_range(value: Any, where: str) -> list:
    """A list as given, or 'a..b' (inclusive integers) expanded; anything else is one value."""
    if isinstance(value, list):
        return value
    if isinstance(value, str) and (match := _RANGE.match(value)):
        low, high = int(match[1]), int(match[2])
        if high < low:
            raise SweepError(f"{where}: empty range {value!r}")
        return list(range(low, high + 1))
    return [value]


def _steps(path: str, where: str) -> list[tuple[str, Any]]:
    """'vehicles[name=auv].mac.kind' -> [('key', 'vehicles'), ('match', ('name', 'auv')), ...]."""
    steps: list[tuple[str, Any]] = []
    for part in path.split("."):
        match = _STEP.match(part)
        if not part or not match or not (match[1] or match[2]):
            raise SweepError(f"{where}: bad override path {path!r} (e.g. channel.fading.model, "
                             "vehicles[*].mac.kind, vehicles[name=auv].mac.kind, vehicles[0].src)")
        if match[1]:
            steps.append(("key", match[1]))
        for selector in _SELECTOR.findall(match[2]):
            steps.append(_selector(selector.strip(), path, where))
    return steps


def _selector(text: str, path: str, where: str) -> tuple[str, Any]:
    if text == "*":
        return ("all", None)
    if re.fullmatch(r"-?\d+", text):
        return ("index", int(text))
    if "=" in text:
        key, _, value = text.partition("=")
        return ("match", (key.strip(), value.strip()))
    raise SweepError(f"{where}: bad selector [{text}] in {path!r} (use [*], [N] or [key=value])")


def apply_override(data: Any, path: str, value: Any, file: str = "<sweep>") -> None:
    """Set `path` to `value` in the scenario data (in place); SweepError for a bad path."""
    where = f"{file}: {path}"
    steps = _steps(path, where)
    targets = [data]
    for number, (kind, arg) in enumerate(steps):
        last = number == len(steps) - 1
        targets = [child for target in targets
                   for child in _descend(target, kind, arg, last, value, where)]


def _descend(target: Any, kind: str, arg: Any, last: bool, value: Any, where: str) -> list:
    """The children of `target` that the step selects (the value set instead when `last`)."""
    if kind == "key":
        if not isinstance(target, dict):
            raise SweepError(f"{where}: {arg!r} is a key, but the data there is a "
                             f"{type(target).__name__}, not a mapping")
        if last:
            target[arg] = copy.deepcopy(value)
            return []
        return [target.setdefault(arg, {})]
    if not isinstance(target, list):
        raise SweepError(f"{where}: a [...] selector needs a list, the data there is a "
                         f"{type(target).__name__}")
    indices = _select(target, kind, arg, where)
    if last:
        for index in indices:
            target[index] = copy.deepcopy(value)
        return []
    return [target[index] for index in indices]


def _select(items: list, kind: str, arg: Any, where: str) -> list[int]:
    if kind == "all":
        return list(range(len(items)))
    if kind == "index":
        if not -len(items) <= arg < len(items):
            raise SweepError(f"{where}: index {arg} out of range ({len(items)} items)")
        return [arg % len(items)]
    key, wanted = arg
    found = [i for i, item in enumerate(items)
             if isinstance(item, dict) and str(item.get(key)) == wanted]
    if not found:
        names = ", ".join(str(item.get(key)) for item in items if isinstance(item, dict))
        raise SweepError(f"{where}: no item with {key}={wanted} (there are: {names or 'none'})")
    return found


def _override_sets(top: dict, file: str) -> list[tuple[tuple[str, Any], ...]]:
    grid = top.get("grid") or {}
    points = top.get("points") or []
    if not isinstance(grid, dict):
        raise SweepError(f"{file}: grid: must be a mapping of override path -> list of values")
    grid = {k: v for k, v in grid.items() if k != "seed"}  # grid: seed is seeds: (_seeds)
    if not isinstance(points, list) or not all(isinstance(p, dict) for p in points):
        raise SweepError(f"{file}: points: must be a list of mappings (override path -> value)")
    keys = list(grid)
    values = [parse_range(grid[k], f"{file}: grid: {k}") for k in keys]
    for key, options in zip(keys, values, strict=True):
        if not options:
            raise SweepError(f"{file}: grid: {key}: needs at least one value")
    sets = ([tuple(zip(keys, combo, strict=True)) for combo in itertools.product(*values)]
            if keys else [])
    sets += [tuple(point.items()) for point in points]
    return sets or [()]


def _seeds(top: dict, file: str) -> tuple[int | None, ...]:
    """seeds: (or a grid key `seed`, the same thing); (None,): the scenario's seed."""
    grid = top.get("grid") if isinstance(top.get("grid"), dict) else {}
    if "seed" in grid and top.get("seeds") is not None:
        raise SweepError(f"{file}: grid: seed: the seeds are given twice (seeds: and grid: seed)")
    given = grid.get("seed", top.get("seeds"))
    if given is None:
        return (None,)
    seeds = parse_range(given, f"{file}: seeds")
    if not seeds or not all(isinstance(s, int) and not isinstance(s, bool) for s in seeds):
        raise SweepError(f"{file}: seeds: must be integers, a list or 'first..last', "
                         f"got {given!r}")
    return tuple(seeds)


def _seed_text(text: str):
    """--seeds: '1..5' as in the file, or a comma-separated list."""
    if _RANGE.match(text):
        return text
    try:
        return [int(part) for part in text.split(",")]
    except ValueError:
        raise SweepError(f"--seeds: 'first..last' or 'a,b,c' (integers), got {text!r}") from None


def _plot(top: dict, file: str) -> PlotSpec | None:
    plot = top.get("plot")
    if plot is None:
        return None
    if not isinstance(plot, dict) or "x" not in plot or set(plot) - {"x", "metric", "series"}:
        raise SweepError(f"{file}: plot: needs x (an override path or seed) and optionally "
                         "metric (a sweep.csv column, default delivered_ratio) and series "
                         "(an override: one line per value)")
    series = plot.get("series")
    return PlotSpec(str(plot["x"]), str(plot.get("metric", "delivered_ratio")),
                    None if series is None else str(series))


def parse_sweep(top: Any, file: str, base_dir: pathlib.Path) -> Sweep:
    """Validate a loaded sweep mapping; the scenario is read relative to `base_dir`."""
    if not isinstance(top, dict):
        raise SweepError(f"{file}: a sweep file is a mapping (scenario:, grid:, seeds:, ...)")
    unknown = sorted(set(top) - set(SWEEP_KEYS))
    if unknown:
        raise SweepError(f"{file}: unknown key {unknown[0]!r} (known: {', '.join(SWEEP_KEYS)})")
    if "scenario" not in top:
        raise SweepError(f"{file}: scenario: missing (the scenario file, relative to this one)")
    duration = top.get("duration_seconds")
    number = isinstance(duration, (int, float)) and not isinstance(duration, bool)
    if duration is not None and not (number and duration > 0):
        raise SweepError(f"{file}: duration_seconds: must be a number > 0, got {duration!r}")
    scenario_path = (base_dir / str(top["scenario"])).resolve()
    try:
        data = yaml.safe_load(scenario_path.read_text())
    except OSError as exc:
        raise SweepError(f"{file}: scenario: cannot read {scenario_path}: "
                         f"{exc.strerror or exc}") from None
    except yaml.YAMLError as exc:
        raise SweepError(f"{file}: scenario: {scenario_path} is not valid YAML"
                         f"{_yaml_problem(exc)}") from None
    sweep = Sweep(file, scenario_path, data, duration, tuple(_override_sets(top, file)),
                  _seeds(top, file), _plot(top, file))
    _check_plot(sweep)
    return sweep


def _check_plot(sweep: Sweep) -> None:
    if not sweep.plot:
        return
    for key in ("x", "series"):
        value = getattr(sweep.plot, key)
        if value is not None and value not in (*sweep.parameters, "seed"):
            raise SweepError(f"{sweep.file}: plot: {key}: {value!r} is not an override of this "
                             f"sweep (overrides: {', '.join(sweep.parameters) or 'none'}; "
                             "or seed)")


def _yaml_problem(exc: yaml.YAMLError) -> str:
    mark = getattr(exc, "problem_mark", None)
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
    return f"{where}: {getattr(exc, 'problem', None) or exc}"


def load_sweep(path: str | pathlib.Path, duration_s: float | None = None,
               seeds: str | None = None) -> Sweep:
    """Read a sweep file and check every run's scenario (SweepError: one line);
    `duration_s` / `seeds` ('1..5' or '1,2,3') replace the file's."""
    path = pathlib.Path(path)
    try:
        top = yaml.safe_load(path.read_text())
    except OSError as exc:
        raise SweepError(f"{path}: cannot read sweep file: {exc.strerror or exc}") from None
    except yaml.YAMLError as exc:
        raise SweepError(f"{path}: not valid YAML{_yaml_problem(exc)}") from None
    if isinstance(top, dict) and duration_s is not None:
        top["duration_seconds"] = duration_s
    if isinstance(top, dict) and seeds is not None:
        top["seeds"] = _seed_text(seeds)
    sweep = parse_sweep(top, str(path), path.resolve().parent)
    for run in sweep.runs():
        check_scenario(sweep, run)
    return sweep


def check_scenario(sweep: Sweep, run: RunPoint):
    """The run's parsed Scenario (SweepError naming the overrides when it does not parse)."""
    try:
        return parse_scenario(sweep.scenario_for(run), file=str(sweep.scenario_path),
                              base_dir=sweep.scenario_path.parent,
                              default_name=sweep.scenario_path.stem, path=sweep.scenario_path)
    except ScenarioError as exc:
        label = ", ".join(f"{k}={v}" for k, v in run.overrides) or "no overrides"
        raise SweepError(f"{sweep.file}: point {run.point} ({label}): {exc}") from None
