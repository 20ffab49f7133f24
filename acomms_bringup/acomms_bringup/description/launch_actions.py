"""Turn stack descriptions into launch_ros actions (used by the launch files in launch/).

Kept separate from the launch files so both (vehicle.launch.py, sim_network.launch.py) build their
actions the same way, from the same `acomms_bringup.description.stack` description the embedded
runner uses: each lifecycle node becomes a `launch_ros.actions.LifecycleNode`, each group's manager
a `launch_ros.actions.Node` running `lifecycle_manager`, which configures and activates the group's
nodes in order. `launch`/`launch_ros` are imported only when these functions run (they are part of
a full ROS 2 install, not of this repository's bootstrap).
"""

from __future__ import annotations

from acomms_bringup.description.scenario import Scenario, load_scenario, resolve_path
from acomms_bringup.description.stack import NodeDescription, NodeGroup

DEFAULT_SCENARIO = "package://acomms_bringup/config/demo.yaml"


def load_scenario_argument(value: str) -> Scenario:
    """A scenario path as given on the command line: a file path or package://pkg/path."""
    import pathlib

    return load_scenario(resolve_path(value, pathlib.Path.cwd()))


def node_action(node: NodeDescription):
    """One launch_ros action for one described node."""
    from launch_ros.actions import LifecycleNode, Node

    arguments = dict(package=node.package, executable=node.executable, name=node.name,
                     namespace=node.namespace, parameters=[dict(node.parameters)],
                     remappings=[tuple(r) for r in node.remappings], output="screen")
    return LifecycleNode(**arguments) if node.lifecycle else Node(**arguments)


def group_actions(group: NodeGroup) -> list:
    """The group's lifecycle nodes (in order) followed by the manager that starts them."""
    return [node_action(node) for node in (*group.nodes, group.manager)]
