"""One vehicle's acomms stack from a standard ROS 2 parameters file (no scenario needed).

    ros2 launch acomms_bringup vehicle.launch.py params_file:=my_vehicle.yaml namespace:=auv \
        [use_sim_time:=true] [log_level:=info] [autostart:=true]

The file has one section per node, as `ros2 run --params-file` reads it (example:
config/vehicle_params.yaml; rules: `acomms_bringup.description.vehicle_params`): the sections
say which modem and MAC the vehicle runs. `namespace` is relative, so a PushRosNamespace around
an include of this file composes (`fleet` + `auv` → `/fleet/auv`); the lifecycle manager names
its nodes relative to itself. `use_sim_time` (empty: as the file says) and `log_level` apply to
every node; `autostart:=false` leaves the nodes unconfigured until
`ros2 service call <namespace>/lifecycle_manager/startup std_srvs/srv/Trigger`.

Still accepted for a simulated vehicle: `scenario:=network.yaml vehicle:=auv` starts that
vehicle as `acomms_bringup.description.stack.describe_vehicle` lists it (absolute namespace).
"""

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, GroupAction, OpaqueFunction
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import PushRosNamespace

from acomms_bringup.description.launch_actions import (
    DEFAULT_PARAMS_FILE,
    group_actions,
    load_scenario_argument,
    log_level_argument,
)
from acomms_bringup.description.stack import describe_vehicle
from acomms_bringup.description.vehicle_params import params_vehicle_from_arguments


def _vehicle_actions(context):
    def argument(name):
        return LaunchConfiguration(name).perform(context)

    level = log_level_argument(argument("log_level"))
    if argument("scenario"):
        scenario = load_scenario_argument(argument("scenario"))
        return group_actions(describe_vehicle(scenario, argument("vehicle")), level)
    namespace = context.launch_configurations.get("ros_namespace") or "/"
    group = params_vehicle_from_arguments(argument("params_file"), namespace,
                                          argument("use_sim_time"), argument("autostart"))
    return group_actions(group, level)


def generate_launch_description():
    return LaunchDescription([
        DeclareLaunchArgument("params_file", default_value=DEFAULT_PARAMS_FILE,
                              description="ROS 2 parameters YAML of the vehicle's nodes "
                                          "(path or package://pkg/path)"),
        DeclareLaunchArgument("namespace", default_value="",
                              description="Vehicle namespace (relative: composes with pushed "
                                          "namespaces)"),
        DeclareLaunchArgument("use_sim_time", default_value="",
                              description="true/false for every node (empty: as in the file)"),
        DeclareLaunchArgument("log_level", default_value="info",
                              description="Log level of every node"),
        DeclareLaunchArgument("autostart", default_value="true",
                              description="The manager configures and activates the nodes"),
        DeclareLaunchArgument("scenario", default_value="",
                              description="Instead of params_file: a scenario YAML ..."),
        DeclareLaunchArgument("vehicle", default_value="",
                              description="... and the name of the vehicle in it"),
        GroupAction([PushRosNamespace(LaunchConfiguration("namespace")),
                     OpaqueFunction(function=_vehicle_actions)]),
    ])
