#!/usr/bin/env bash
# Runs one of the README's "With a ROS 2 install" blocks exactly as written (the lines between
# <!-- BLOCK:begin --> and <!-- BLOCK:end -->), from the repository root: CI uses it so the README
# cannot drift from what is tested.
#   scripts/readme_ros_install.sh [ros-install]   # install, build, colcon test
#   scripts/readme_ros_install.sh ros-launch      # a new shell's set-up, then launch_check.py
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
block="${1:-ros-install}"
commands="$(sed -n "/<!-- $block:begin -->/,/<!-- $block:end -->/p" README.md \
  | grep -v -e '^<!--' -e '^```' || true)"
[ -n "$commands" ] || { echo "readme_ros_install: no $block block in README.md" >&2; exit 1; }
echo "$commands"
set +u  # ROS setup scripts read unset variables
eval "$commands"
