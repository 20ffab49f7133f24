"""acomms_core.ros.interrupts: which processes get the quiet SIGINT handler at import time;
StopSignals for commands that stop at a safe point (acomms_run, acomms_participant)."""

import subprocess
import sys

import pytest

from acomms_core.ros import interrupts
from acomms_core.ros.interrupts import is_node_executable


@pytest.mark.parametrize("argv0, node", [
    ("/ws/install/acomms_core/lib/acomms_core/tdma_node", True),
    ("/ws/install/acomms_bringup/lib/acomms_bringup/lifecycle_manager", True),
    ("/ws/install/acomms_bringup/lib/acomms_bringup/cola2_vehicle_bridge", True),
    ("/ws/install/acomms_bringup/lib/acomms_bringup/acomms_run", False),  # a CLI: Ctrl-C stops
    ("/ws/install/acomms_core/lib/acomms_core/acomms_codec_check", False),
    ("/usr/bin/tdma_node", False),
    ("/ws/.venv/bin/pytest", False),
    ("", False),
])
def test_node_executables_only(argv0, node):
    assert is_node_executable(argv0) is node


def test_importing_the_packages_leaves_sigint_alone_outside_node_processes():
    # compared with the handler before the import (a background job starts with SIGINT ignored)
    code = ("import signal; before = signal.getsignal(signal.SIGINT); "
            "import acomms_core, acomms_sim, acomms_driver, acomms_bringup; "
            "print(signal.getsignal(signal.SIGINT) is before)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=60)
    assert result.stdout.strip() == "True", result.stderr


def test_a_node_process_is_quiet_from_its_package_import_on():
    # argv[0] as launch starts a node: the handler is in place right after `import acomms_core`
    code = ("import sys; sys.argv[0] = '/ws/install/acomms_core/lib/acomms_core/tdma_node'; "
            "import signal, acomms_core; "
            "from acomms_core.ros import interrupts; "
            "signal.raise_signal(signal.SIGINT); "
            "print(interrupts.quiet_interrupts() == [signal.SIGINT])")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0 and result.stdout.strip() == "True", result.stderr


@pytest.mark.parametrize("argv0, cli", [
    ("/ws/install/acomms_bringup/lib/acomms_bringup/acomms_run", True),
    ("/ws/install/acomms_bringup/lib/acomms_bringup/acomms_participant", True),
    ("/ws/install/acomms_core/lib/acomms_core/tdma_node", False),
    ("/usr/bin/acomms_run", False),
    ("", False),
])
def test_cli_executables_only(argv0, cli):
    assert interrupts.is_cli_executable(argv0) is cli


STOP_SIGNALS = """
import os, signal, sys
from acomms_core.ros.interrupts import Interrupted, StopSignals
before = signal.getsignal(signal.SIGTERM)
with StopSignals("prog") as stop:
    stop.check()  # nothing yet: no exception
    signal.raise_signal(signal.SIGTERM)
    try:
        stop.check()
    except Interrupted as exc:
        print(exc.name, exc.exit_status, flush=True)
    if sys.argv[1] == "twice":
        signal.raise_signal(signal.SIGINT)
        print("still here", flush=True)
print(signal.getsignal(signal.SIGTERM) is before, flush=True)
"""


def test_a_stop_signal_is_noted_until_the_safe_point_and_the_handlers_come_back():
    result = subprocess.run([sys.executable, "-c", STOP_SIGNALS, "once"], capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["SIGTERM", "143", "True"]


def test_a_second_stop_signal_exits_at_once_with_one_line():
    result = subprocess.run([sys.executable, "-c", STOP_SIGNALS, "twice"], capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 130  # 128 + SIGINT, the second signal
    assert result.stdout.split() == ["SIGTERM", "143"]
    assert result.stderr == "prog: SIGINT again: exiting now (outputs may be incomplete)\n"


def test_a_cli_process_notes_stop_signals_from_its_package_import_on():
    code = ("import sys; sys.argv[0] = '/ws/install/acomms_bringup/lib/acomms_bringup/acomms_run'; "
            "import signal, acomms_core; "
            "from acomms_core.ros import interrupts; "
            "signal.raise_signal(signal.SIGTERM); "
            "print(interrupts.process_stop_signals('x').received == [signal.SIGTERM])")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0 and result.stdout.strip() == "True", result.stderr
