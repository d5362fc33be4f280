#!/usr/bin/env bash
# Calibrates the TCP path of an emulated testbed: builds the testbed from a topology, runs one
# `calibrate --backend tcp` rank per host (each inside its network namespace, host-list
# rendezvous), tears the testbed down, and leaves the profile in OUT_DIR. Needs root.
#
#   scripts/calibrate-testbed.sh TOPOLOGY OUT_DIR NAME [--set param=value]... [-- calibrate options]
#   scripts/calibrate-testbed.sh topologies/cloud-vms.yaml traces/calibration testbed-500M \
#       --set servers=4 --set nic_bandwidth=500Mbps
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
build="${ADAPTSIM_BUILD:-$here/build}"
topology="$1"; out_dir="$2"; name="$3"; shift 3
testbed_args=(); calibrate_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --) shift; calibrate_args=("$@"); break ;;
    *) testbed_args+=("$1"); shift ;;
  esac
done
mkdir -p "$out_dir"
out_dir="$(cd "$out_dir" && pwd)"
# Inside `adaptsim-testbed run`, ADAPTSIM_TESTBED_HOSTS and ADAPTSIM_TESTBED_NS list the hosts.
# calibrate's options travel in the environment: the testbed tool's command line takes only the
# command itself after "--".
export CALIBRATE_TOOL="$build/calibrate/calibrate" CALIBRATE_OUT="$out_dir" CALIBRATE_NAME="$name"
export CALIBRATE_ARGS="${calibrate_args[*]}"
exec "$build/hw/testbed/adaptsim-testbed" run "$topology" "${testbed_args[@]}" -- bash -c '
  set -euo pipefail
  IFS=, read -r -a ips <<< "$ADAPTSIM_TESTBED_HOSTS"
  IFS=, read -r -a nss <<< "$ADAPTSIM_TESTBED_NS"
  hosts=""
  for ip in "${ips[@]}"; do hosts="${hosts:+$hosts,}$ip:7300"; done
  pids=()
  for i in "${!ips[@]}"; do
    # shellcheck disable=SC2086
    ip netns exec "${nss[$i]}" "$CALIBRATE_TOOL" --backend tcp --hosts "$hosts" --rank "$i" \
      --bind "${ips[$i]}" -o "$CALIBRATE_OUT" --name "$CALIBRATE_NAME" -q $CALIBRATE_ARGS &
    pids+=($!)
  done
  status=0
  for p in "${pids[@]}"; do wait "$p" || status=$?; done
  exit $status
'
