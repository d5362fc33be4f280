#!/usr/bin/env bash
# Issue 20 item 1: `cmake --install` into a temporary prefix, then the installed tools from a
# folder outside the repository: simctl finds a shipped scenario by name (share/adaptsim, not the
# source tree), runs it (its ../topologies and ../traces references resolve), lists the shipped
# topologies, rejects an unknown name with one line and exit 2; calibrate --help; the helper
# tools simctl starts are installed beside it; the bash completion is installed and completes.
#
#   install_test.sh CMAKE BUILD_DIR WORK_DIR
set -euo pipefail
cmake=$1 build=$2 work=$3
fail() { echo "FAIL: $*" >&2; exit 1; }

rm -rf "$work"
mkdir -p "$work/elsewhere"
prefix=$work/prefix
"$cmake" --install "$build" --prefix "$prefix" > "$work/install.log" || {
  cat "$work/install.log"; fail "cmake --install"; }

for tool in simctl calibrate adaptsim-tcp adaptsim-live adaptsim-testbed adaptsim-traffic; do
  [ -x "$prefix/bin/$tool" ] || fail "bin/$tool not installed"
done
for f in scenarios/fig9.yaml topologies/cloud-vms.yaml traces/devices/k80-half.yaml \
         traces/calibration/testbed-1Gbps.yaml plots/compare.py; do
  [ -f "$prefix/share/adaptsim/$f" ] || fail "share/adaptsim/$f not installed"
done
[ -f "$prefix/share/bash-completion/completions/simctl" ] || fail "completion not installed"

cd "$work/elsewhere"
simctl=$prefix/bin/simctl

# A bare name: the installed scenarios/fig9.yaml (the installed data comes before the source tree).
out=$("$simctl" validate fig9) || fail "simctl validate fig9: $out"
echo "$out"
case $out in
  "$prefix/share/adaptsim/scenarios/fig9.yaml: ok"*) ;;
  *) fail "simctl validate fig9 did not use the installed scenario: $out" ;;
esac
"$simctl" validate fig9.yaml > /dev/null || fail "simctl validate fig9.yaml"

# A quick run: one model, one system, 1 and 2 servers, one egress cap.
"$simctl" run fig9 --no-progress -o run --set workload.models=[mobilenetv2] \
  --set "workload.systems=[{label: kungfu, kind: kungfu, strategy: STAR}]" \
  --set "sweep.topology.params.servers=[1,2]" \
  --set "sweep.topology.params.nic_egress_bandwidth=[10Gbps]" \
  --set workload.steps=2 || fail "simctl run fig9"
[ -s run/fig9.csv ] || fail "simctl run fig9 wrote no run/fig9.csv"
rows=$(($(wc -l < run/fig9.csv) - 1))
[ "$rows" -eq 2 ] || fail "run/fig9.csv has $rows rows, expected 2"

"$simctl" list topologies | grep -q cloud-vms.yaml || fail "simctl list topologies"

# An unknown name: one line naming where it looked, exit 2, nothing written.
set +e
err=$("$simctl" run no-such-scenario 2>&1 >/dev/null)
rc=$?
set -e
echo "$err"
[ "$rc" -eq 2 ] || fail "unknown scenario: exit $rc, expected 2"
[ "$(printf '%s\n' "$err" | wc -l)" -eq 1 ] || fail "unknown scenario: more than one line"
case $err in
  *no-such-scenario*"$prefix/share/adaptsim/scenarios/"*) ;;
  *) fail "unknown scenario: the error does not name the installed scenarios folder: $err" ;;
esac
[ ! -e out ] || fail "unknown scenario wrote out/"

help=$("$prefix/bin/calibrate" --help) || fail "calibrate --help"
for part in Usage: Options: Examples: "Exit codes"; do
  case $help in *"$part"*) ;; *) fail "calibrate --help has no $part" ;; esac
done

# The completion, as bash loads it (without the bash-completion package's helpers).
PATH=$prefix/bin:$PATH bash -c '
  set -u
  source "$1"
  COMP_WORDS=(simctl r); COMP_CWORD=1; _simctl
  [[ " ${COMPREPLY[*]} " == *" run "* ]] || { echo "no run: ${COMPREPLY[*]}"; exit 1; }
  COMP_WORDS=(simctl run fig); COMP_CWORD=2; _simctl
  [[ " ${COMPREPLY[*]} " == *" fig9 "* ]] || { echo "no fig9: ${COMPREPLY[*]}"; exit 1; }
  COMP_WORDS=(simctl run fig9 --thr); COMP_CWORD=3; _simctl
  [[ " ${COMPREPLY[*]} " == *" --threads "* ]] || { echo "no --threads: ${COMPREPLY[*]}"; exit 1; }
' _ "$prefix/share/bash-completion/completions/simctl" || fail "bash completion"
echo "install test passed"
