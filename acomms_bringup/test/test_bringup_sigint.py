"""Node processes as `ros2 launch` runs them: a manager brings a node in another process up by
its relative name; SIGINT (what launch sends) ends every process with status 0 and no error,
also in the middle of a start-up; a node nobody configures says once what it waits for."""

import os
import shutil
import signal
import subprocess
import time

import pytest
from std_srvs.srv import Trigger

from acomms_core.ros.ros_support import UNCONFIGURED_NOTICE_S
from acomms_core.ros.testing import RosHarness

pytestmark = pytest.mark.skipif(shutil.which("lifecycle_manager") is None,
                                reason="node executables not on PATH (source env.sh)")
NOTICE = "unconfigured: waiting for a lifecycle manager"


def start(*command):
    return subprocess.Popen(list(command), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=dict(os.environ))


def manager_active(harness, fqn, timeout_s):
    client = harness.helper.create_client(Trigger, f"{fqn}/status")
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if client.wait_for_service(timeout_sec=1.0):
            future = client.call_async(Trigger.Request())
            if harness.spin_until(future.done, 10.0) and future.result().success:
                return True
        harness.spin_for(0.2)
    return False


def test_manager_brings_up_by_relative_name_and_sigint_exits_cleanly():
    namespace = f"/sigint_{os.getpid()}_{time.monotonic_ns() % 10**9}"
    manager = start("lifecycle_manager", "--ros-args", "-r", f"__ns:={namespace}",
                    "-p", "node_names:=[sim_packet_performance_node]",
                    "-p", "service_wait_seconds:=60.0")  # the node starts after it
    lone = start("sim_clock_node", "--ros-args", "-r", f"__ns:={namespace}")
    stalled = start("lifecycle_manager", "--ros-args", "-r", f"__ns:={namespace}",
                    "-r", "__node:=stalled_manager", "-p", "node_names:=[absent_node]",
                    # still waiting when SIGINT comes, however slow the machine is
                    "-p", "service_wait_seconds:=600.0", "-p", "retry_deadline_seconds:=600.0")
    processes = [manager, lone, stalled]
    try:
        with RosHarness() as harness:
            # the managed node starts once its manager is up and polling for it, so it is
            # configured well before its notice time even on a loaded machine
            status = harness.helper.create_client(Trigger, f"{namespace}/lifecycle_manager/status")
            assert status.wait_for_service(timeout_sec=60.0)
            node_started = time.monotonic()
            node = start("sim_packet_performance_node", "--ros-args", "-r", f"__ns:={namespace}")
            processes.insert(0, node)
            assert manager_active(harness, f"{namespace}/lifecycle_manager", 60.0)
            active_after_s = time.monotonic() - node_started  # configured before this
            # the lone node is up and past its notice time
            assert harness.spin_until(lambda: "sim_clock_node" in
                                      harness.helper.get_node_names(), 60.0)
            harness.spin_for(3.5)
        for process in processes:  # the stalled manager is still waiting for absent_node
            process.send_signal(signal.SIGINT)
        outputs = [process.communicate(timeout=30)[1] for process in processes]
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
                process.communicate()
    for process, stderr in zip(processes, outputs, strict=True):
        assert process.returncode == 0, (process.args, stderr)
        for bad in ("Traceback", "InvalidHandle", "[ERROR]"):
            assert bad not in stderr, (process.args, stderr)
    assert f"startup: 1 nodes active: {namespace}/sim_packet_performance_node" in outputs[1]
    assert outputs[2].count(NOTICE) == 1
    assert f"{namespace}/sim_clock_node in node_names" in outputs[2]
    if active_after_s < UNCONFIGURED_NOTICE_S - 0.5:  # configured before its notice time
        assert NOTICE not in outputs[0]
    else:  # a loaded machine: configured late, but the notice still comes once at most
        assert outputs[0].count(NOTICE) <= 1
