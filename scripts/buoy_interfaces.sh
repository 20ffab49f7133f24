#!/usr/bin/env bash
# buoy_interfaces for the MBARI WEC bridge (issue 17), only where the real package is missing.
#
# The WEC bridge's topics and services must carry MBARI's own type names
# (buoy_interfaces/msg/PBRecord, buoy_interfaces/srv/PumpCommand, ...) to talk to a running MBARI
# WEC simulation or buoy. Where buoy_interfaces is importable from outside this workspace (a ROS 2
# install with mbari_wec_utils sourced), that package is used and nothing is built. Otherwise the
# definitions shipped as data in acomms_bringup/buoy_interfaces_template/ (same fields and
# constants as MBARI's: the telemetry records and the command services the bridge uses) are built
# as a package `buoy_interfaces` into install/, marked share/buoy_interfaces/ACOMMS_STAND_IN.
# The template is not a colcon package in the source tree (package.xml.in, CMakeLists.txt.in), so
# the workspace keeps its five packages; a stand-in built earlier is removed as soon as a real
# buoy_interfaces is importable (outside install/), so it never shadows the real one.
# Called by scripts/bootstrap.sh with the build environment set; on a ROS install:
#   source /opt/ros/<distro>/setup.bash && scripts/buoy_interfaces.sh
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PY="${ACOMMS_BUOY_PYTHON:-python3}"
TEMPLATE=acomms_bringup/buoy_interfaces_template
STAMP=install/buoy_interfaces/share/buoy_interfaces/ACOMMS_STAND_IN
say() { echo "buoy_interfaces: $*"; }

# A buoy_interfaces importable from outside this workspace's install/ is the real one: use it,
# build nothing, and remove a stand-in built earlier so that it cannot shadow the real one.
origin="$("$PY" - "$ROOT/install" <<'PYEOF' 2>/dev/null || true
import importlib.util
import sys
sys.path = [p for p in sys.path if not p.startswith(sys.argv[1])]
spec = importlib.util.find_spec("buoy_interfaces")
print(spec.origin if spec is not None and spec.origin else "")
PYEOF
)"
if [ -n "$origin" ]; then
  if [ -f "$STAMP" ]; then
    say "removing acomms' stand-in: the real package is installed"
    rm -rf install/buoy_interfaces build/buoy_interfaces build/buoy_interfaces_src
  fi
  exit 0
fi
digest="$(cat "$TEMPLATE"/*.in "$TEMPLATE"/msg/*.msg "$TEMPLATE"/srv/*.srv | sha256sum | cut -d' ' -f1)"
if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$digest" ]; then
  exit 0  # our stand-in, up to date
fi
say "not installed; building acomms' stand-in from $TEMPLATE"
src=build/buoy_interfaces_src/buoy_interfaces
rm -rf "$src" && mkdir -p "$src"
cp -r "$TEMPLATE"/msg "$TEMPLATE"/srv "$src"/
cp "$TEMPLATE"/package.xml.in "$src"/package.xml
cp "$TEMPLATE"/CMakeLists.txt.in "$src"/CMakeLists.txt
echo "$digest" > "$src"/ACOMMS_STAND_IN
mkdir -p log
"$PY" -c 'import sys; from colcon_core.command import main; sys.argv[0] = "colcon"; sys.exit(main())' \
  --log-level error build --base-paths build/buoy_interfaces_src --build-base build \
  --install-base install --parallel-workers "$(nproc)" \
  --event-handlers console_direct- status- summary+ \
  --cmake-args -DBUILD_TESTING=OFF -DCMAKE_BUILD_TYPE=Release \
  -DPython3_EXECUTABLE="$PY" -DPYTHON_EXECUTABLE="$PY" \
  > log/colcon-buoy-interfaces.out 2>&1 \
  || { cat log/colcon-buoy-interfaces.out >&2; echo "buoy_interfaces: build failed" >&2; exit 1; }
say "built into install/buoy_interfaces"
