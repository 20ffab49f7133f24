"""SIGINT / SIGTERM in a node process: noted, never a KeyboardInterrupt (stdlib only).

`run_node` installs `quiet_interrupts()` before rclpy.init; rclpy's handler, installed on top of
it, shuts the context down and then calls it. A node process started by launch can be
interrupted earlier, while it still imports rclpy and its node module (seconds on a busy
computer): each acomms package's `__init__` calls `quiet_if_node_process()`, which installs the
same handler at once when this process is an acomms node executable (`.../lib/acomms_<pkg>/
<name>`, as `ros2 run` and launch start it); run_node then sees the signal and exits 0. Only the
console-script wrapper's own first imports (before the package is imported) stay uncovered.
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


def quiet_if_node_process() -> None:
    """In a node executable's process only (not in tests, tools or library use): quiet now."""
    if sys.argv and sys.argv[0] and is_node_executable(sys.argv[0]) and (
            threading.current_thread() is threading.main_thread()):
        quiet_interrupts()
