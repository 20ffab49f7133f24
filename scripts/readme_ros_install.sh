#!/usr/bin/env bash
# Runs one of the README's "With a ROS 2 install" blocks exactly as written (the lines between
# <!-- BLOCK:begin --> and <!-- BLOCK:end -->), from the repository root: CI uses it so the README
# cannot drift from what is tested.
#   scripts/readme_ros_install.sh [ros-install]   # install, build, colcon test
#   scripts/readme_ros_install.sh ros-launch      # a new shell's set-up, then launch_check.py
#   scripts/readme_ros_install.sh needs-ros-install
#       # a new shell's set-up (ros-launch without launch_check.py), then every other
#       # `<!-- needs: ros-install -->` block of README.md and docs/ (scripts/doc_blocks.py)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
block="${1:-ros-install}"
source_block="$block"
[ "$block" = needs-ros-install ] && source_block=ros-launch
commands="$(sed -n "/<!-- $source_block:begin -->/,/<!-- $source_block:end -->/p" README.md \
  | grep -v -e '^<!--' -e '^```' || true)"
[ -n "$commands" ] || { echo "readme_ros_install: no $source_block block in README.md" >&2; exit 1; }
if [ "$block" = needs-ros-install ]; then
  commands="$(echo "$commands" | grep -v '^python scripts/launch_check.py')
python scripts/doc_blocks.py run ros-install"
fi
echo "$commands"
set +u  # ROS setup scripts read unset variables
eval "$commands"
