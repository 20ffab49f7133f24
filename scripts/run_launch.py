#!/usr/bin/env python3
"""`ros2 launch FILE name:=value ...` without ros2cli: the same LaunchService, for machines with
the launch and launch_ros Python packages but no `ros2` command (scripts/launch_check.py uses it
when `ros2` is missing). SIGINT stops the launch as `ros2 launch` does."""

import sys


def main(argv: list[str]) -> int:
    from launch import LaunchDescription, LaunchService
    from launch.actions import IncludeLaunchDescription
    from launch.launch_description_sources import AnyLaunchDescriptionSource

    if not argv:
        print("usage: run_launch.py FILE [name:=value ...]", file=sys.stderr)
        return 2
    arguments = [tuple(a.split(":=", 1)) for a in argv[1:]]
    service = LaunchService(argv=argv[1:])
    service.include_launch_description(LaunchDescription([IncludeLaunchDescription(
        AnyLaunchDescriptionSource(argv[0]), launch_arguments=arguments)]))
    return service.run()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
