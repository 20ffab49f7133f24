"""A whole scenario: simulator services, every vehicle's stack, and the sim clock.

    ros2 launch acomms_bringup sim_network.launch.py \
        scenario:=package://acomms_bringup/config/demo.yaml

Starts exactly what `acomms_bringup.description.stack.describe_stack` lists — the same nodes, names,
parameters and remappings as the embedded runner — as lifecycle nodes, with one lifecycle_manager
per group (simulation, each vehicle, clock) that configures and activates the group in order.
"""

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import LaunchConfiguration

from acomms_bringup.description.launch_actions import (
    DEFAULT_SCENARIO,
    group_actions,
    load_scenario_argument,
)
from acomms_bringup.description.stack import describe_stack


def _network_actions(context):
    scenario = load_scenario_argument(LaunchConfiguration("scenario").perform(context))
    return [action for group in describe_stack(scenario).groups
            for action in group_actions(group)]


def generate_launch_description():
    return LaunchDescription([
        DeclareLaunchArgument("scenario", default_value=DEFAULT_SCENARIO,
                              description="Scenario YAML (path or package://pkg/path)"),
        OpaqueFunction(function=_network_actions),
    ])
