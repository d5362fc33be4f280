#!/usr/bin/env bash
# Measures what a fan-in does to a testbed port (docs/validation.md, "standing queues"): N hosts
# send to host 0 with iperf3; prints each sender's goodput, the smoothed RTT its kernel measures
# mid-run (`ss -ti`: path + the queue the senders keep in host 0's port) and the retransmitted
# segments, and the coefficient of variation of the senders' shares (workload.share_cv of the
# validation scenarios). Needs root.
#   [FANIN_CC=cubic] scripts/testbed-fanin.sh [SENDERS=2] [CAP=500Mbps] [QUEUE=100ms] [SECONDS=6]
# FANOUT=1 reverses every stream (iperf3 -R): host 0 sends to the N others through its own NIC,
# a fan-out, and the shares printed are those of one host's sockets sharing its NIC.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
build="${ADAPTSIM_BUILD:-$here/build}"
senders="${1:-2}"; cap="${2:-500Mbps}"; queue="${3:-100ms}"; secs="${4:-6}"
export FANIN_SENDERS="$senders" FANIN_SECONDS="$secs" FANIN_REVERSE="${FANOUT:+-R}"
if [ -n "${FANIN_CC:-}" ]; then
  # A namespace's default congestion control must be in the machine's allowed list; add it for
  # the run and put the list back afterwards.
  allowed="$(sysctl -n net.ipv4.tcp_allowed_congestion_control)"
  trap 'sysctl -q -w net.ipv4.tcp_allowed_congestion_control="$allowed"' EXIT
  sysctl -q -w net.ipv4.tcp_allowed_congestion_control="$allowed $FANIN_CC"
fi
"$build/hw/testbed/adaptsim-testbed" run "$here/topologies/cloud-vms.yaml" \
  --set "servers=$((senders + 1))" --set "nic_bandwidth=$cap" --set "nic_queue=$queue" -- bash -c '
  set -euo pipefail
  IFS=, read -r -a ips <<< "$ADAPTSIM_TESTBED_HOSTS"
  IFS=, read -r -a nss <<< "$ADAPTSIM_TESTBED_NS"
  if [ -n "${FANIN_CC:-}" ]; then
    for ns in "${nss[@]}"; do ip netns exec "$ns" sysctl -q -w "net.ipv4.tcp_congestion_control=$FANIN_CC"; done
  fi
  echo "congestion control: $(ip netns exec "${nss[1]}" sysctl -n net.ipv4.tcp_congestion_control)"
  retrans() { ip netns exec "$1" nstat -az TcpRetransSegs | awk "/TcpRetransSegs/ {print \$2}"; }
  for s in $(seq 1 "$FANIN_SENDERS"); do
    ip netns exec "${nss[0]}" iperf3 -s -1 -p $((5200 + s)) -D
  done
  sleep 0.5
  # The sending side of stream s: host s, or host 0 in a fan-out (its socket to host s).
  sender_ns() { if [ -n "$FANIN_REVERSE" ]; then echo "${nss[0]}"; else echo "${nss[$1]}"; fi; }
  peer_ip() { if [ -n "$FANIN_REVERSE" ]; then echo "${ips[$1]}"; else echo "${ips[0]}"; fi; }
  senders_ns() { if [ -n "$FANIN_REVERSE" ]; then echo "${nss[0]}"; else echo "${nss[@]:1}"; fi; }
  before=0; for ns in $(senders_ns); do before=$((before + $(retrans "$ns"))); done
  for s in $(seq 1 "$FANIN_SENDERS"); do
    ip netns exec "${nss[$s]}" iperf3 -c "${ips[0]}" -p $((5200 + s)) -t "$FANIN_SECONDS" $FANIN_REVERSE -J \
      > "/tmp/fanin-$s.json" &
  done
  sleep 2
  for t in 1 2 3; do
    for s in $(seq 1 "$FANIN_SENDERS"); do
      rtt=$(ip netns exec "$(sender_ns "$s")" ss -tin dst "$(peer_ip "$s")" | grep -o "rtt:[0-9.]*/[0-9.]*" | sed "s/rtt://" | sort -g | tail -1)
      echo "t+$((t + 1))s stream $s: $rtt ms (srtt/rttvar of the busiest connection from its sender)"
    done
    sleep 1
  done
  wait
  after=0; for ns in $(senders_ns); do after=$((after + $(retrans "$ns"))); done
  python3 - "$FANIN_SENDERS" <<"PY"
import json, statistics, sys
n = int(sys.argv[1])
rates = [json.load(open(f"/tmp/fanin-{s}.json"))["end"]["sum_received"]["bits_per_second"] / 1e6
         for s in range(1, n + 1)]
for s, r in enumerate(rates, 1):
    print(f"sender {s}: {r:.1f} Mbit/s received")
print(f"total {sum(rates):.1f} Mbit/s")
if n > 1:
    print(f"share CV (stdev / mean of the sender goodputs): {statistics.stdev(rates) / statistics.mean(rates):.3f}")
PY
  echo "retransmitted segments during the run: $((after - before))"
'
