#!/usr/bin/env bash
# Figure 4 simulated, each mechanism switched off in turn, against the checked-in live runs
# (docs/figures.md "Figure 4"): the full model; the workers' compute on cores of their own
# (compute_cores 0: neither the computes nor the transport threads share the cores); the
# transport threads unmodelled (transport_threads unlimited: the computes share the cores, the
# transfers take none of them); the monitor's norm kernels memory-bound on the device instead of the
# calibration profile's CPU kernels (monitor_kernels device); no statistical efficiency (every
# sample counts the same at any batch: the dynamics' noise_factor at 1e12). Prints
# scripts/fig4-targets.py's lines for the simulated adaptive run of each.
#
#   scripts/fig4-ablations.sh [BUILD_DIR]     (default: build)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
simctl="${1:-$root/build}/sim/simctl/simctl"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
live=("$root/docs/data/fig4-live-1.steps.csv.gz" "$root/docs/data/fig4-live-2.steps.csv.gz")
sed 's/^noise_factor: .*/noise_factor: 1e12/' "$root/traces/dynamics/fashion-mlp.yaml" > "$out/flat.yaml"
run() {  # run NAME SETS...
  local name=$1
  shift
  "$simctl" run "$root/scenarios/fig4-batch-live.yaml" -o "$out/$name" --no-progress "$@" > /dev/null
  echo "== $name"
  /usr/bin/python3 "$root/scripts/fig4-targets.py" "${live[@]}" \
    --sim "$out/$name/fig4-batch-live.steps.csv" | grep -E '^  (large|adaptive) +sim|simulated'
}
run full
run no-compute-sharing --set workload.compute_cores=0
run no-transport-threads --set workload.transport_threads=unlimited
run device-kernels --set workload.monitor_kernels=device
run no-efficiency --set "workload.learn.dynamics=$out/flat.yaml"
