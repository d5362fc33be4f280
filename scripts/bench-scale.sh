#!/usr/bin/env bash
# The speed-and-scale table (docs/performance.md), rerunnable: each case is one simctl command,
# timed with /usr/bin/time (wall seconds, peak RSS); a case past its time limit reads ">LIMIT".
# With --base, the same cases run with a second simctl (e.g. a build of an older commit) in the
# same run, so the ratio column compares the two on one machine at one time.
#
#   scripts/bench-scale.sh                      # every case
#   scripts/bench-scale.sh ring1024 mbts64      # some cases (names below)
#   scripts/bench-scale.sh --base /path/to/old/simctl --limit 300 ring1024
#   SIMCTL=path/to/simctl scripts/bench-scale.sh
#
# Cases: ring1024 ring2048 ring4096 (one CLASSIC_RING all-reduce of 1 GiB, one switch, 50 GB/s
# NICs; folded onto one server, SimFabric::fold_servers), ring1024-full ring4096-full (the same
# with every rank simulated: workload.fold_servers=false), mbts32 mbts64 mbts512 (the same
# with MULTI_BINARY_TREE_STAR), fig9 fig9-t1 (the shipped Figure 9, default threads and
# --threads 1), fig9-slowest (its slowest task: 32 VMs, 1 Gbit/s,
# ResNet-50, MULTI_BINARY_TREE_STAR), train256-maxmin train256-bottleneck train1024-bottleneck
# (ResNet-50 training, MULTI_BINARY_TREE_STAR, 10 Gbit/s egress, one thread), train1024-horovod,
# jobs50 (scenarios/jobs.yaml: 50 jobs on a 64-GPU fat tree, FIFO and elastic, default threads;
# the shipped scenario adds elastic-fair, a third task).
set -euo pipefail
cd "$(dirname "$0")/.."
SIMCTL=${SIMCTL:-build/sim/simctl/simctl}
base=""
limit=600
cases=()
while [[ $# -gt 0 ]]; do
  case $1 in
    --base) base=$2; shift 2 ;;
    --limit) limit=$2; shift 2 ;;
    -h|--help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "bench-scale: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) cases+=("$1"); shift ;;
  esac
done
[[ -x $SIMCTL ]] || { echo "bench-scale: $SIMCTL not built (scripts/build.sh)" >&2; exit 2; }
[[ -z $base || -x $base ]] || { echo "bench-scale: --base $base is not an executable" >&2; exit 2; }
[[ -x /usr/bin/time ]] || { echo "bench-scale: /usr/bin/time missing (apt-get install time)" >&2; exit 2; }
all=(ring1024 ring2048 ring4096 ring1024-full mbts32 mbts64 mbts512 fig9 fig9-t1 fig9-slowest
     train256-maxmin train256-bottleneck train1024-bottleneck train1024-horovod jobs50)
[[ ${#cases[@]} -gt 0 ]] || cases=("${all[@]}")

# The arguments after `simctl` for each case (into ARGS), and its target (issue 18's table).
allreduce() {  # strategy ranks
  ARGS=(run scenarios/allreduce.yaml --threads 1 --set "topology.params.servers=$2"
        --set topology.params.nic_bandwidth=400Gbps --set "workload.strategies=[$1]"
        --set workload.min_bytes=1GiB --set workload.max_bytes=1GiB)
}
training() {  # servers sharing system
  ARGS=(run scenarios/fig9.yaml --threads 1 --set "sweep.topology.params.servers=[$1]"
        --set "sweep.topology.params.nic_egress_bandwidth=[10Gbps]" --set "workload.sharing=$2"
        --set "workload.models=[resnet50]" --set "workload.systems=[$3]")
}
mbts="{label: kungfu-mbts, kind: kungfu, strategy: MULTI_BINARY_TREE_STAR}"
case_args() {
  case $1 in
    ring1024) allreduce CLASSIC_RING 1024 ;;
    ring2048) allreduce CLASSIC_RING 2048 ;;
    ring4096) allreduce CLASSIC_RING 4096 ;;
    ring1024-full) allreduce CLASSIC_RING 1024; ARGS+=(--set workload.fold_servers=false) ;;
    ring4096-full) allreduce CLASSIC_RING 4096; ARGS+=(--set workload.fold_servers=false) ;;
    mbts32) allreduce MULTI_BINARY_TREE_STAR 32 ;;
    mbts64) allreduce MULTI_BINARY_TREE_STAR 64 ;;
    mbts512) allreduce MULTI_BINARY_TREE_STAR 512 ;;
    fig9) ARGS=(run scenarios/fig9.yaml) ;;
    fig9-t1) ARGS=(run scenarios/fig9.yaml --threads 1) ;;
    fig9-slowest)
      ARGS=(run scenarios/fig9.yaml --threads 1 --set "sweep.topology.params.servers=[32]"
            --set "sweep.topology.params.nic_egress_bandwidth=[1Gbps]"
            --set "workload.models=[resnet50]" --set "workload.systems=[$mbts]") ;;
    train256-maxmin) training 256 max-min "$mbts" ;;
    train256-bottleneck) training 256 bottleneck "$mbts" ;;
    train1024-bottleneck) training 1024 bottleneck "$mbts" ;;
    train1024-horovod) training 1024 bottleneck "{label: horovod, kind: horovod}" ;;
    jobs50) ARGS=(run scenarios/jobs.yaml --set "workload.schedulers=[fifo, elastic]") ;;
    *) echo "bench-scale: unknown case $1 (see --help)" >&2; exit 2 ;;
  esac
}
target() {
  case $1 in
    ring1024) echo "<= 0.5 s" ;; ring2048) echo "<= 2 s" ;; ring4096) echo "<= 10 s, <= 512 MB" ;;
    mbts512) echo "<= 30 s" ;; fig9) echo "<= 2 s" ;; fig9-t1) echo "<= 4 s" ;;
    fig9-slowest) echo "<= 0.3 s" ;; train256-maxmin) echo "<= 5 s" ;;
    train256-bottleneck) echo "<= 1 s" ;; train1024-bottleneck) echo "<= 10 s, <= 256 MB" ;;
    jobs50) echo "<= 30 s (issue 20)" ;;
    *) echo "-" ;;
  esac
}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Runs one case with one simctl; prints "wall rss_MB" or ">limit -".
measure() {  # simctl case
  case_args "$2"
  rm -rf "$work/out"
  if timeout "$limit" /usr/bin/time -f "%e %M" -o "$work/time" "$1" "${ARGS[@]}" \
      -o "$work/out" --no-progress >/dev/null 2>"$work/err"; then
    read -r wall rss_kb <"$work/time"
    echo "$wall $((rss_kb / 1024))"
  elif [[ $? -eq 124 ]]; then
    echo ">$limit -"
  else
    echo "bench-scale: case $2 failed with $1:" >&2
    cat "$work/err" >&2
    exit 1
  fi
}

for c in "${cases[@]}"; do case_args "$c"; done  # unknown names fail before any output
if [[ -n $base ]]; then
  echo "| case | wall (s) | peak RSS (MB) | base wall (s) | base RSS (MB) | speed-up | target |"
  echo "|---|---|---|---|---|---|---|"
else
  echo "| case | wall (s) | peak RSS (MB) | target |"
  echo "|---|---|---|---|"
fi
for c in "${cases[@]}"; do
  read -r wall rss <<<"$(measure "$SIMCTL" "$c")"
  if [[ -n $base ]]; then
    read -r bwall brss <<<"$(measure "$base" "$c")"
    ratio=$(/usr/bin/python3 -c "
import sys
a, b = sys.argv[1], sys.argv[2]
try: print(f'{float(b) / float(a):.1f}x')
except ValueError: print('-')" "${wall#>}" "${bwall#>}")
    [[ $bwall == ">"* && $wall != ">"* ]] && ratio="> ${ratio}"
    printf '| %s | %s | %s | %s | %s | %s | %s |\n' "$c" "$wall" "$rss" "$bwall" "$brss" "$ratio" \
      "$(target "$c")"
  else
    printf '| %s | %s | %s | %s |\n' "$c" "$wall" "$rss" "$(target "$c")"
  fi
done
