#!/usr/bin/env bash
# The README's main command: the simulated three-vehicle demo (AUV, surface gateway, topside).
# Bootstraps (idempotent), then runs every node in this one process with acomms_run on
# acomms_bringup/config/demo.yaml: 10 simulated minutes on the deterministic clock throttled to
# warp 10 (about a minute of wall time; `--warp max`: as fast as possible, same results), a
# progress bar, a summary table, and ./runs/demo-<timestamp>/ (run.mcap, summary.json, timeline.png,
# map.png, CSVs; --out DIR for another folder; --live for Foxglove). Extra arguments go to
# acomms_run, e.g.
#   scripts/demo.sh --duration 120 --warp max --out /tmp/demo
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$ROOT/scripts/bootstrap.sh"
set +u  # colcon's setup scripts read unset variables
# shellcheck disable=SC1091
source "$ROOT/env.sh"
set -u
# Keep the demo's traffic on this machine unless the caller chose otherwise.
export ROS_AUTOMATIC_DISCOVERY_RANGE="${ROS_AUTOMATIC_DISCOVERY_RANGE:-LOCALHOST}"
exec acomms_run "$ROOT/acomms_bringup/config/demo.yaml" "$@"
