#!/usr/bin/env bash
# Regenerates docs/validation.md's measurements (needs root, ~30 min on 2 cores): calibrates the
# testbed at each NIC cap, then runs `simctl compare` on scenarios/validate-testbed.yaml with that
# cap and its profile, and on scenarios/validate-contention.yaml; prints the combined table.
#
#   scripts/validate-testbed.sh [--recalibrate] [--runs K] [CAP...]   (default caps: 500Mbps 1Gbps)
#
# --runs K measures the live side K times (K × ~21 min); every run's outputs are kept under
# out/validate-runs/run-I/, and a second table scores the last run's simulated side against the
# mean of the K live runs (plots/validation_table.py --pool-live): one live run carries TCP's
# run-to-run spread (docs/validation.md, "Against five live runs").
# A cap whose profile traces/calibration/testbed-CAP.yaml exists is not calibrated again unless
# --recalibrate (or ADAPTSIM_RECALIBRATE=1) is given: then every cap's profile is measured anew
# and overwritten. ADAPTSIM_BUILD picks the build folder (default: build), ADAPTSIM_OUT the output
# folder (default: out); ADAPTSIM_SIM_SEEDS how many seeds the simulated side averages (default
# 32: `simctl compare --sim-seeds`).
set -euo pipefail
cd "$(dirname "$0")/.."
build="${ADAPTSIM_BUILD:-build}"
out="${ADAPTSIM_OUT:-out}"
recalibrate="${ADAPTSIM_RECALIBRATE:-0}"
# The simulated side is the mean over this many seeds (the TCP share draws and compute jitter
# are random: one draw moves a fan-in row by up to ~8 %, docs/validation.md).
sim_seeds="${ADAPTSIM_SIM_SEEDS:-32}"
caps=()
runs=1
while [ $# -gt 0 ]; do
  arg="$1"; shift
  case "$arg" in
    --recalibrate) recalibrate=1 ;;
    --runs)
      runs="${1:-}"; shift || true
      [[ "$runs" =~ ^[1-9][0-9]*$ ]] || { echo "validate-testbed.sh: --runs needs a positive count, got '$runs'" >&2; exit 2; } ;;
    -h | --help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "validate-testbed.sh: unknown option $arg (known: --recalibrate, --runs K)" >&2; exit 2 ;;
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
done
csvs() { for cap in "${caps[@]}"; do echo "$1/validate-testbed-$cap/validate-testbed.compare.csv"; done
         echo "$1/validate-contention/validate-contention.compare.csv"; }
[ "$runs" = 1 ] || rm -rf "$out/validate-runs"
for run in $(seq 1 "$runs"); do
  [ "$runs" = 1 ] || echo "validate-testbed.sh: live run $run of $runs"
  for cap in "${caps[@]}"; do
    "$build/sim/simctl/simctl" compare scenarios/validate-testbed.yaml --sim-seeds "$sim_seeds" \
      -o "$out/validate-testbed-$cap" \
      --set "topology.params.nic_bandwidth=$cap" --calibration "traces/calibration/testbed-$cap.yaml"
  done
  "$build/sim/simctl/simctl" compare scenarios/validate-contention.yaml --sim-seeds "$sim_seeds" \
    -o "$out/validate-contention" \
    --calibration traces/calibration/testbed-500Mbps.yaml
  if [ "$runs" != 1 ]; then
    mkdir -p "$out/validate-runs/run-$run"
    for cap in "${caps[@]}"; do cp -r "$out/validate-testbed-$cap" "$out/validate-runs/run-$run/"; done
    cp -r "$out/validate-contention" "$out/validate-runs/run-$run/"
  fi
done
mapfile -t last < <(csvs "$out")
/usr/bin/python3 plots/validation_table.py "${last[@]}"
if [ "$runs" != 1 ]; then
  earlier=()
  for run in $(seq 1 $((runs - 1))); do mapfile -t -O "${#earlier[@]}" earlier < <(csvs "$out/validate-runs/run-$run"); done
  echo
  echo "Against the mean of the $runs live runs ($out/validate-runs/):"
  /usr/bin/python3 plots/validation_table.py "${last[@]}" --pool-live "${earlier[@]}"
fi
