#!/usr/bin/python3
"""Simulated all-reduce times against measured ones: per strategy and size, the error of each
simulated variant (the sweep columns of the simulated CSV) against the measurement, and the mean
absolute error per variant. Printed as CSV.

Usage: /usr/bin/python3 plots/allreduce_vs_measured.py SIM.csv MEASURED.csv
  SIM.csv: simctl run of an allreduce scenario; MEASURED.csv: calibrate's CSV (its all_reduce
  rows; the class is ignored, so one class per file).
"""
import sys

import pandas as pd

if len(sys.argv) != 3:
    sys.exit(__doc__)
sim = pd.read_csv(sys.argv[1])
measured = pd.read_csv(sys.argv[2])
measured = measured[measured["collective"] == "all_reduce"]
measured = measured.rename(columns={"algorithm": "strategy", "time_us": "measured_us"})
measured = measured[["strategy", "size_bytes", "measured_us"]]
fixed = {"mode", "topology", "n_ranks", "strategy", "size_bytes", "count", "dtype", "time_us",
         "algbw_GBps", "busbw_GBps"}
variants = [c for c in sim.columns if c not in fixed]
rows = sim.merge(measured, on=["strategy", "size_bytes"], how="inner")
if rows.empty:
    sys.exit("no (strategy, size) of the simulated CSV was measured")
rows["error_pct"] = 100 * (rows["time_us"] - rows["measured_us"]) / rows["measured_us"]
keys = variants + ["strategy", "size_bytes"]
print(rows[keys + ["measured_us", "time_us", "error_pct"]].sort_values(keys).to_csv(
    index=False, float_format="%.1f"), end="")
summary = rows.groupby(variants if variants else lambda _: "all")["error_pct"].agg(
    mean_abs_error_pct=lambda e: e.abs().mean(), points="count")
print(summary.to_csv(float_format="%.1f"), end="")
