"""Every command of every fenced shell block in README.md and docs/ is run somewhere in CI (issue
27): by a journey test (`documented(cmd)` or `doc_block(marker)` in tests/), by this test (RUNS
below: the command as the docs show it, a shortening flag at most, an asserted outcome), by CI
itself (`scripts/test.sh`), or the block is marked `<!-- needs: ros-install -->` (run by the
GitHub workflow in a ROS container, scripts/doc_blocks.py) or `<!-- needs: hardware -->`.

Adding an unmarked block whose commands nothing runs fails here, naming page:line and command.
"""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import importlib.util
import os
import pathlib
import re
import signal
import sys

import pytest
import yaml

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "journeys"))
from journey_support import shell  # noqa: E402


def _load_doc_blocks():
    spec = importlib.util.spec_from_file_location("doc_blocks_script",
                                                  ROOT / "scripts" / "doc_blocks.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module   # dataclasses resolve the module by name
    spec.loader.exec_module(module)
    return module


doc_blocks = _load_doc_blocks()
HARDWARE_BLOCKS_MAX = 3
# What CI runs as its entry point (.ci/run and the workflow's PyPI job): the whole suite.
RUN_BY_CI = {"scripts/test.sh"}


@dataclasses.dataclass(frozen=True)
class Run:
    """Documented command lines run in order in one shell (as a user types them); `extra` is
    appended to the last (a shortening flag; `{tmp}`: the test's own directory); `expect` must
    match the output."""
    commands: tuple[str, ...]
    expect: str
    extra: str = ""
    env: tuple[tuple[str, str], ...] = ()
    timeout_s: float = 90.0


COLLECT = (("ACOMMS_TEST_WORKERS", "0"),)   # collection only: one process, no workers
RUNS = {
    "env-shell": Run(("source env.sh",
                      'python -c "import acomms_interfaces.msg as m; print(m.Packet())"'),
                     r"(?m)^acomms_interfaces\.msg\.Packet\("),
    "bootstrap": Run(("scripts/bootstrap.sh && source env.sh",),
                     r"(?m)^bootstrap: (up to date|built into install/)$"),
    "test-one-package": Run(("scripts/test.sh acomms_interfaces",),
                            r"(?m)^acomms_interfaces/test/\S+\.py::", " -- --collect-only -q",
                            COLLECT),
    "test-core-queue": Run(("scripts/test.sh acomms_core -- -k queue -x",),
                           r"(?m)^acomms_core/test/\S+::\S*queue", " --collect-only -q", COLLECT),
    "test-core-tdma": Run(("scripts/test.sh acomms_core -- -k tdma",),
                          r"(?m)^acomms_core/test/\S+::\S*tdma", " --collect-only -q", COLLECT),
    "test-sim": Run(("scripts/test.sh acomms_sim",), r"(?m)^acomms_sim/test/\S+\.py::",
                    " -- --collect-only -q", COLLECT),
    "test-journeys": Run(("scripts/test.sh tests/journeys",),
                         r"(?m)^tests/journeys/test_journey_\w+\.py::", " -- --collect-only -q",
                         COLLECT),
    # Benchmarks print tables, not verdicts: each runs as documented, shortened, and must print
    # the table the docs describe.
    "bench-codec-size": Run(("python bench/codec_size.py",),
                            r"(?m)^message +CDR B +default bits"),
    "bench-queue-ingest": Run(("python bench/queue_ingest.py",),
                              r"(?m)^median queue/bare rate ratio: [\d.]+",
                              " --per-topic 20 --repeat 1"),
    "bench-next-packet": Run(("python bench/get_next_packet_latency.py",),
                             r"(?m)^get_next_packet_data +calls +p50 ms +p99 ms", " --calls 20"),
    "bench-fragmentation": Run(("python bench/fragmentation_efficiency.py",),
                               r"(?m)^ +halves +20 +10000 .* 100%",
                               " --seeds 1 --cycles 20 --sizes 10000 --layouts halves"
                               " --png {tmp}/fragmentation.png"),
    "bench-tdma": Run(("source env.sh && python bench/tdma_utilization.py",),
                      r"TDMA channel utilization, saturated queues",
                      " --cycles 1 --queue synthetic"),
    "bench-mac": Run(("python bench/mac_comparison.py --duration 3600",),
                     r"(?m)^ +tdma +0\.5 +[\d.]+ +[\d.]+",
                     " --duration 60 --loads 0.5 --macs tdma --domain $ROS_DOMAIN_ID"
                     " --png {tmp}/mac_comparison.png"),
    "bench-sim-speed": Run(("source env.sh && python bench/sim_speed.py",),
                           r"10 modems, .* lockstep ticks", " --spreading-hours 0.02"
                           " --bellhop-minutes 0"),
}


# ---- what runs each command ------------------------------------------------------------------

def _test_files() -> list[pathlib.Path]:
    return [p for p in [*ROOT.glob("tests/**/*.py"), *ROOT.glob("acomms_*/test/**/*.py")]
            if p.name != pathlib.Path(__file__).name]


def _string_calls(path: pathlib.Path, names: set[str]) -> list[tuple[str, str]]:
    """(function, argument) of each call `name("...")` or `name(CONSTANT)` in `path`, a module-
    level string constant resolved."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    constants = {target.id: node.value.value for node in tree.body
                 if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
                 and isinstance(node.value.value, str)
                 for target in node.targets if isinstance(target, ast.Name)}
    found = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and node.func.id in names and node.args):
            continue
        argument = node.args[0]
        if isinstance(argument, ast.Constant) and isinstance(argument.value, str):
            found.append((node.func.id, argument.value))
        elif isinstance(argument, ast.Name) and argument.id in constants:
            found.append((node.func.id, constants[argument.id]))
    return found


def run_by_tests(blocks) -> dict[str, str]:
    """{normalized command: the test file that runs it} over `documented(...)` (one command) and
    `doc_block(...)` (the whole block holding the marker, as the journeys run it)."""
    covered = {}
    for path in _test_files():
        where = str(path.relative_to(ROOT))
        for function, argument in _string_calls(path, {"documented", "doc_block"}):
            if function == "documented":
                for command in doc_blocks.commands(argument):
                    covered.setdefault(command, where)
                continue
            for block in blocks:
                if argument in block.text:
                    for command in block.commands:
                        covered.setdefault(command, where)
    for name, run in RUNS.items():
        for command in run.commands:
            covered.setdefault(doc_blocks.normalize(command), f"{__file__}::RUNS[{name}]")
    for command in RUN_BY_CI:
        covered.setdefault(command, ".ci/run")
    return covered


def unexecuted(blocks, covered: dict[str, str]) -> list[str]:
    return [f"{block.where}: {command}" for block in blocks if block.needs is None
            for command in block.commands if command not in covered]


# ---- the checks --------------------------------------------------------------------------------

def test_every_shell_command_is_run_or_its_block_marked():
    blocks = doc_blocks.shell_blocks()
    assert len(blocks) > 10, "no shell blocks found: extraction broken"
    missing = unexecuted(blocks, run_by_tests(blocks))
    assert not missing, (
        "shell commands in README.md/docs/ that nothing in CI runs (add the command to a journey "
        "with documented(), to RUNS in tests/test_doc_shell_blocks.py, or mark the block "
        "<!-- needs: ros-install --> / <!-- needs: hardware --> on the line above its fence; "
        "a block that is not commands says ```text):\n" + "\n".join(missing))


def test_the_check_finds_an_unexecuted_block(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "README.md").write_text(
        "```bash\nscripts/demo.sh   # run\nmade_up_tool --flag \\\n  value &\n```\n\n"
        "<!-- needs: hardware -->\n```sh\nflash_modem /dev/ttyUSB0\n```\n\n"
        "```\nunlabelled_command\n```\n\n```text\nnot a command\n```\n")
    blocks = doc_blocks.shell_blocks(tmp_path)
    assert [(b.line, b.language, b.needs) for b in blocks] == [
        (1, "bash", None), (8, "sh", "hardware"), (12, "", None)]
    assert blocks[0].commands == ["scripts/demo.sh", "made_up_tool --flag value"]
    assert unexecuted(blocks, run_by_tests(blocks)) == [
        "README.md:1: made_up_tool --flag value", "README.md:12: unlabelled_command"]


def test_normalize_keeps_quoted_hashes_and_drops_comments():
    assert doc_blocks.normalize("echo '# not a comment'  # comment") == "echo '# not a comment'"
    assert doc_blocks.normalize("a && b &") == "a && b"
    assert doc_blocks.normalize("  a   b  ") == "a b"
    assert doc_blocks.commands("$ ls\noutput\n$ pwd", console=True) == ["ls", "pwd"]


def test_marks_are_known_and_hardware_blocks_few():
    blocks = doc_blocks.shell_blocks()
    assert {b.needs for b in blocks} <= {None, *doc_blocks.NEEDS}
    hardware = [b.where for b in blocks if b.needs == "hardware"]
    assert len(hardware) <= HARDWARE_BLOCKS_MAX, hardware
    assert any(b.needs == "ros-install" and not b.readme_block for b in blocks)


def test_generated_reference_pages_hold_no_commands():
    blocks = [b for b in doc_blocks.shell_blocks() if b.page.startswith("docs/reference/")]
    assert not blocks, [b.where for b in blocks]


def test_ci_runs_the_whole_suite_through_scripts_test_sh():
    assert re.search(r"(?m)^exec scripts/test\.sh$", (ROOT / ".ci" / "run").read_text())
    workflow = yaml.safe_load((ROOT / ".github" / "workflows" / "ci.yml").read_text())
    steps = workflow["jobs"]["readme-path"]["steps"]
    assert any(step.get("run") == "scripts/test.sh" for step in steps), steps


def test_the_workflow_runs_every_ros_install_block():
    """The ROS job runs `readme_ros_install.sh needs-ros-install`, which sets up a shell as the
    README says and runs scripts/doc_blocks.py over every marked block (the README's own
    ros-install/ros-launch blocks are steps of their own: tests/test_readme_ros_install.py)."""
    workflow = yaml.safe_load((ROOT / ".github" / "workflows" / "ci.yml").read_text())
    runs = [step.get("run", "") for step in workflow["jobs"]["ros2-colcon"]["steps"]]
    assert "scripts/readme_ros_install.sh needs-ros-install" in runs, runs
    script = (ROOT / "scripts" / "readme_ros_install.sh").read_text()
    assert "python scripts/doc_blocks.py run ros-install" in script
    marked = [b for b in doc_blocks.shell_blocks() if b.needs == "ros-install"]
    run = doc_blocks.ros_install_blocks()
    assert {b.where for b in marked} == {b.where for b in run} | {
        b.where for b in marked if b.readme_block in doc_blocks.README_BLOCKS}
    for block in run:
        for command in block.commands:
            assert command.startswith("ros2 "), f"{block.where}: {command}"
            files = re.findall(r":=([\w.-]+\.yaml)\b", command)
            config = {p.name for p in (ROOT / "acomms_bringup" / "config").glob("*.yaml")}
            assert set(files) <= set(doc_blocks.FIXTURES) | config, (block.where, files)


# A stand-in launch's idle loop: `wait` returns at once when the trapped SIGINT comes (a
# foreground `sleep` that exits normally just as the signal lands makes bash drop the signal).
STAND_IN_LOOP = "while true; do sleep 0.1 & wait $!; done"


@contextlib.contextmanager
def sigint_ignored():
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def test_launch_runner_waits_for_every_manager_then_interrupts(tmp_path):
    """scripts/doc_blocks.py's `ros2 launch` check on a stand-in launch (no ROS install here)."""
    fake = tmp_path / "fake_launch.sh"
    fake.write_text(
        "trap 'echo stopped; exit 0' INT\n"
        "echo '[INFO] [lifecycle_manager-1]: process started with pid [1]'\n"
        "echo '[INFO] [lifecycle_manager-2]: process started with pid [2]'\n"
        "echo '[lifecycle_manager-1] [INFO] [1.0] [auv.m]: startup: 4 nodes active'\n"
        "sleep 1; echo '[lifecycle_manager-2] [INFO] [2.0] [x]: startup: 4 nodes active'\n"
        f"{STAND_IN_LOOP}\n")
    with sigint_ignored():  # as in a CI script that started this with `&`
        assert doc_blocks.run_launch(f"bash {fake}", tmp_path, tmp_path / "ok.log") == []
    assert "stopped" in (tmp_path / "ok.log").read_text()
    fake.write_text("echo '[lifecycle_manager-1] [ERROR] [x]: startup failed: y'; exit 3\n")
    problems = doc_blocks.run_launch(f"bash {fake}", tmp_path, tmp_path / "bad.log")
    assert problems[0] == "exited early (3)", problems
    assert "logged '[ERROR]'" in problems and "logged 'startup failed'" in problems, problems


@pytest.mark.parametrize("name", sorted(RUNS))
def test_documented_command_runs_as_the_docs_say(name, tmp_path):
    run = RUNS[name]
    last = run.commands[-1] + run.extra.format(tmp=tmp_path)
    script = "\n".join((*run.commands[:-1], last))
    env = dict(run.env)
    result = shell(f"set -e\n{script}", timeout_s=run.timeout_s, env=env)
    output = result.stdout + result.stderr
    assert result.returncode == 0, f"{script!r} exited {result.returncode}\n{output[-3000:]}"
    assert re.search(run.expect, output), f"{script!r}: no {run.expect!r}\n{output[-3000:]}"
    for command in run.commands:
        assert any(command in block.text for block in doc_blocks.shell_blocks()), command


def test_run_ros_install_with_a_stand_in_ros2(tmp_path, monkeypatch, capsys):
    """`doc_blocks.py run ros-install` end to end with a stand-in `ros2` on PATH: every marked
    block's launch lines run from the scratch directory, whose example files exist."""
    fake = tmp_path / "ros2"
    fake.write_text(
        "#!/usr/bin/env bash\n"
        "for a in \"$@\"; do case $a in *:=*.yaml) f=${a#*:=}\n"
        "  [[ $f == package://* || -e $f ]] || { echo \"[ERROR] no $f\"; exit 1; } ;; esac; done\n"
        "[[ \" $* \" == *' sigterm_timeout:=20 '* ]] || exit 4\n"
        "trap 'exit 0' INT\n"
        "echo '[INFO] [lifecycle_manager-1]: process started with pid [1]'\n"
        "echo '[lifecycle_manager-1] [INFO] [1.0] [m]: startup: 5 nodes active'\n"
        f"{STAND_IN_LOOP}\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    with sigint_ignored():
        assert doc_blocks.main(["run", "ros-install"]) == 0, capsys.readouterr()
    ran = [line for line in capsys.readouterr().out.splitlines() if ": ros2 launch " in line]
    expected = {c for b in doc_blocks.ros_install_blocks() for c in b.commands}
    assert len(ran) == len(expected) >= 3, ran   # each distinct line once
