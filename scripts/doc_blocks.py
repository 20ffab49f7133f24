#!/usr/bin/env python3
"""The fenced shell blocks of README.md and docs/, and the runner of those that need a full ROS 2
install (the GitHub workflow runs it; tests/test_doc_shell_blocks.py checks that every other
block's commands are run by a journey test or by that test itself).

    python scripts/doc_blocks.py list               # every shell block: page:line, mark, commands
    python scripts/doc_blocks.py run ros-install    # run every `<!-- needs: ros-install -->` block

A block is a shell block when its fence says bash, sh, shell or console, or says nothing (a block
that is not commands says `text`, `yaml`, ...). An HTML comment on the line just above the fence
marks what a block needs that CI's PyPI path does not have:
`<!-- needs: ros-install -->` (a full ROS 2 install with launch and ros2cli: run here, in the
GitHub workflow's ROS container) or `<!-- needs: hardware -->` (a real modem or serial port:
not run anywhere). The README's own ROS-install blocks (between `<!-- ros-install:begin -->` and
`<!-- ros-launch:end -->`) run through scripts/readme_ros_install.sh, so `run` leaves them out.

`run ros-install` runs the other marked blocks from a scratch directory holding a copy of
acomms_bringup/config/ and the example files the docs name (FIXTURES), after the README's
per-shell set-up (readme_ros_install.sh needs-ros-install does that). A `ros2 launch` line runs
(with `sigterm_timeout:=20` appended) until every lifecycle manager it started logs `startup: N
nodes active`, then gets SIGINT and must exit 0 with no error logged; any other line must exit 0.
Exit status 0 when every block passed.
"""

from __future__ import annotations

import dataclasses
import os
import pathlib
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
SHELL_LANGUAGES = {"bash", "sh", "shell", "console", ""}
NEEDS = ("ros-install", "hardware")
MARK = re.compile(r"^<!--\s*needs:\s*([a-z-]+)\s*-->$")
FENCE = re.compile(r"^(\s*)```(\S*)")
# Blocks scripts/readme_ros_install.sh runs (each a step of the workflow).
README_BLOCKS = ("ros-install", "ros-launch")
# Example files the marked blocks name, made in the scratch directory: {name: copy of}.
FIXTURES = {"my_vehicle.yaml": "vehicle_params.yaml", "my_network.yaml": "demo.yaml"}
LAUNCH_TIMEOUT_S = 180.0
# Appended to each `ros2 launch` line, as scripts/launch_check.py does: stopping a network's
# processes at once on 2 busy cores can take longer than launch's default 5 s before SIGTERM.
LAUNCH_SIGTERM_TIMEOUT = " sigterm_timeout:=20"
STOP_TIMEOUT_S = 60.0
BAD_OUTPUT = ("[ERROR]", "Traceback", "process has died", "startup failed")


@dataclasses.dataclass(frozen=True)
class Block:
    page: str            # relative to the repository root
    line: int            # of the opening fence, 1-based
    language: str
    needs: str | None    # the `<!-- needs: ... -->` mark, if any
    readme_block: str | None   # the README's ros-install/ros-launch block it is, if any
    text: str

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"

    @property
    def commands(self) -> list[str]:
        return commands(self.text, console=self.language == "console")


def doc_pages(root: pathlib.Path = ROOT) -> list[pathlib.Path]:
    """README.md and docs/**/*.md; docs/reference/ is generated from the code and holds no
    commands (tests/test_doc_shell_blocks.py checks that)."""
    return [root / "README.md", *sorted((root / "docs").glob("**/*.md"))]


def blocks(path: pathlib.Path, root: pathlib.Path = ROOT) -> list[Block]:
    """Every fenced block of `path` (shell or not)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    found, index, region = [], 0, None
    while index < len(lines):
        line = lines[index]
        region = _region(line, region)
        opening = FENCE.match(line)
        if not opening:
            index += 1
            continue
        end = index + 1
        while end < len(lines) and not lines[end].strip().startswith("```"):
            end += 1
        above = lines[index - 1].strip() if index else ""
        mark = MARK.match(above)
        found.append(Block(str(path.relative_to(root)), index + 1, opening.group(2),
                           mark.group(1) if mark else _readme_mark(above, region),
                           region, "\n".join(lines[index + 1:end])))
        index = end + 1
    return found


def _region(line: str, region: str | None) -> str | None:
    for name in README_BLOCKS:
        if line.strip() == f"<!-- {name}:begin -->":
            return name
        if line.strip() == f"<!-- {name}:end -->":
            return None
    return region


def _readme_mark(above: str, region: str | None) -> str | None:
    """The README's begin markers stand for `needs: ros-install` (a ROS install is what they
    need, and the workflow runs them)."""
    return "ros-install" if region and above == f"<!-- {region}:begin -->" else None


def shell_blocks(root: pathlib.Path = ROOT) -> list[Block]:
    return [b for page in doc_pages(root) for b in blocks(page, root)
            if b.language in SHELL_LANGUAGES]


def commands(text: str, console: bool = False) -> list[str]:
    """The command lines of a shell block, normalized: continuation lines joined, comments and
    a trailing `&` dropped, runs of blanks made one. In a console block only `$ ` lines count."""
    joined, pending = [], ""
    for raw in text.splitlines():
        if console:
            if not raw.startswith("$ "):
                continue
            raw = raw[2:]
        if raw.rstrip().endswith("\\"):
            pending += raw.rstrip()[:-1] + " "
            continue
        joined.append(pending + raw)
        pending = ""
    if pending:
        joined.append(pending)
    return [c for c in (normalize(line) for line in joined) if c]


def normalize(line: str) -> str:
    """`line` without its comment and a trailing `&`, blanks collapsed (quotes respected)."""
    quote, previous = None, " "
    for position, char in enumerate(line):
        if quote:
            quote = None if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#" and previous.isspace():
            line = line[:position]
            break
        previous = char
    line = " ".join(line.split())
    return line[:-1].rstrip() if line.endswith("&") and not line.endswith("&&") else line


# ---- running the `needs: ros-install` blocks (GitHub workflow, ROS container) ----------------

def ros_install_blocks(root: pathlib.Path = ROOT) -> list[Block]:
    """The marked blocks `run ros-install` runs (the README's own run in their own steps)."""
    return [b for b in shell_blocks(root) if b.needs == "ros-install" and not b.readme_block]


def scratch_directory() -> pathlib.Path:
    """A directory with acomms_bringup/config/ copied in and the FIXTURES made from it."""
    workdir = pathlib.Path(tempfile.mkdtemp(prefix="acomms_doc_blocks_"))
    shutil.copytree(ROOT / "acomms_bringup" / "config", workdir, dirs_exist_ok=True)
    for name, original in FIXTURES.items():
        shutil.copy(workdir / original, workdir / name)
    return workdir


# Ctrl-C must reach the launch even when this process ignores SIGINT (started with `&` from a
# script or under nohup): an ignored signal stays ignored across exec, and a shell cannot trap it.
WITH_DEFAULT_SIGINT = (sys.executable, "-c", "import os, signal, sys; "
                       "signal.signal(signal.SIGINT, signal.SIG_DFL); "
                       "os.execvp(sys.argv[1], sys.argv[1:])")


def run_launch(command: str, cwd: pathlib.Path, log: pathlib.Path) -> list[str]:
    """Run a `ros2 launch` line until every lifecycle manager it started reports its nodes
    active, then Ctrl-C it; the problems (empty when it passed)."""
    with open(log, "w+") as output:
        process = subprocess.Popen([*WITH_DEFAULT_SIGINT, "bash", "-c", f"exec {command}"],
                                   cwd=cwd, stdout=output,
                                   stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                   start_new_session=True)
        deadline, text, managers = time.monotonic() + LAUNCH_TIMEOUT_S, "", 0
        while time.monotonic() < deadline and process.poll() is None:
            time.sleep(1.0)
            output.seek(0)
            text = output.read()
            managers = len(set(re.findall(r"\[(lifecycle_manager[^\]]*)\]: process started",
                                          text)))
            if managers and text.count(" nodes active") >= managers:
                break
        problems = [] if process.poll() is None else [f"exited early ({process.returncode})"]
        if not problems and not (managers and text.count(" nodes active") >= managers):
            problems.append(f"not every lifecycle manager active in {LAUNCH_TIMEOUT_S:.0f} s")
        status = _interrupt(process)
        output.seek(0)
        text = output.read()
    if status != 0:
        problems.append(f"exit status {status} after Ctrl-C")
    problems += [f"logged {bad!r}" for bad in BAD_OUTPUT if bad in text]
    return problems


def _interrupt(process: subprocess.Popen) -> int:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGINT)
        try:
            process.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    return process.returncode


def run_block(block: Block, workdir: pathlib.Path, done: set[str]) -> list[str]:
    """Run each command of `block` not in `done` (the same line on two pages runs once)."""
    problems = []
    for number, command in enumerate(block.commands):
        if command in done:
            continue
        done.add(command)
        log = workdir / f"{block.page.replace('/', '_')}_{block.line}_{number}.log"
        print(f"doc_blocks: {block.where}: {command}", flush=True)
        if command.startswith("ros2 launch "):
            found = run_launch(command + LAUNCH_SIGTERM_TIMEOUT, workdir, log)
        else:
            result = subprocess.run(["bash", "-c", command], cwd=workdir, capture_output=True,
                                    text=True, timeout=LAUNCH_TIMEOUT_S)
            log.write_text(result.stdout + result.stderr)
            found = [f"exit status {result.returncode}"] if result.returncode else []
        if found:
            print(log.read_text()[-4000:], file=sys.stderr)
            problems += [f"{block.where}: {command}: {p}" for p in found]
    return problems


def main(argv: list[str]) -> int:
    if argv[:1] == ["list"]:
        for block in shell_blocks():
            print(f"{block.where} [{block.needs or '-'}]")
            for command in block.commands:
                print(f"    {command}")
        return 0
    if argv[:2] == ["run", "ros-install"]:
        workdir = scratch_directory()
        done: set[str] = set()
        problems = [p for block in ros_install_blocks() for p in run_block(block, workdir, done)]
        for problem in problems:
            print(f"doc_blocks: {problem}", file=sys.stderr)
        if not problems:
            shutil.rmtree(workdir, ignore_errors=True)   # kept with its logs when one failed
        return 1 if problems else 0
    print("usage: doc_blocks.py list | run ros-install", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
