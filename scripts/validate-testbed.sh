#!/usr/bin/env bash
# Regenerates docs/validation.md's measurements (needs root, ~30 min on 2 cores): calibrates the
# testbed at each NIC cap, then runs `simctl compare` on scenarios/validate-testbed.yaml with that
# cap and its profile, and on scenarios/validate-contention.yaml; prints the combined table.
set -euo pipefail
cd "$(dirname "$0")/.."
build="${ADAPTSIM_BUILD:-build}"
caps=("${@:-500Mbps 1Gbps}")
read -r -a caps <<< "${caps[*]}"
for cap in "${caps[@]}"; do
  if [ ! -f "traces/calibration/testbed-$cap.yaml" ]; then
    scripts/calibrate-testbed.sh topologies/cloud-vms.yaml traces/calibration "testbed-$cap" \
      --set servers=4 --set "nic_bandwidth=$cap" --set nic_queue=100ms -- \
      --strategy MULTI_BINARY_TREE_STAR,CLASSIC_RING --minbytes 8B --maxbytes 16MiB \
      --stepfactor 4 --iters 10 --warmup-iters 3 --congestion-control cubic
  fi
  "$build/sim/simctl/simctl" compare scenarios/validate-testbed.yaml -o "out/validate-testbed-$cap" \
    --set "topology.params.nic_bandwidth=$cap" --calibration "traces/calibration/testbed-$cap.yaml"
done
"$build/sim/simctl/simctl" compare scenarios/validate-contention.yaml -o out/validate-contention \
  --calibration traces/calibration/testbed-500Mbps.yaml
/usr/bin/python3 plots/validation_table.py out/validate-testbed-*/validate-testbed.compare.csv \
  out/validate-contention/validate-contention.compare.csv
