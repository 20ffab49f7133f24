#!/usr/bin/env python3
"""Run each launch file for real: start, every manager reports its group active, a message
crosses the simulated acoustic link, SIGINT, clean shutdown (every process exits 0, no error).

    source /opt/ros/<distro>/setup.bash && source install/setup.bash
    python3 scripts/launch_check.py [--only vehicle|sim_network] [--timeout 300]

Cases:
- vehicle: two vehicle.launch.py from a params file (config/vehicle_params.yaml for alpha, a
  copy with SRC 2 / slot 1 for bravo), both included under PushRosNamespace('fleet') with
  namespace:=alpha / bravo, so /fleet/alpha/... proves that the namespaces compose;
- sim_network: sim_network.launch.py with config/two_vehicles.yaml (simulator, two vehicles,
  sim clock: the clock manager waits for every other group).
In each, std_msgs/String published on bravo's to_acomms/command must come out of alpha's
from_acomms/command (demo_codecs.yaml: command goes to SRC 1).

Uses `ros2 launch` when the `ros2` command exists, else scripts/run_launch.py (the same
LaunchService). Exit status 0 when every case passed; each failure is one line on stderr.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import yaml

ROOT = pathlib.Path(__file__).resolve().parents[1]
SIGTERM_TIMEOUT_S = 20
BAD_OUTPUT = ("[ERROR]", "InvalidHandle", "Traceback", "exit code -", "process has died")

FLEET_LAUNCH = '''
from launch import LaunchDescription
from launch.actions import GroupAction, IncludeLaunchDescription
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch_ros.actions import PushRosNamespace


def generate_launch_description():
    def vehicle(name, params):
        return IncludeLaunchDescription(PythonLaunchDescriptionSource({vehicle_launch!r}),
                                        launch_arguments={{"namespace": name,
                                                          "params_file": params}}.items())
    return LaunchDescription([GroupAction([PushRosNamespace("fleet"),
                                           vehicle("alpha", {alpha!r}),
                                           vehicle("bravo", {bravo!r})])])
'''


def share(package: str) -> pathlib.Path:
    from ament_index_python.packages import get_package_share_directory

    return pathlib.Path(get_package_share_directory(package))


def launch_command(launch_file: pathlib.Path, *arguments: str) -> list[str]:
    # Exiting 16 processes at once on 2 busy cores can take longer than launch's default 5 s
    # before it escalates to SIGTERM.
    arguments = (*arguments, f"sigterm_timeout:={SIGTERM_TIMEOUT_S}")
    if shutil.which("ros2"):
        return ["ros2", "launch", str(launch_file), *arguments]
    return [sys.executable, str(ROOT / "scripts" / "run_launch.py"), str(launch_file),
            *arguments]


def bravo_params(alpha_file: pathlib.Path, out: pathlib.Path) -> pathlib.Path:
    """The example vehicle as a second vehicle: SRC 2, TDMA slot 1, 1.5 km north."""
    document = yaml.safe_load(alpha_file.read_text())
    document["/**/modem_sim_node"]["ros__parameters"].update(SRC=2, latitude=41.5335)
    document["/**/message_queue_node"]["ros__parameters"]["src"] = 2
    document["/**/tdma_node"]["ros__parameters"]["active_slots"] = 1
    out.write_text(yaml.safe_dump(document))
    return out


def cases(workdir: pathlib.Path) -> dict[str, tuple[list[str], list[str], str, str]]:
    """name → (command, managers, sender namespace, receiver namespace)."""
    launch_dir, config = share("acomms_bringup") / "launch", share("acomms_bringup") / "config"
    alpha = config / "vehicle_params.yaml"
    fleet = workdir / "fleet.launch.py"
    fleet.write_text(FLEET_LAUNCH.format(vehicle_launch=str(launch_dir / "vehicle.launch.py"),
                                         alpha=str(alpha),
                                         bravo=str(bravo_params(alpha, workdir / "bravo.yaml"))))
    return {
        "vehicle": (launch_command(fleet),
                    ["/fleet/alpha/lifecycle_manager", "/fleet/bravo/lifecycle_manager"],
                    "/fleet/bravo", "/fleet/alpha"),
        "sim_network": (launch_command(launch_dir / "sim_network.launch.py",
                                       f"scenario:={config / 'two_vehicles.yaml'}"),
                        ["/simulation_lifecycle_manager", "/alpha/lifecycle_manager",
                         "/bravo/lifecycle_manager", "/clock_lifecycle_manager"],
                        "/bravo", "/alpha"),
    }


def wait_active(node, executor, managers: list[str], deadline: float,
                alive=lambda: True) -> str | None:
    """None once every manager's status says all its nodes are active; else what is not."""
    from std_srvs.srv import Trigger

    pending = {name: node.create_client(Trigger, f"{name}/status") for name in managers}
    last = {name: "no answer" for name in managers}
    while pending and time.monotonic() < deadline and alive():
        for name, client in list(pending.items()):
            if not client.service_is_ready():
                continue
            future = client.call_async(Trigger.Request())
            executor.spin_until_future_complete(future, timeout_sec=10.0)
            if future.done() and future.result() is not None:
                last[name] = future.result().message
                if future.result().success:
                    del pending[name]
        executor.spin_once(timeout_sec=0.5)
    return "; ".join(f"{name}: {last[name]}" for name in pending) or None


def message_crosses(node, executor, sender: str, receiver: str, deadline: float,
                    alive=lambda: True) -> bool:
    from std_msgs.msg import String

    received = []
    node.create_subscription(String, f"{receiver}/from_acomms/command", received.append, 10)
    publisher = node.create_publisher(String, f"{sender}/to_acomms/command", 10)
    next_publish = 0.0
    while not received and time.monotonic() < deadline and alive():
        if time.monotonic() >= next_publish:
            publisher.publish(String(data="launch_check"))
            next_publish = time.monotonic() + 5.0
        executor.spin_once(timeout_sec=0.2)
    return any(m.data == "launch_check" for m in received)


def stop(process: subprocess.Popen, log: pathlib.Path) -> list[str]:
    """SIGINT to the launch's process group, as Ctrl-C in a terminal does (launch then leaves
    the signal to its processes); the problems in its output and exit status."""
    problems = []
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGINT)
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            problems.append("launch did not stop within 60 s of SIGINT")
    if process.returncode != 0:
        problems.append(f"launch exited with status {process.returncode}")
    text = log.read_text(errors="replace")
    problems += [f"output line: {line.strip()}" for line in text.splitlines()
                 if any(bad in line for bad in BAD_OUTPUT)][:10]
    return problems


def run_case(name: str, case, timeout_s: float, workdir: pathlib.Path) -> list[str]:
    import rclpy
    from rclpy.executors import SingleThreadedExecutor

    command, managers, sender, receiver = case
    log = workdir / f"{name}.log"
    print(f"[{name}] {' '.join(command)}  (output: {log})", flush=True)
    with open(log, "w") as output:
        process = subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT,
                                   start_new_session=True)
    problems: list[str] = []
    context = rclpy.Context()
    rclpy.init(context=context)
    node = rclpy.create_node(f"launch_check_{name}", context=context)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)

    def alive() -> bool:  # a launch that failed (e.g. an import error) ends the case at once
        return process.poll() is None

    try:
        started = time.monotonic()
        not_active = wait_active(node, executor, managers, started + timeout_s, alive)
        if not alive():
            problems.append(f"launch ended early (status {process.returncode}); see {log}")
        elif not_active:
            problems.append(f"not active within {timeout_s:g} s: {not_active}")
        else:
            print(f"[{name}] every group active after {time.monotonic() - started:.1f} s",
                  flush=True)
            sent = time.monotonic()
            if message_crosses(node, executor, sender, receiver, sent + timeout_s, alive):
                print(f"[{name}] message crossed after {time.monotonic() - sent:.1f} s",
                      flush=True)
            else:
                problems.append(f"no message from {sender} reached {receiver} within "
                                f"{timeout_s:g} s")
    finally:
        executor.shutdown()
        node.destroy_node()
        rclpy.try_shutdown(context=context)
        problems += stop(process, log)
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", choices=("vehicle", "sim_network"))
    parser.add_argument("--timeout", type=float, default=300.0,
                        help="seconds for each of: groups active, message crossing")
    arguments = parser.parse_args(argv)
    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    workdir = pathlib.Path(tempfile.mkdtemp(prefix="acomms_launch_check_"))
    failed = 0
    for name, case in cases(workdir).items():
        if arguments.only and name != arguments.only:
            continue
        problems = run_case(name, case, arguments.timeout, workdir)
        for problem in problems:
            print(f"[{name}] FAILED: {problem}", file=sys.stderr)
        print(f"[{name}] {'FAILED' if problems else 'passed'}", flush=True)
        failed += bool(problems)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
