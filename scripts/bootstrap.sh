#!/usr/bin/env bash
# Idempotent set-up: .venv with pinned ROS 2 Kilted wheels + deps, then colcon build into install/.
# A second run with nothing changed only checks stamps and returns in seconds.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PYTHON="${ACOMMS_PYTHON:-python3}"

say() { echo "bootstrap: $*"; }

if ! "$PYTHON" -c 'import sys; sys.exit(0 if (3, 10) <= sys.version_info[:2] <= (3, 13) else 1)'; then
  echo "bootstrap: need CPython 3.10-3.13 (found $("$PYTHON" --version 2>&1)); set ACOMMS_PYTHON" >&2
  exit 2
fi
if [ "$(uname -m)" != "x86_64" ]; then
  echo "bootstrap: the ROS 2 wheels exist only for x86_64 Linux; use a ROS 2 install and colcon" >&2
  exit 2
fi

if [ ! -x .venv/bin/python ]; then
  say "creating .venv with $("$PYTHON" --version)"
  "$PYTHON" -m venv .venv
fi
# The venv's physical path (.venv may be a symlink to a venv shared between checkouts): paths
# baked into scripts and CMake files then stay valid whichever checkout ran the bootstrap.
VENV_PY="$(cd .venv && pwd -P)/bin/python"

# Dependencies: reinstall only when requirements.txt or the interpreter changes.
req_stamp="$(cat requirements.txt scripts/repair_ros_wheels.py | sha256sum | cut -d' ' -f1)-$("$VENV_PY" -c 'import sys; print(sys.version)' | head -1 | tr ' ' _)"
if [ "$(cat .venv/.acomms-requirements 2>/dev/null)" != "$req_stamp" ]; then
  say "installing pinned dependencies (requirements.txt)"
  "$VENV_PY" -m pip install --disable-pip-version-check -q -r requirements.txt
  "$VENV_PY" scripts/repair_ros_wheels.py "$ROOT/.venv"
  echo "$req_stamp" > .venv/.acomms-requirements
  rm -f install/.acomms-build-stamp
fi

# Build: only when a package file is newer than the last successful build.
export VIRTUAL_ENV="$ROOT/.venv"
export PATH="$VIRTUAL_ENV/bin:$PATH"
export CMAKE_PREFIX_PATH="$VIRTUAL_ENV" AMENT_PREFIX_PATH="$VIRTUAL_ENV"
packages=(acomms_*/)
if [ -f install/.acomms-build-stamp ] && \
   [ -z "$(find "${packages[@]}" colcon.meta -newer install/.acomms-build-stamp -not -path '*/__pycache__*' -print -quit)" ]; then
  say "up to date"
  ACOMMS_BUOY_PYTHON="$VENV_PY" scripts/buoy_interfaces.sh
  exit 0
fi
say "colcon build"
mkdir -p log
# colcon through the venv's interpreter: the venv's script shebangs name the path the venv was
# created at, which breaks when the venv is moved or shared between checkouts.
"$VENV_PY" -c 'import sys; from colcon_core.command import main; sys.argv[0] = "colcon"; sys.exit(main())' \
  --log-level error build --symlink-install --parallel-workers "$(nproc)" \
  --event-handlers console_direct- status- summary+ \
  --cmake-args -DBUILD_TESTING=OFF -DPython3_EXECUTABLE="$VENV_PY" -DPYTHON_EXECUTABLE="$VENV_PY" \
  > log/colcon-build.out 2>&1 || { cat log/colcon-build.out >&2; echo "bootstrap: colcon build failed" >&2; exit 1; }
touch install/.acomms-build-stamp
say "built into install/"
# MBARI's buoy_interfaces for the WEC bridge, built only where no real one is installed.
ACOMMS_BUOY_PYTHON="$VENV_PY" scripts/buoy_interfaces.sh
