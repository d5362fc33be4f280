#!/usr/bin/python3
"""Markdown table and summary of simctl compare outputs (docs/validation.md).

Usage: /usr/bin/python3 plots/validation_table.py A.compare.csv [B.compare.csv ...]
           [--pool-live C.compare.csv ...]

A run is named by the folder of its CSV (e.g. validate-testbed-1Gbps). --pool-live adds the live
step times of earlier runs of the same rows (matched by run name, hosts, model and system): the
live step time becomes the mean over the runs, each run weighted equally, the error is taken
against it, and the table gains the number of live runs and their spread ((max - min) / mean).
The simulated side always comes from the first CSVs.
"""
import argparse
import os
import sys

import pandas as pd


def load(paths):
    frames = []
    for path in paths:
        df = pd.read_csv(path)
        df.insert(0, "run", os.path.basename(os.path.dirname(os.path.abspath(path))))
        frames.append(df)
    return pd.concat(frames, ignore_index=True) if frames else None


parser = argparse.ArgumentParser(usage=__doc__)
parser.add_argument("csv", nargs="*")
parser.add_argument("--pool-live", nargs="+", default=[], metavar="CSV")
args = parser.parse_args()
df = load(args.csv)
if df is None:
    sys.exit(__doc__)
df = df.rename(columns={"n_gpus": "hosts"})  # one GPU per host on the testbed
key = ["run"] + [c for c in ["hosts", "model", "system"] if c in df.columns]
pooled = args.pool_live != []
if pooled:
    extra = load(args.pool_live).rename(columns={"n_gpus": "hosts"})
    live = pd.concat([df[key + ["live_step_ms"]], extra[key + ["live_step_ms"]]])
    stats = live.groupby(key, sort=False)["live_step_ms"].agg(["mean", "min", "max", "count"])
    stats = stats.reset_index()
    df = df.merge(stats, on=key, how="left", validate="one_to_one")
    df["live_step_ms"] = df["mean"]
    df["live_spread"] = (df["max"] - df["min"]) / df["mean"]
    df["rel_error"] = (df["sim_step_ms"] - df["live_step_ms"]) / df["live_step_ms"]
err = df["rel_error"].abs()
header = key + ["sim step (ms)", "live step (ms)"]
header += ["live runs", "live spread"] if pooled else ["live std (ms)"]
print("| " + " | ".join(header + ["error"]) + " |")
print("|" + "---|" * (len(header) + 1))
for r in df.itertuples():
    cells = [str(getattr(r, c)) for c in key]
    cells += [f"{r.sim_step_ms:.1f}", f"{r.live_step_ms:.1f}"]
    if pooled:
        cells += [str(int(r.count)), f"{100 * r.live_spread:.1f}%"]
    else:
        cells += [f"{r.live_step_std_ms:.1f}"]
    cells += [f"{100 * r.rel_error:+.1f}%"]
    print("| " + " | ".join(cells) + " |")
print()
print(f"rows: {len(df)}; median |error| {100 * err.median():.1f}%; max |error| {100 * err.max():.1f}% "
      f"({df.loc[err.idxmax(), 'model']}/{df.loc[err.idxmax(), 'system']}, {df.loc[err.idxmax(), 'run']}); "
      f"beyond 15%: {int((err > 0.15).sum())}")
for run, g in df.groupby("run", sort=False):
    e = g["rel_error"].abs()
    print(f"  {run}: {len(g)} rows, median {100 * e.median():.1f}%, max {100 * e.max():.1f}%")
if pooled:
    s = df["live_spread"]
    print(f"live spread between runs: median {100 * s.median():.1f}%, max {100 * s.max():.1f}%")
print()
print("median |error| by system: " + ", ".join(
    f"{system} {100 * g['rel_error'].abs().median():.1f}%"
    for system, g in df.groupby("system", sort=False)))
