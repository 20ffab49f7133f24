"""One vehicle's stack in its namespace, from a scenario file.

    ros2 launch acomms_bringup vehicle.launch.py scenario:=my_network.yaml vehicle:=auv

Starts exactly what `acomms_bringup.description.stack.describe_vehicle` lists for that vehicle
(modem — sim or micromodem, as the scenario says — queue, dispatch, MAC, plus trajectory_node for a
moving sim vehicle) as lifecycle nodes, and a lifecycle_manager that configures and activates them
in order. A sim vehicle also needs the simulator and clock: use sim_network.launch.py for a whole
network.
"""

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import LaunchConfiguration

from acomms_bringup.description.launch_actions import (
    DEFAULT_SCENARIO,
    group_actions,
    load_scenario_argument,
)
from acomms_bringup.description.stack import describe_vehicle


def _vehicle_actions(context):
    scenario = load_scenario_argument(LaunchConfiguration("scenario").perform(context))
    vehicle = LaunchConfiguration("vehicle").perform(context)
    return group_actions(describe_vehicle(scenario, vehicle))


def generate_launch_description():
    return LaunchDescription([
        DeclareLaunchArgument("scenario", default_value=DEFAULT_SCENARIO,
                              description="Scenario YAML (path or package://pkg/path)"),
        DeclareLaunchArgument("vehicle", description="Name of the vehicle in the scenario"),
        OpaqueFunction(function=_vehicle_actions),
    ])
