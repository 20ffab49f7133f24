"""One run of a sweep, in a process of its own (started by `sweep_exec.run_job`):

    python -m acomms_bringup.run.sweep_worker RUN_DIR SCENARIO_DIR [--mcap]

runs RUN_DIR/scenario.yaml (the swept scenario with the run's overrides, seed and duration) as
`acomms_run --warp max --quiet --no-mcap --out RUN_DIR` would, its relative paths (codec
configs, files) resolved against SCENARIO_DIR, the directory of the swept scenario.
"""

from __future__ import annotations

import functools
import pathlib
import sys

import yaml

from acomms_bringup.description.scenario import ScenarioError, parse_scenario
from acomms_bringup.run import cli


def load_relative_to(base_dir: pathlib.Path, path: str):
    """The Scenario of `path`, its relative paths resolved against `base_dir`."""
    path = pathlib.Path(path)
    try:
        data = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise ScenarioError(str(path), "", f"cannot read: {exc}") from None
    return parse_scenario(data, file=str(path), base_dir=base_dir, default_name=path.stem,
                          path=path)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) not in (2, 3) or (len(argv) == 3 and argv[2] != "--mcap"):
        print("usage: python -m acomms_bringup.run.sweep_worker RUN_DIR SCENARIO_DIR [--mcap]",
              file=sys.stderr)
        return 2
    run_dir, base_dir = pathlib.Path(argv[0]), pathlib.Path(argv[1])
    arguments = [str(run_dir / "scenario.yaml"), "--warp", "max", "--quiet", "--out",
                 str(run_dir), *([] if len(argv) == 3 else ["--no-mcap"])]
    return cli.main(arguments, load=functools.partial(load_relative_to, base_dir))


if __name__ == "__main__":
    sys.exit(main())
