"""Turn stack descriptions into launch_ros actions (used by the launch files in launch/).

Kept separate from the launch files so both (vehicle.launch.py, sim_network.launch.py) build their
actions the same way, from the same `acomms_bringup.description.stack` description the embedded
runner uses: each lifecycle node becomes a `launch_ros.actions.LifecycleNode`, each group's manager
a `launch_ros.actions.Node` running `lifecycle_manager`, which configures and activates the group's
nodes in order. `launch`/`launch_ros` are imported only when these functions run (they are part of
a full ROS 2 install, not of this repository's bootstrap); `for_launch` and the argument readers
are plain Python.

Separate processes start in any order and slowly on a busy computer, so `for_launch` gives every
manager a long retry deadline and makes the start-up stages explicit: each group's manager waits
(`wait_for_managers`) until the managers of every earlier stage report their groups active, so
the clock starts only when every vehicle is up.
"""

from __future__ import annotations

import dataclasses
import pathlib

from acomms_bringup.description.scenario import Scenario, load_scenario, resolve_path
from acomms_bringup.description.stack import (
    NodeDescription,
    NodeGroup,
    StackDescription,
    emulated_vehicles,
)

DEFAULT_SCENARIO = "package://acomms_bringup/config/demo.yaml"
DEFAULT_PARAMS_FILE = "package://acomms_bringup/config/vehicle_params.yaml"
# Wall seconds for managers of separate processes (each answer retried with backoff).
LAUNCH_RETRY_DEADLINE_SECONDS = 120.0
LAUNCH_SERVICE_WAIT_SECONDS = 120.0
LAUNCH_MANAGER_WAIT_SECONDS = 600.0
LOG_LEVELS = ("debug", "info", "warn", "error", "fatal")


def load_scenario_argument(value: str) -> Scenario:
    """A scenario path as given on the command line: a file path or package://pkg/path.
    ValueError for EvoLogics modems acomms_run would emulate (launch starts no emulator)."""
    scenario = load_scenario(resolve_path(value, pathlib.Path.cwd()))
    emulated = emulated_vehicles(scenario)
    if emulated:
        raise ValueError(f"{value}: vehicle {emulated[0].name}: modem connection: emulated runs "
                         "under acomms_run only (it starts the EvoLogics emulators); with launch, "
                         "start evologics_emulator --link-dir DIR and use connection: serial, "
                         "serial_port: DIR/modem<SRC>")
    return scenario


def launch_manager_parameters(manager: NodeDescription, autostart: bool,
                              wait_for: list[str]) -> dict:
    parameters = {**manager.parameters, "autostart": autostart,
                  "retry_deadline_seconds": LAUNCH_RETRY_DEADLINE_SECONDS,
                  "service_wait_seconds": LAUNCH_SERVICE_WAIT_SECONDS}
    if wait_for:
        parameters["wait_for_managers"] = list(wait_for)
        parameters["manager_wait_seconds"] = LAUNCH_MANAGER_WAIT_SECONDS
    return parameters


def for_launch(stack: StackDescription, autostart: bool = True) -> StackDescription:
    """The stack as separate processes start it: managers with the launch deadlines, each
    waiting for the managers of every earlier stage (simulation, then vehicles, then clock)."""
    groups, earlier = [], []
    for stage in stack.stages():
        for group in stage:
            parameters = launch_manager_parameters(group.manager, autostart, earlier)
            groups.append(dataclasses.replace(
                group, manager=dataclasses.replace(group.manager, parameters=parameters)))
        earlier = earlier + [group.manager.fully_qualified_name for group in stage]
    return StackDescription(groups=tuple(groups))


def log_level_argument(value: str) -> str:
    level = value.strip().lower()
    if level not in LOG_LEVELS:
        raise ValueError(f"launch argument log_level:={value!r}: expected one of {LOG_LEVELS}")
    return level


def node_action(node: NodeDescription, log_level: str | None = None):
    """One launch_ros action for one described node."""
    from launch_ros.actions import LifecycleNode, Node

    arguments = dict(package=node.package, executable=node.executable, name=node.name,
                     namespace=node.namespace, parameters=[dict(node.parameters)],
                     remappings=[tuple(r) for r in node.remappings], output="screen")
    if log_level is not None:
        arguments["ros_arguments"] = ["--log-level", log_level]
    return LifecycleNode(**arguments) if node.lifecycle else Node(**arguments)


def group_actions(group: NodeGroup, log_level: str | None = None) -> list:
    """The group's lifecycle nodes (in order) followed by the manager that starts them."""
    return [node_action(node, log_level) for node in (*group.nodes, group.manager)]
