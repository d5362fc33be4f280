#!/usr/bin/env bash
# Regenerates docs/validation.md's measurements (needs root, ~30 min on 2 cores): calibrates the
# testbed at each NIC cap, then runs `simctl compare` on scenarios/validate-testbed.yaml with that
# cap and its profile, and on scenarios/validate-contention.yaml; prints the combined table.
#
#   scripts/validate-testbed.sh [--recalibrate] [CAP...]     (default caps: 500Mbps 1Gbps)
#
# A cap whose profile traces/calibration/testbed-CAP.yaml exists is not calibrated again unless
# --recalibrate (or ADAPTSIM_RECALIBRATE=1) is given: then every cap's profile is measured anew
# and overwritten. ADAPTSIM_BUILD picks the build folder (default: build); ADAPTSIM_SIM_SEEDS how
# many seeds the simulated side averages (default 32: `simctl compare --sim-seeds`).
set -euo pipefail
cd "$(dirname "$0")/.."
build="${ADAPTSIM_BUILD:-build}"
recalibrate="${ADAPTSIM_RECALIBRATE:-0}"
# The simulated side is the mean over this many seeds (the TCP share draws and compute jitter
# are random: one draw moves a fan-in row by up to ~8 %, docs/validation.md).
sim_seeds="${ADAPTSIM_SIM_SEEDS:-32}"
caps=()
for arg in "$@"; do
  case "$arg" in
    --recalibrate) recalibrate=1 ;;
    -h | --help) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "validate-testbed.sh: unknown option $arg (known: --recalibrate)" >&2; exit 2 ;;
    *) caps+=("$arg") ;;
  esac
done
[ "${#caps[@]}" -gt 0 ] || caps=(500Mbps 1Gbps)
for cap in "${caps[@]}"; do
  if [ "$recalibrate" = 1 ] || [ ! -f "traces/calibration/testbed-$cap.yaml" ]; then
    scripts/calibrate-testbed.sh topologies/cloud-vms.yaml traces/calibration "testbed-$cap" \
      --set servers=4 --set "nic_bandwidth=$cap" --set nic_queue=100ms -- \
      --strategy MULTI_BINARY_TREE_STAR,CLASSIC_RING --minbytes 4B --maxbytes 64MiB \
      --stepfactor 4 --iters 10 --warmup-iters 3 --congestion-control cubic
  fi
  "$build/sim/simctl/simctl" compare scenarios/validate-testbed.yaml --sim-seeds "$sim_seeds" \
    -o "out/validate-testbed-$cap" \
    --set "topology.params.nic_bandwidth=$cap" --calibration "traces/calibration/testbed-$cap.yaml"
done
"$build/sim/simctl/simctl" compare scenarios/validate-contention.yaml --sim-seeds "$sim_seeds" \
  -o out/validate-contention \
  --calibration traces/calibration/testbed-500Mbps.yaml
/usr/bin/python3 plots/validation_table.py out/validate-testbed-*/validate-testbed.compare.csv \
  out/validate-contention/validate-contention.compare.csv
