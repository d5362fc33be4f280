#!/usr/bin/env bash
# How much a testbed host's own shaped queue holds while a live run sends (root): runs
# `simctl run --live SCENARIO ARGS...` with live.placement=testbed and live.prefix=qtr, polls
# `tc -s qdisc show dev eth0` in host HOST's namespace every 50 ms meanwhile, and prints the
# backlog's distribution in bytes and in ms at the cap RATE (bit/s). Issue 17's lead: Horovod's
# coordinator messages wait behind what the ring's TCP keeps in that queue.
#
#   scripts/testbed-qdisc-trace.sh HOST RATE_BPS SCENARIO [simctl args...]
#   e.g. scripts/testbed-qdisc-trace.sh 3 1e9 scenarios/fig9.yaml \
#          --set "sweep.topology.params.servers=[8]" --set "sweep.topology.params.nic_egress_bandwidth=[1Gbps]" \
#          --set "workload.models=[resnet50]" --set workload.steps=2 \
#          --set "workload.systems=[{label: horovod, kind: horovod}]" --set live.compute=sleep
set -euo pipefail
cd "$(dirname "$0")/.."
[[ $# -ge 3 ]] || { sed -n 2,11p "$0" >&2; exit 2; }
host=$1 rate=$2 scenario=$3
shift 3
simctl=${SIMCTL:-build/sim/simctl/simctl}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$simctl" run --live "$scenario" "$@" --set live.placement=testbed --set live.prefix=qtr \
  -o "$out/run" --no-progress > "$out/simctl.log" 2>&1 &
run=$!
while kill -0 "$run" 2> /dev/null; do
  ip netns exec "qtr-h$host" tc -s qdisc show dev eth0 2> /dev/null |
    grep -o 'backlog [0-9]*b' | head -1 | tr -dc '0-9\n' >> "$out/backlog" || true
  sleep 0.05
done
wait "$run" || { cat "$out/simctl.log" >&2; exit 1; }
cat "$out/simctl.log"
sort -n "$out/backlog" | awk -v rate="$rate" -v host="$host" 'NF { a[n++] = $1 }
  END {
    if (n == 0) { print "no samples (the testbed was not up long enough)"; exit 1 }
    ms = 8e3 / rate
    printf "host %s eth0 backlog over %d samples: median %d B (%.2f ms), p90 %d B (%.2f ms), max %d B (%.2f ms)\n",
      host, n, a[int(n/2)], a[int(n/2)] * ms, a[int(n*0.9)], a[int(n*0.9)] * ms,
      a[n-1], a[n-1] * ms
  }'
