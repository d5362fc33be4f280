#!/usr/bin/env bash
# Traces TCP's per-connection state during one live row on the testbed (docs/validation.md, items
# 10 and 14): runs `simctl run --live` on one row of scenarios/validate-testbed.yaml while
# `ss -tin` is polled in every host namespace (~0.15 s apart), then prints each connection's
# goodput per interval (plots/ss_trace.py). Needs root.
#   scripts/testbed-ss-trace.sh OUT SERVERS CAP MODEL STRATEGY [simctl --set ...]
#   e.g. scripts/testbed-ss-trace.sh out/trace 8 500Mbps mobilenetv2 STAR
# SCENARIO=scenarios/validate-contention.yaml traces a row of that scenario instead (its own
# host count: SERVERS only names the namespaces to poll).
# Then: /usr/bin/python3 plots/ss_trace.py OUT --window 0>3   (cwnd, ssthresh, RTT, send queue)
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
build="${ADAPTSIM_BUILD:-$here/build}"
if [ $# -lt 5 ]; then sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 2; fi
out="$1"; servers="$2"; cap="$3"; model="$4"; strategy="$5"; shift 5
[ "$(id -u)" = 0 ] || { echo "testbed-ss-trace.sh: needs root (network namespaces)" >&2; exit 2; }
prefix=sstrace
rm -rf "$out"; mkdir -p "$out"
poll() {
  while :; do
    for h in $(seq 0 $((servers - 1))); do
      ns="$prefix-h$h"
      ip netns list 2>/dev/null | grep -q "^$ns\b" || continue
      { date +%s.%N; ip netns exec "$ns" ss -tin 2>/dev/null || true; } >> "$out/ss-h$h.txt"
    done
    sleep 0.1
  done
}
poll & poller=$!
trap 'kill "$poller" 2>/dev/null || true' EXIT
scenario="${SCENARIO:-$here/scenarios/validate-testbed.yaml}"
hosts=(--set "sweep.topology.params.servers=[$servers]")
[ -z "${SCENARIO:-}" ] || hosts=()
"$build/sim/simctl/simctl" run --live "$scenario" -o "$out/run" --no-progress \
  --set "live.prefix=$prefix" --set "topology.params.nic_bandwidth=$cap" \
  "${hosts[@]}" --set "workload.models=[$model]" \
  --set "workload.systems=[{label: trace, kind: kungfu, strategy: $strategy}]" "$@"
kill "$poller" 2>/dev/null || true
/usr/bin/python3 "$here/plots/ss_trace.py" "$out"
