"""acomms_core.ros.interrupts: which processes get the quiet SIGINT handler at import time."""

import subprocess
import sys

import pytest

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
