"""A whole scenario: simulator services, every vehicle's stack, and the sim clock.

    ros2 launch acomms_bringup sim_network.launch.py \
        scenario:=package://acomms_bringup/config/demo.yaml [log_level:=info] [autostart:=true]

Starts exactly what `acomms_bringup.description.stack.describe_stack` lists — the same nodes, names,
parameters and remappings as the embedded runner — as lifecycle nodes, with one lifecycle_manager
per group (simulation, each vehicle, clock) that configures and activates the group in order;
each manager waits until the groups of the earlier stages are active (`for_launch`), so the clock
starts last.
"""

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import LaunchConfiguration

from acomms_bringup.description.launch_actions import (
    DEFAULT_SCENARIO,
    for_launch,
    group_actions,
    load_scenario_argument,
    log_level_argument,
)
from acomms_bringup.description.stack import describe_stack
from acomms_bringup.description.vehicle_params import parse_bool_argument


def _network_actions(context):
    def argument(name):
        return LaunchConfiguration(name).perform(context)

    scenario = load_scenario_argument(argument("scenario"))
    autostart = parse_bool_argument(argument("autostart"), "autostart") is not False
    level = log_level_argument(argument("log_level"))
    return [action for group in for_launch(describe_stack(scenario), autostart).groups
            for action in group_actions(group, level)]


def generate_launch_description():
    return LaunchDescription([
        DeclareLaunchArgument("scenario", default_value=DEFAULT_SCENARIO,
                              description="Scenario YAML (path or package://pkg/path)"),
        DeclareLaunchArgument("log_level", default_value="info",
                              description="Log level of every node"),
        DeclareLaunchArgument("autostart", default_value="true",
                              description="Managers bring their groups up by themselves"),
        OpaqueFunction(function=_network_actions),
    ])
