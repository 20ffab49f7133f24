#!/usr/bin/env bash
# The README test command: bootstrap (idempotent), then the whole test suite with pytest.
# Usage: scripts/test.sh [package-or-path ...] [-- extra pytest args]
#   scripts/test.sh                 # everything
#   scripts/test.sh acomms_core     # one package
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
scripts/bootstrap.sh
# shellcheck disable=SC1091
set +u  # colcon's setup scripts read unset variables
source env.sh
set -u
# Keep test traffic off the vehicle network and away from other test runs on this machine.
export ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST
export ROS_DOMAIN_ID="${ROS_DOMAIN_ID:-$(( (RANDOM % 100) + 1 ))}"
export ACOMMS_TEST_ISOLATED=1  # conftest.py: keep this domain (per xdist worker)
targets=() extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --) shift; extra=("$@"); break ;;
    *) if [ -d "$1/test" ]; then targets+=("$1/test"); else targets+=("$1"); fi; shift ;;
  esac
done
if [ ${#targets[@]} -eq 0 ]; then
  targets=(tests)
  for d in acomms_*/test; do targets+=("$d"); done
fi
# Tests wait on (simulated) time more than they compute: run them on parallel workers, each with
# its own ROS_DOMAIN_ID (conftest.py). ACOMMS_TEST_WORKERS=0 runs them in this one process.
workers="${ACOMMS_TEST_WORKERS:-2}"
parallel=()
[ "$workers" != "0" ] && parallel=(-n "$workers")
echo "test: ROS_DOMAIN_ID=$ROS_DOMAIN_ID workers=$workers pytest ${targets[*]}"
# pytest exits 5 when it collected no test; that is a failure here too.
exec python -m pytest "${parallel[@]}" "${targets[@]}" "${extra[@]}"
