"""Shared tools for journey tests: run a documented command the way a user types it.

A journey test names the command exactly as README.md or docs/ show it (`documented()` fails
when the docs no longer contain it, so the test and the docs cannot drift apart), runs it in a
shell inside the workspace (`source env.sh` done by scripts/test.sh, so every executable runs by
name) and asserts the documented outcome on what the command printed and wrote. Shortening flags
(`--duration`, `--warp max`, `--out DIR`) may be appended where the docs offer them.

Every wait has a timeout: a command that hangs fails its test, it never hangs CI.
"""

from __future__ import annotations

import contextlib
import json
import os
import pathlib
import re
import signal
import subprocess
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
DOC_FILES = (ROOT / "README.md", *sorted((ROOT / "docs").glob("**/*.md")))
DEFAULT_TIMEOUT_S = 100.0


def documented(command: str) -> str:
    """`command`, after checking that README.md or a docs/ page shows it verbatim."""
    for path in DOC_FILES:
        if path.exists() and command in path.read_text(encoding="utf-8"):
            return command
    raise AssertionError(f"not in README.md or docs/ any more: {command!r}")


def doc_numbers(pattern: str) -> tuple[float, ...]:
    """The numbers a docs sentence states: the groups of `pattern` (a regex over the text of
    README.md and docs/, whitespace in the pattern matching any run of spaces and line breaks),
    as floats ("3,601" reads 3601). A test compares what the program printed with these, so the
    sentence and the test cannot drift apart; fails when no page states the sentence any more."""
    regex = re.compile(re.sub(r"(\\ |\s)+", r"\\s+", pattern))
    for path in DOC_FILES:
        if path.exists() and "reference" not in path.relative_to(ROOT).parts:
            match = regex.search(path.read_text(encoding="utf-8"))
            if match:
                return tuple(float(group.replace(",", "")) for group in match.groups())
    raise AssertionError(f"no sentence of README.md or docs/ matches {pattern!r} any more")


def doc_number(pattern: str) -> float:
    """The one number a docs sentence states (`doc_numbers` with one group)."""
    (value,) = doc_numbers(pattern)
    return value


def shell(command: str, timeout_s: float = DEFAULT_TIMEOUT_S, cwd: pathlib.Path | str = ROOT,
          env: dict | None = None, check: bool = False) -> subprocess.CompletedProcess:
    """Run `command` with bash in `cwd` (the repository root by default); output as text."""
    result = subprocess.run(["bash", "-c", command], cwd=str(cwd), capture_output=True,
                            text=True, timeout=timeout_s, env=_env(env),
                            stdin=subprocess.DEVNULL)
    if check:
        assert result.returncode == 0, _describe(command, result)
    return result


def _env(extra: dict | None) -> dict:
    env = dict(os.environ)
    env.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    env.update(extra or {})
    return env


def _describe(command: str, result) -> str:
    return (f"{command!r} exited {result.returncode}\n--- stdout\n{result.stdout[-4000:]}"
            f"\n--- stderr\n{result.stderr[-4000:]}")


class Background:
    """A command running in the background (a server, a running simulation) for one journey."""

    def __init__(self, command: str, cwd: pathlib.Path | str = ROOT, env: dict | None = None,
                 log_path: pathlib.Path | None = None):
        self.command = command
        self._log = open(log_path, "w+") if log_path else None  # noqa: SIM115 (closed in stop)
        self.process = subprocess.Popen(
            ["bash", "-c", f"exec {command}"], cwd=str(cwd), env=_env(env),
            stdin=subprocess.DEVNULL, stdout=self._log or subprocess.PIPE,
            stderr=subprocess.STDOUT, text=True, start_new_session=True)
        self.output = ""

    def wait_for_output(self, text: str, timeout_s: float = 30.0) -> bool:
        """True once `text` appears in the command's output (needs `log_path`)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self._log is not None:
                self._log.seek(0)
                if text in self._log.read():
                    return True
            if self.process.poll() is not None:
                return False
            time.sleep(0.1)
        return False

    def stop(self, sig: int = signal.SIGINT, timeout_s: float = 30.0) -> int:
        """Send `sig` to the command's process group, wait for it to end; its exit status."""
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, sig)
            try:
                self.process.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=10)
        if self._log is not None:
            self._log.seek(0)
            self.output = self._log.read()
            self._log.close()
            self._log = None
        elif self.process.stdout is not None:
            self.output = self.process.stdout.read()
        return self.process.returncode

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def run_summary(out_dir: pathlib.Path) -> dict:
    """summary.json of a finished `acomms_run ... --out out_dir`."""
    return json.loads((pathlib.Path(out_dir) / "summary.json").read_text(encoding="utf-8"))
