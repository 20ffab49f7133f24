#!/usr/bin/env bash
# Runs the README's "With a ROS 2 install" commands exactly as written (the lines between
# <!-- ros-install:begin --> and <!-- ros-install:end -->), from the repository root: CI uses it so
# the README cannot drift from what is tested.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
commands="$(sed -n '/<!-- ros-install:begin -->/,/<!-- ros-install:end -->/p' README.md \
  | grep -v -e '^<!--' -e '^```')"
[ -n "$commands" ] || { echo "readme_ros_install: no ros-install block in README.md" >&2; exit 1; }
echo "$commands"
set +u  # ROS setup scripts read unset variables
eval "$commands"
