#!/usr/bin/env bash
# scripts/validate-testbed.sh --runs 2 with a stand-in simctl (no testbed, no root): both runs are
# kept under ADAPTSIM_OUT/validate-runs/, and the second table scores the last run's simulated
# step (220 ms) against the mean of the two live runs (100 and 300 ms): +10.0 %, where the last
# run alone gives -26.7 %.
set -euo pipefail
root="$1"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/build/sim/simctl"
cat > "$work/build/sim/simctl/simctl" <<'EOF'
#!/usr/bin/env bash
# compare SCENARIO ... -o DIR ...: one row, live 100 ms in the first run and 300 ms in the second
set -euo pipefail
scenario="$2"; name="$(basename "$scenario" .yaml)"; dir=""
while [ $# -gt 0 ]; do [ "$1" = -o ] && dir="$2"; shift; done
count="$(dirname "$0")/runs"
run=$(( $(cat "$count" 2>/dev/null || echo 0) + 1 ))
[ "$name" = validate-contention ] && echo "$run" > "$count"
live=$(( run == 1 ? 100 : 300 ))
mkdir -p "$dir"
printf '%s\n%s\n' \
  "model,system,n_gpus,sim_step_ms,live_step_ms,sim_step_std_ms,live_step_std_ms,sim_throughput_per_gpu,live_throughput_per_gpu,sim_seeds,sim_seed_std_ms,rel_error" \
  "mobilenetv2,star,4,220,$live,1,2,3,4,32,5,$(/usr/bin/python3 -c "print((220 - $live) / $live)")" \
  > "$dir/$name.compare.csv"
EOF
chmod +x "$work/build/sim/simctl/simctl"
ADAPTSIM_BUILD="$work/build" ADAPTSIM_OUT="$work/out" "$root/scripts/validate-testbed.sh" --runs 2 500Mbps \
  > "$work/log" 2>&1 || { cat "$work/log"; echo "FAIL: validate-testbed.sh exited non-zero"; exit 1; }
cat "$work/log"
for f in run-1/validate-testbed-500Mbps/validate-testbed.compare.csv \
         run-2/validate-contention/validate-contention.compare.csv; do
  [ -s "$work/out/validate-runs/$f" ] || { echo "FAIL: validate-runs/$f missing"; exit 1; }
done
grep -q '| validate-testbed-500Mbps | 4 | mobilenetv2 | star | 220.0 | 300.0 | 2.0 | -26.7% |' "$work/log" ||
  { echo "FAIL: the last run's row"; exit 1; }
grep -q '| validate-testbed-500Mbps | 4 | mobilenetv2 | star | 220.0 | 200.0 | 2 | 100.0% | +10.0% |' "$work/log" ||
  { echo "FAIL: the pooled row"; exit 1; }
grep -q 'Against the mean of the 2 live runs' "$work/log" || { echo "FAIL: no pooled table"; exit 1; }
echo PASS
