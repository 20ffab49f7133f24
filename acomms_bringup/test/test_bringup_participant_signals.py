"""acomms_participant stopped by SIGTERM or SIGINT, in start-up or while waiting for Ticks: one
line, status 128 + the signal number, no traceback or error."""

import os
import pathlib
import shutil
import signal
import subprocess
import time

import pytest

from acomms_core.ros.testing import RosHarness

pytestmark = pytest.mark.skipif(shutil.which("acomms_participant") is None,
                                reason="executables not on PATH (source env.sh)")
DEMO = pathlib.Path(__file__).resolve().parents[1] / "config" / "demo.yaml"


def start(name: str) -> subprocess.Popen:
    return subprocess.Popen(["acomms_participant", str(DEMO), "--groups", "topside", "--name",
                             name], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ))


def stop(process: subprocess.Popen, signum: int) -> tuple[int, str]:
    process.send_signal(signum)
    try:
        _, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    return process.returncode, err


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_waiting_participant_stops_with_one_line(signum):
    name = f"p_signal_{os.getpid()}_{signum}"
    process = start(name)
    try:
        with RosHarness() as harness:  # its Tick/Tock node exists once its groups are up
            assert harness.spin_until(lambda: name in harness.helper.get_node_names(), 90.0)
    except BaseException:
        process.kill()
        process.communicate()
        raise
    status, err = stop(process, signum)
    assert status == 128 + signum, err
    assert err == f"acomms_participant: {name}: {signal.Signals(signum).name}: stopped\n"


def test_a_participant_stopped_while_starting_says_so_in_one_line():
    name = f"p_starting_{os.getpid()}"
    process = start(name)
    time.sleep(1.0)  # importing or bringing its groups up
    status, err = stop(process, signal.SIGTERM)
    assert status == 143, err
    assert err == f"acomms_participant: {name}: SIGTERM: stopped\n"
