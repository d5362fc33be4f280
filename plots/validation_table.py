#!/usr/bin/python3
"""Markdown table and summary of simctl compare outputs (docs/validation.md).

Usage: /usr/bin/python3 plots/validation_table.py A.compare.csv [B.compare.csv ...]
"""
import os
import sys

import pandas as pd

frames = []
for path in sys.argv[1:]:
    df = pd.read_csv(path)
    df.insert(0, "run", os.path.basename(os.path.dirname(path)))
    frames.append(df)
if not frames:
    sys.exit(__doc__)
df = pd.concat(frames, ignore_index=True)
err = df["rel_error"].abs()
df = df.rename(columns={"n_gpus": "hosts"})  # one GPU per host on the testbed
cols = ["run"] + [c for c in ["hosts", "model", "system"] if c in df.columns]
print("| " + " | ".join(cols + ["sim step (ms)", "live step (ms)", "live std (ms)", "error"]) + " |")
print("|" + "---|" * (len(cols) + 4))
for r in df.itertuples():
    cells = [str(getattr(r, c)) for c in cols]
    cells += [f"{r.sim_step_ms:.1f}", f"{r.live_step_ms:.1f}", f"{r.live_step_std_ms:.1f}",
              f"{100 * r.rel_error:+.1f}%"]
    print("| " + " | ".join(cells) + " |")
print()
print(f"rows: {len(df)}; median |error| {100 * err.median():.1f}%; max |error| {100 * err.max():.1f}% "
      f"({df.loc[err.idxmax(), 'model']}/{df.loc[err.idxmax(), 'system']}, {df.loc[err.idxmax(), 'run']})")
for run, g in df.groupby("run", sort=False):
    e = g["rel_error"].abs()
    print(f"  {run}: {len(g)} rows, median {100 * e.median():.1f}%, max {100 * e.max():.1f}%")
print()
print("median |error| by system: " + ", ".join(
    f"{system} {100 * g['rel_error'].abs().median():.1f}%"
    for system, g in df.groupby("system", sort=False)))
