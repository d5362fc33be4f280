#!/bin/sh
# simctl compare --live-runs 2: the live step time of each row is the mean of the two live runs'
# (each run's step mean kept in the manifest's live_run_step_ms), live_run_std_ms is their sample
# standard deviation, live_runs says 2, and the error is taken against that mean; one run (the
# default) writes live_runs 1 and a spread of 0.
#   compare_live_runs.sh SIMCTL SCENARIO WORKDIR
set -eu
simctl="$1"; scenario="$2"; dir="$3"
rm -rf "$dir"; mkdir -p "$dir"
"$simctl" compare "$scenario" --live-runs 2 -o "$dir/two" > "$dir/two.log"
"$simctl" compare "$scenario" -o "$dir/one" > "$dir/one.log"
/usr/bin/env python3 - "$dir" <<'PY'
import csv, json, statistics, sys
d = sys.argv[1]
for name, runs in (("two", 2), ("one", 1)):
    rows = list(csv.DictReader(open(f"{d}/{name}/compare-local.compare.csv")))
    manifest = json.load(open(f"{d}/{name}/compare-local.compare.json"))
    assert manifest["live_runs"] == runs, manifest["live_runs"]
    steps_per_row = manifest["live_run_step_ms"]
    assert len(rows) == len(steps_per_row) > 0, "row count"
    for row, steps in zip(rows, steps_per_row):
        assert row["live_runs"] == str(runs), row["live_runs"]
        assert len(steps) == runs, steps
        mean = statistics.mean(steps)
        std = statistics.stdev(steps) if runs > 1 else 0.0
        assert all(s > 0 for s in steps), steps
        assert abs(float(row["live_step_ms"]) - mean) <= 1e-3, (row["live_step_ms"], steps)
        assert abs(float(row["live_run_std_ms"]) - std) <= 1e-3, (row["live_run_std_ms"], steps)
        sim = float(row["sim_step_ms"])
        assert abs(float(row["rel_error"]) - (sim - mean) / mean) <= 1e-4, row
        print(f"{name}: live runs {steps} -> mean {mean:.3f} std {std:.3f} ok")
PY
