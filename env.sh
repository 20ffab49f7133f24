# Source me: `source env.sh` puts this shell into the acomms workspace (venv + install/).
# Run scripts/bootstrap.sh (or scripts/test.sh) once first.
ACOMMS_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]:-$0}")" && pwd)"
if [ ! -f "$ACOMMS_ROOT/.venv/bin/activate" ] || [ ! -f "$ACOMMS_ROOT/install/setup.bash" ]; then
  echo "env.sh: workspace not built; run $ACOMMS_ROOT/scripts/bootstrap.sh first" >&2
  return 1 2>/dev/null || exit 1
fi
# shellcheck disable=SC1091
source "$ACOMMS_ROOT/.venv/bin/activate"
export CMAKE_PREFIX_PATH="$VIRTUAL_ENV" AMENT_PREFIX_PATH="$VIRTUAL_ENV"
# ltcodecs' middleware shim must not try to load ROS 2 CLI packages that are absent here.
export ARMW_MIDDLEWARE=native
# The venv prefix has no colcon local_setup; colcon warns about that, harmlessly.
# shellcheck disable=SC1091
source "$ACOMMS_ROOT/install/setup.bash" 2> >(grep -v "local_setup" >&2)
# Node executables live in install/<pkg>/lib/<pkg>/ (where `ros2 run` looks); put them on PATH so
# they run by name without ros2cli.
for _acomms_bin in "$ACOMMS_ROOT"/install/acomms_*/lib/acomms_*; do
  case ":$PATH:" in *":$_acomms_bin:"*) ;; *) [ -d "$_acomms_bin" ] && PATH="$_acomms_bin:$PATH" ;; esac
done
unset _acomms_bin
export PATH
