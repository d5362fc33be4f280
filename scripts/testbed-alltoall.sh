#!/usr/bin/env bash
# Measures how evenly TCP splits the testbed's ports when every host sends to every other (the
# traffic of the multi-root strategies, MULTI_STAR and CLIQUE; docs/validation.md): N hosts, one
# iperf3 stream per ordered pair for SECONDS, CUBIC; prints each stream's goodput, their
# coefficient of variation and min / mean. Compare with the flow model's
# `build/bench/adaptsim_share_spread N`. Needs root.
#   scripts/testbed-alltoall.sh [HOSTS=4] [CAP=500Mbps] [SECONDS=10]
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
build="${ADAPTSIM_BUILD:-$here/build}"
hosts="${1:-4}"; cap="${2:-500Mbps}"; secs="${3:-10}"
[ "$(id -u)" = 0 ] || { echo "testbed-alltoall.sh: needs root (network namespaces)" >&2; exit 2; }
out="$(mktemp -d)"
allowed="$(sysctl -n net.ipv4.tcp_allowed_congestion_control)"
trap 'sysctl -q -w net.ipv4.tcp_allowed_congestion_control="$allowed"; rm -rf "$out"' EXIT
sysctl -q -w net.ipv4.tcp_allowed_congestion_control="$allowed cubic"
export A2A_HOSTS="$hosts" A2A_SECONDS="$secs" A2A_OUT="$out"
"$build/hw/testbed/adaptsim-testbed" run "$here/topologies/cloud-vms.yaml" \
  --set "servers=$hosts" --set "nic_bandwidth=$cap" --set "nic_queue=100ms" -- bash -c '
  set -euo pipefail
  IFS=, read -r -a ips <<< "$ADAPTSIM_TESTBED_HOSTS"
  IFS=, read -r -a nss <<< "$ADAPTSIM_TESTBED_NS"
  for ns in "${nss[@]}"; do ip netns exec "$ns" sysctl -q -w net.ipv4.tcp_congestion_control=cubic; done
  port() { echo $((5300 + $1 * 64 + $2)); }
  for d in $(seq 0 $((A2A_HOSTS - 1))); do
    for s in $(seq 0 $((A2A_HOSTS - 1))); do
      [ "$s" = "$d" ] || ip netns exec "${nss[$d]}" iperf3 -s -1 -p "$(port "$s" "$d")" -D
    done
  done
  sleep 0.5
  for d in $(seq 0 $((A2A_HOSTS - 1))); do
    for s in $(seq 0 $((A2A_HOSTS - 1))); do
      [ "$s" = "$d" ] && continue
      ip netns exec "${nss[$s]}" iperf3 -c "${ips[$d]}" -p "$(port "$s" "$d")" -t "$A2A_SECONDS" -J \
        > "$A2A_OUT/$s-$d.json" &
    done
  done
  wait
'
/usr/bin/python3 - "$out" <<'PY'
import glob, json, os, statistics, sys
rates = {}
for f in glob.glob(os.path.join(sys.argv[1], "*.json")):
    s, d = os.path.basename(f)[:-5].split("-")
    rates[(int(s), int(d))] = json.load(open(f))["end"]["sum_received"]["bits_per_second"] / 1e6
for (s, d), r in sorted(rates.items()):
    print(f"{s}>{d}: {r:.1f} Mbit/s")
v = list(rates.values())
mean = statistics.mean(v)
print(f"{len(v)} streams, total {sum(v):.0f} Mbit/s: stream CV {statistics.stdev(v) / mean:.3f}, "
      f"min / mean {min(v) / mean:.2f}")
PY
