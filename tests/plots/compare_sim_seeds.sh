#!/bin/sh
# simctl compare --sim-seeds 3: the simulated step time of each row is the mean of the runs with
# seeds 1, 2, 3 (each checked against `simctl run --seed K`), sim_seed_std_ms is their sample
# standard deviation, and the manifest names the seeds.
#   compare_sim_seeds.sh SIMCTL SCENARIO WORKDIR
set -eu
simctl="$1"; scenario="$2"; dir="$3"
rm -rf "$dir"; mkdir -p "$dir"
"$simctl" compare "$scenario" --sim-seeds 3 -o "$dir/cmp" > "$dir/compare.log"
for k in 1 2 3; do "$simctl" run "$scenario" --seed "$k" -o "$dir/run$k" > /dev/null; done
grep -q '"sim_seeds": \[' "$dir/cmp/compare-local.compare.json"
tr -d ' \n' < "$dir/cmp/compare-local.compare.json" | grep -q '"sim_seeds":\[1,2,3\]' || {
  echo "manifest does not list seeds 1,2,3"; exit 1; }
/usr/bin/env python3 - "$dir" <<'PY'
import csv, statistics, sys
d = sys.argv[1]
cmp = list(csv.DictReader(open(f"{d}/cmp/compare-local.compare.csv")))
runs = [list(csv.DictReader(open(f"{d}/run{k}/compare-local.csv"))) for k in (1, 2, 3)]
assert len(cmp) == len(runs[0]) > 0, "row count"
for i, row in enumerate(cmp):
    steps = [float(r[i]["step_time_ms_mean"]) for r in runs]
    mean, std = statistics.mean(steps), statistics.stdev(steps)
    assert row["sim_seeds"] == "3", row["sim_seeds"]
    assert abs(float(row["sim_step_ms"]) - mean) <= 1e-3, (row["sim_step_ms"], steps)
    assert abs(float(row["sim_seed_std_ms"]) - std) <= 1e-3, (row["sim_seed_std_ms"], steps)
    live = float(row["live_step_ms"])
    assert abs(float(row["rel_error"]) - (mean - live) / live) <= 1e-4, row
    print(f"row {i}: seeds {steps} -> mean {mean:.3f} std {std:.3f} ok")
PY
