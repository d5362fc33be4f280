#!/usr/bin/python3
"""Figure 8: training throughput with the monitors on, against how often they run.

Reads one or more summary CSVs of scenarios/fig8*.yaml (simulated or live; their `monitors`
sweep column says which monitor ran and every how many steps): per CSV and model, throughput per
GPU against the interval k for the gradient noise scale and the gradient variance monitors, the
baseline (no monitor) as a line, each point labelled with its overhead, 1 - throughput/baseline.
Several CSVs of the same scenario (simulated, live) share a panel, told apart by line style.
Usage: /usr/bin/python3 plots/fig8.py [plots/fig8.csv [plots/fig8-dgx1.csv ...]] [-o out.png]
"""
import argparse
import os
import re
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from common import read_csv, save  # noqa: E402

p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
p.add_argument("csv", nargs="*", default=["plots/fig8.csv"],
               help="summary CSVs of fig8*.yaml (default plots/fig8.csv)")
p.add_argument("-o", "--output", help="output image (default: the first CSV's name with .png)")
args = p.parse_args()
for path in args.csv:
    if not os.path.exists(path):
        sys.exit(f"{path}: no such file (run simctl run scenarios/fig8.yaml first)")
output = args.output or os.path.splitext(args.csv[0])[0] + ".png"

MONITORS = {"gradient-noise-scale": "gradient noise scale", "gradient-variance": "gradient variance"}


def monitor_of(cell):
    """'[{name: throughput}, {name: gradient-variance, interval: 4}]' -> ('gradient-variance', 4);
    the baseline (no monitor besides throughput) -> (None, None)."""
    for name in MONITORS:
        m = re.search(r"name:\s*" + name + r"(?:,\s*interval:\s*(\d+))?", str(cell))
        if m:
            return name, int(m.group(1) or 1)
    return None, None


def overhead_table(df):
    """Per (model, monitor, interval): throughput per GPU and overhead against the baseline."""
    rows = []
    for model, d in df.groupby("model", sort=False):
        base = d[d["monitor"].isna()]["throughput_per_gpu_samples_per_s"]
        if base.empty:
            sys.exit("no baseline row (monitors: [{name: throughput}]) for " + model)
        b = float(base.iloc[0])
        for _, r in d[d["monitor"].notna()].iterrows():
            t = float(r["throughput_per_gpu_samples_per_s"])
            rows.append((model, r["monitor"], int(r["interval"]), t, b, 1 - t / b))
    return rows


frames = []
for path in args.csv:
    df = read_csv(path, ["mode", "topology", "n_gpus", "model", "monitors",
                         "throughput_per_gpu_samples_per_s"])
    parsed = df["monitors"].map(monitor_of)
    df["monitor"] = [m for m, _ in parsed]
    df["interval"] = [k for _, k in parsed]
    frames.append((path, df))

# One panel per (scenario topology, model); CSVs of the same topology share it.
panels = []
for _, df in frames:
    for model in dict.fromkeys(df["model"]):
        key = (df["topology"].iloc[0], int(df["n_gpus"].iloc[0]), model)
        if key not in panels:
            panels.append(key)
fig, axes = plt.subplots(1, len(panels), figsize=(5.4 * len(panels), 4.2), squeeze=False)
styles = {"sim": "-", "live": "--"}
colors = {"gradient-noise-scale": "tab:blue", "gradient-variance": "tab:orange"}
print("scenario,mode,model,monitor,interval,throughput_per_gpu,baseline,overhead_pct")
for ax, (topology, gpus, model) in zip(axes[0], panels):
    for path, df in frames:
        if df["topology"].iloc[0] != topology or model not in set(df["model"]):
            continue
        mode = df["mode"].iloc[0]
        rows = [r for r in overhead_table(df[df["model"] == model])]
        base = rows[0][4] if rows else None
        if base:
            ax.axhline(base, color="gray", ls=styles.get(mode, ":"), lw=1,
                       label=f"no monitor ({mode})")
        for monitor in MONITORS:
            pts = sorted((k, t, o) for (_, m, k, t, _, o) in rows if m == monitor)
            if not pts:
                continue
            ks = [k for k, _, _ in pts]
            ax.plot(ks, [t for _, t, _ in pts], marker="o", ms=4, ls=styles.get(mode, ":"),
                    color=colors[monitor], label=f"{MONITORS[monitor]} ({mode})")
            for k, t, o in pts:
                ax.annotate(f"{100 * o:.1f}%", (k, t), fontsize=7, color=colors[monitor],
                            textcoords="offset points", xytext=(3, -10 if mode == "live" else 4))
        for (_, m, k, t, b, o) in rows:
            print(f"{os.path.basename(path)},{mode},{model},{m},{k},{t:.3f},{b:.3f},"
                  f"{100 * o:.2f}")
    ax.set_xscale("log", base=2)
    ax.set_xticks([1, 2, 4, 8, 16])
    ax.set_xticklabels(["1", "2", "4", "8", "16"])
    ax.set_xlabel("monitoring interval (every k steps)")
    ax.set_ylabel("throughput per GPU (samples/s)")
    ax.set_title(f"{model}, {topology} ({gpus} GPUs)")
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="lower right")
save(fig, output)
