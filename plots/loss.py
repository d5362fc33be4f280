#!/usr/bin/python3
"""Training under random packet loss (scenarios/loss.yaml): throughput per GPU against the NICs' loss.

Per system, the simulated throughput (solid) and, from a `simctl compare` CSV, the live one on the
testbed (dashed, same colour); right, the relative error (sim - live) / live per row, with the
issue's 15 % band. A `simctl run` CSV (simulated only) draws the left panel alone.
Usage: /usr/bin/python3 plots/loss.py [out/loss/loss.csv | out/loss/loss.compare.csv] [-o out.png]
"""
import matplotlib.pyplot as plt

from common import parse_args, read_csv, save

args = parse_args(__doc__.splitlines()[0], "out/loss/loss.csv")
df = read_csv(args.csv, ["nic_loss", "model", "system"])
compare = "live_throughput_per_gpu" in df.columns
sim_col = "sim_throughput_per_gpu" if compare else "throughput_per_gpu_samples_per_s"
if sim_col not in df.columns:
    raise SystemExit(f"{args.csv}: missing column {sim_col}; is this loss.yaml's CSV?")
df["loss_pct"] = df["nic_loss"].astype(str).str.rstrip("%").astype(float)
unit = df["sample_unit"].iloc[0] if "sample_unit" in df.columns else "samples"

fig, axes = plt.subplots(1, 2 if compare else 1, figsize=(12 if compare else 6, 4.5), squeeze=False)
ax = axes[0][0]
for i, (system, s) in enumerate(df.groupby("system", sort=False)):
    s = s.sort_values("loss_pct")
    colour = f"C{i}"
    ax.plot(s["loss_pct"], s[sim_col], "-o", ms=3, color=colour, label=f"{system} (sim)")
    if compare:
        ax.plot(s["loss_pct"], s["live_throughput_per_gpu"], "--s", ms=3, color=colour,
                label=f"{system} (live)")
ax.set_xlabel("packet loss per NIC link (%)")
ax.set_ylabel(f"{unit}/s per GPU")
ax.set_title(f"{df['model'].iloc[0]}, {df['n_gpus'].iloc[0]} GPUs" if "n_gpus" in df.columns else "")
ax.set_ylim(bottom=0)
ax.grid(True, alpha=0.3)
ax.legend(fontsize=7, ncol=2)
if compare:
    bx = axes[0][1]
    for i, (system, s) in enumerate(df.groupby("system", sort=False)):
        s = s.sort_values("loss_pct")
        bx.plot(s["loss_pct"], 100 * s["rel_error"], "-o", ms=3, color=f"C{i}", label=system)
    for y in (-15, 15):
        bx.axhline(y, color="grey", lw=0.6, ls=":")
    bx.axhline(0, color="k", lw=0.8)
    err = df["rel_error"].abs()
    bx.set_xlabel("packet loss per NIC link (%)")
    bx.set_ylabel("(sim - live) / live step time (%)")
    bx.set_title(f"median |error| {100 * err.median():.1f}%, max {100 * err.max():.1f}%")
    bx.grid(True, alpha=0.3)
    bx.legend(fontsize=7)
save(fig, args.output)
