#!/usr/bin/env bash
# The README's large-cluster figure, rerunnable: Figure 9's ResNet-50 training at N one-GPU VMs
# (10 Gbit/s egress, bottleneck sharing), one system at a time on one thread, with wall time and
# peak memory from /usr/bin/time. Prints a Markdown table.
#
#   scripts/bench-scale.sh                 # 1024 VMs: kungfu-mbts and horovod
#   scripts/bench-scale.sh 256 512 1024    # several sizes
#   SIMCTL=path/to/simctl scripts/bench-scale.sh
set -euo pipefail
cd "$(dirname "$0")/.."
SIMCTL=${SIMCTL:-build/sim/simctl/simctl}
[[ -x $SIMCTL ]] || { echo "bench-scale: $SIMCTL not built (scripts/build.sh)" >&2; exit 2; }
[[ -x /usr/bin/time ]] || { echo "bench-scale: /usr/bin/time missing (apt-get install time)" >&2; exit 2; }
sizes=("$@")
[[ ${#sizes[@]} -gt 0 ]] || sizes=(1024)
systems=("{label: kungfu-mbts, kind: kungfu, strategy: MULTI_BINARY_TREE_STAR}"
         "{label: horovod, kind: horovod}")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "| VMs | system | wall (s) | peak RSS (MB) | step time (ms) |"
echo "|---|---|---|---|---|"
for n in "${sizes[@]}"; do
  for system in "${systems[@]}"; do
    label=$(sed -E 's/.*label: ([^,]+),.*/\1/' <<<"$system")
    out="$work/$n-$label"
    /usr/bin/time -f "%e %M" -o "$work/time" "$SIMCTL" run scenarios/fig9.yaml -o "$out" \
      --threads 1 --no-progress \
      --set "sweep.topology.params.servers=[$n]" \
      --set "sweep.topology.params.nic_egress_bandwidth=[10Gbps]" \
      --set workload.sharing=bottleneck --set "workload.models=[resnet50]" \
      --set "workload.systems=[$system]" >/dev/null
    read -r wall rss_kb <"$work/time"
    step_ms=$(/usr/bin/python3 - "$out/fig9.csv" <<'PY'
import csv, sys
row = next(csv.DictReader(open(sys.argv[1])))
print(row["step_time_ms_mean"])
PY
)
    printf '| %s | %s | %s | %d | %s |\n' "$n" "$label" "$wall" $((rss_kb / 1024)) "$step_ms"
  done
done
