"""SIGINT / SIGTERM in a node process: noted, never a KeyboardInterrupt (stdlib only).

`run_node` installs `quiet_interrupts()` before rclpy.init; rclpy's handler, installed on top of
it, shuts the context down and then calls it. A node process started by launch can be
interrupted earlier, while it still imports rclpy and its node module (seconds on a busy
computer): each acomms package's `__init__` calls `quiet_if_node_process()`, which installs the
same handler at once when this process is an acomms node executable (`.../lib/acomms_<pkg>/
<name>`, as `ros2 run` and launch start it); run_node then sees the signal and exits 0. Only the
console-script wrapper's own first imports (before the package is imported) stay uncovered.

Commands that write results when stopped (`acomms_run`, `acomms_participant`: `CLI_EXECUTABLES`)
use `StopSignals` instead: SIGINT and SIGTERM alike are noted, and the command ends at its next
safe point (`check()` raises `Interrupted`), so what ran is still shut down and written; a second
signal exits at once (status 128 + signal number, outputs possibly incomplete). The same early
install at package import covers their imports.
"""

from __future__ import annotations

import os
import pathlib
import signal
import sys
import threading

SHUTDOWN_GRACE_S = 15.0  # wall seconds a node may take to stop after SIGINT / SIGTERM
# Executables that run a node through run_node besides the `*_node` / `*_bridge` ones.
OTHER_NODE_EXECUTABLES = ("lifecycle_manager", "remote_service_caller", "remote_service_server",
                          "wec_standin_buoy", "wec_standin_operator", "acomms_recorder")
CLI_EXECUTABLES = ("acomms_run", "acomms_participant")  # stop at a safe point: StopSignals
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
_received: list[int] = []
_installed: list[bool] = []


def quiet_interrupts() -> list[int]:
    """Install (once) a SIGINT/SIGTERM handler that only notes the signal in the returned list
    and starts a watchdog (a shutdown that hangs must not keep the process alive)."""
    if not _installed:
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, _on_signal)
        _installed.append(True)
    return _received


def _on_signal(number, _frame) -> None:
    _received.append(number)
    if len(_received) == 1:
        watchdog = threading.Timer(SHUTDOWN_GRACE_S, _exit_after_grace)
        watchdog.daemon = True
        watchdog.start()


def _exit_after_grace() -> None:
    print(f"[WARN] shutdown did not finish within {SHUTDOWN_GRACE_S:g} s of the signal; "
          "exiting", file=sys.stderr, flush=True)
    os._exit(0)


def is_node_executable(argv0: str) -> bool:
    path = pathlib.PurePath(argv0)
    return (path.parent.name.startswith("acomms_") and path.parent.parent.name == "lib"
            and (path.name.endswith(("_node", "_bridge")) or path.name in OTHER_NODE_EXECUTABLES))


def is_cli_executable(argv0: str) -> bool:
    path = pathlib.PurePath(argv0)
    return (path.parent.name.startswith("acomms_") and path.parent.parent.name == "lib"
            and path.name in CLI_EXECUTABLES)


def quiet_if_node_process() -> None:
    """In a node executable's process only (not in tests, tools or library use): quiet now; in
    a CLI_EXECUTABLES process: note stop signals from now on (`process_stop_signals`)."""
    if not (sys.argv and sys.argv[0]) or (
            threading.current_thread() is not threading.main_thread()):
        return
    if is_node_executable(sys.argv[0]):
        quiet_interrupts()
    elif is_cli_executable(sys.argv[0]) and not _early_stop_signals:
        _early_stop_signals.append(StopSignals().install())


class Interrupted(Exception):
    """A stop signal reached a command's safe point; `exit_status` is 128 + the signal number
    (what a shell reports for a process the signal killed: 130 SIGINT, 143 SIGTERM)."""

    def __init__(self, signum: int):
        self.signum = int(signum)
        self.name = signal.Signals(self.signum).name
        self.exit_status = 128 + self.signum
        super().__init__(self.name)


class StopSignals:
    """SIGINT/SIGTERM noted for a command that stops at its next safe point (`check()`); a
    second signal exits at once with one line. `install()` (main thread; idempotent) and
    `restore()` (the handlers from before the install) or use it as a context manager."""

    def __init__(self, program: str | None = None):
        self.program = program or pathlib.PurePath(sys.argv[0] if sys.argv else "").name
        self.received: list[int] = []
        self._previous: dict[int, object] = {}

    def install(self) -> StopSignals:
        """Handle SIGINT/SIGTERM (only the main thread can; elsewhere nothing is installed)."""
        if not self._previous and threading.current_thread() is threading.main_thread():
            for signum in STOP_SIGNALS:
                self._previous[signum] = signal.signal(signum, self._on_signal)
        return self

    def restore(self) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
        self._previous.clear()

    def __enter__(self) -> StopSignals:
        return self.install()

    def __exit__(self, *_exc) -> None:
        self.restore()

    @property
    def requested(self) -> bool:
        return bool(self.received)

    def check(self) -> None:
        """Interrupted once a stop signal came (call it where stopping is safe)."""
        if self.received:
            raise Interrupted(self.received[0])

    def _on_signal(self, number, _frame) -> None:
        self.received.append(number)
        if len(self.received) > 1:
            name = signal.Signals(number).name
            print(f"{self.program}: {name} again: exiting now (outputs may be incomplete)",
                  file=sys.stderr, flush=True)
            os._exit(128 + number)


_early_stop_signals: list[StopSignals] = []


def process_stop_signals(program: str) -> StopSignals:
    """The StopSignals a command's main() uses: in a CLI_EXECUTABLES process the one its package
    import installed (signals during the imports count), elsewhere (tests) a new one."""
    return _early_stop_signals[0] if _early_stop_signals else StopSignals(program)
