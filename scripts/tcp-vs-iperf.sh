#!/usr/bin/env bash
# adaptsim-tcp against iperf3 on the same path, in one run (issue 4's "honest speed" check):
# iperf3 (one stream for 4 s, then both directions at once) then an adaptsim-tcp 2-rank
# all-reduce of 64 MiB (STAR and CLASSIC_RING: each byte crosses the path once per direction,
# so busbw is the path's rate), on
#   1. loopback (two processes on this machine), and
#   2. with root: two testbed hosts joined by a bridge, NICs capped at CAP (default 1Gbps);
#      --loopback-only skips this (it creates network namespaces), as does a build without
#      adaptsim-testbed.
# Prints both rates and their ratio.
#   scripts/tcp-vs-iperf.sh [--loopback-only] [CAP]      (ADAPTSIM_BUILD: build folder, default build)
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
build="${ADAPTSIM_BUILD:-$here/build}"
loopback_only=0
if [ "${1:-}" = "--loopback-only" ]; then
  loopback_only=1
  shift
fi
cap="${1:-1Gbps}"
export TOOL="$build/hw/tcp/adaptsim-tcp"
for need in "$TOOL" "$(command -v iperf3 || true)"; do
  if [ -z "$need" ] || [ ! -x "$need" ]; then
    echo "tcp-vs-iperf: missing ${need:-iperf3} (build adaptsim-tcp, install iperf3)" >&2
    exit 2
  fi
done
measure='
  set -euo pipefail
  run() { if [ -n "${NS0:-}" ]; then ip netns exec "$1" "${@:2}"; else "${@:2}"; fi; }
  run "${NS0:-}" iperf3 -s -1 -p 5299 -B "$IP0" >/dev/null &
  sleep 0.5
  iperf=$(run "${NS1:-}" iperf3 -c "$IP0" -p 5299 -t 4 -O 1 -J |
    python3 -c "import json,sys; print(json.load(sys.stdin)[\"end\"][\"sum_received\"][\"bits_per_second\"] / 8e9)")
  wait
  # Both directions at once (iperf3 >= 3.7): an all-reduce sends both ways at the same time, so
  # where the two directions share a resource (loopback: the CPUs) this is the fair reference.
  run "${NS0:-}" iperf3 -s -1 -p 5299 -B "$IP0" >/dev/null &
  sleep 0.5
  bidir=$(run "${NS1:-}" iperf3 -c "$IP0" -p 5299 -t 4 -O 1 --bidir -J |
    python3 -c "import json,sys; e=json.load(sys.stdin)[\"end\"]; print((e[\"sum_received\"][\"bits_per_second\"] + e[\"sum_received_bidir_reverse\"][\"bits_per_second\"]) / 16e9)")
  wait
  out=$(mktemp -d)
  if [ -n "${NS0:-}" ]; then
    hosts="$IP0:7400,$IP1:7400"
    run "$NS0" "$TOOL" --hosts "$hosts" --rank 0 --bind "$IP0" $ARGS -o "$out" -q &
    run "$NS1" "$TOOL" --hosts "$hosts" --rank 1 --bind "$IP1" $ARGS -q
    wait
  else
    "$TOOL" --procs 2 $ARGS -o "$out" -q
  fi
  python3 - "$out/allreduce_tcp.csv" "$iperf" "$bidir" <<"PY"
import csv, sys
iperf, bidir = float(sys.argv[2]), float(sys.argv[3])
print(f"  iperf3 one stream: {iperf:.3f} GB/s; both directions at once: {bidir:.3f} GB/s each")
for row in csv.DictReader(open(sys.argv[1])):
    name, mib, bw = row["strategy"], int(row["size_bytes"]) >> 20, float(row["busbw_GBps"])
    print(f"  adaptsim-tcp {name:<13} {mib} MiB: busbw {bw:.3f} GB/s = {bw / iperf:.2f} x iperf3,"
          f" {bw / bidir:.2f} x iperf3 --bidir")
PY
  rm -rf "$out"
'
export ARGS="--strategy STAR,CLASSIC_RING --minbytes 64MiB --maxbytes 64MiB --iters 5 --warmup-iters 1"
echo "loopback (2 processes):"
IP0=127.0.0.1 bash -c "$measure"
testbed="$build/hw/testbed/adaptsim-testbed"
if [ "$loopback_only" = 1 ]; then
  :
elif [ ! -x "$testbed" ]; then
  echo "testbed: skipped ($testbed not built)"
elif [ "$(id -u)" = 0 ]; then
  echo "testbed (2 hosts, NICs capped at $cap):"
  export MEASURE="$measure"
  "$testbed" run "$here/topologies/cloud-vms.yaml" --set servers=2 \
    --set "nic_bandwidth=$cap" -- bash -c '
    IFS=, read -r -a ips <<< "$ADAPTSIM_TESTBED_HOSTS"
    IFS=, read -r -a nss <<< "$ADAPTSIM_TESTBED_NS"
    NS0=${nss[0]} NS1=${nss[1]} IP0=${ips[0]} IP1=${ips[1]} bash -c "$MEASURE"'
fi
