#!/usr/bin/python3
"""Figure 8: training throughput with the monitors on, against how often they run.

Reads one or more summary CSVs of scenarios/fig8*.yaml (simulated or live; their `monitors`
sweep column says which monitor ran and every how many steps): per topology and model, the
throughput with the gradient noise scale and with the gradient variance monitor as a fraction of
the throughput without a monitor, against the interval k, each point labelled with its overhead
1 - throughput/baseline. CSVs of the same topology share a panel (solid: simulated, dashed:
live), and the table of every point is printed as CSV.
A `simctl compare` CSV (scenarios/fig8-live.yaml) gives both its simulated and live lines;
--pool-live C.compare.csv ... adds the live throughputs of further runs of the same scenario
(their file names start with its name; rows matched by monitors, model and system): each compare CSV's live line is then their mean, so one
run's drift weighs less.
Usage: /usr/bin/python3 plots/fig8.py [out/fig8/fig8.csv [out/fig8-dgx1/fig8-dgx1.csv ...]]
           [--pool-live RUN2.compare.csv ...] [-o out.png]
"""
import os
import re
import sys

import pandas as pd

from common import parse_args_many, plt, read_csv, save

args = parse_args_many(
    __doc__.splitlines()[0], "out/fig8/fig8.csv", "scenarios/fig8.yaml",
    lambda p: p.add_argument("--pool-live", nargs="+", default=[],
                             help="more simctl compare CSVs whose live runs are averaged in"))
KEY = ["monitors", "model", "system"]
pooled = []
for path in args.pool_live:
    if not os.path.exists(path):
        sys.exit(f"{path}: no such file")
    pooled.append(read_csv(path, KEY + ["live_throughput_per_gpu"]))
output = args.output

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


def frames_of(path):
    """A summary CSV gives one frame; a `simctl compare` CSV two (its simulated and live columns),
    on one panel named after the scenario."""
    raw = pd.read_csv(path)
    if "sim_throughput_per_gpu" in raw.columns:
        df = read_csv(path, ["n_gpus", "model", "monitors", "system", "sim_throughput_per_gpu",
                             "live_throughput_per_gpu"])
        if pooled:
            stem = os.path.basename(path).split(".")[0]
            for other in args.pool_live:
                if not os.path.basename(other).split(".")[0].startswith(stem):
                    sys.exit(f"--pool-live: {other} is a run of another scenario than {path}")
            runs = [df[KEY + ["live_throughput_per_gpu"]]] + [p[KEY + ["live_throughput_per_gpu"]]
                                                              for p in pooled]
            mean = pd.concat(runs).groupby(KEY, sort=False)["live_throughput_per_gpu"]
            counts = mean.count()
            if (counts != len(runs)).any():
                sys.exit("--pool-live: the runs do not hold the same rows (monitors, model, "
                         "system) as " + path)
            df = df.drop(columns="live_throughput_per_gpu").merge(
                mean.mean().rename("live_throughput_per_gpu").reset_index(), on=KEY)
        stem = os.path.basename(path).split(".")[0]
        out = []
        for mode in ["sim", "live"]:
            d = df.copy()
            d["mode"] = mode
            d["topology"] = stem
            d["throughput_per_gpu_samples_per_s"] = d[f"{mode}_throughput_per_gpu"]
            out.append(d)
        return out
    return [read_csv(path, ["mode", "topology", "n_gpus", "model", "monitors",
                            "throughput_per_gpu_samples_per_s"])]


frames = []
for path in args.csv:
    for df in frames_of(path):
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
cols = min(len(panels), 2)
rows_n = (len(panels) + cols - 1) // cols
fig, axes = plt.subplots(rows_n, cols, figsize=(6.2 * cols, 4.4 * rows_n), squeeze=False)
styles = {"sim": "-", "live": "--"}
colors = {"gradient-noise-scale": "tab:blue", "gradient-variance": "tab:orange"}
print("scenario,mode,model,monitor,interval,throughput_per_gpu,baseline,overhead_pct")
for ax, (topology, gpus, model) in zip(axes.flat, panels):
    for path, df in frames:
        if df["topology"].iloc[0] != topology or model not in set(df["model"]):
            continue
        mode = df["mode"].iloc[0]
        rows = overhead_table(df[df["model"] == model])
        stem = os.path.basename(path).split(".")[0]
        for monitor in MONITORS:
            pts = sorted((k, t / b, o) for (_, m, k, t, b, o) in rows if m == monitor)
            if not pts:
                continue
            ks = [k for k, _, _ in pts]
            ax.plot(ks, [r for _, r, _ in pts], marker="o", ms=4, ls=styles.get(mode, ":"),
                    color=colors[monitor], label=f"{MONITORS[monitor]} ({stem}, {mode})")
            for k, r, o in pts:
                ax.annotate(f"{100 * o:.1f}%", (k, r), fontsize=7, color=colors[monitor],
                            textcoords="offset points", xytext=(3, -10 if mode == "live" else 4))
        for (_, m, k, t, b, o) in rows:
            print(f"{stem},{mode},{model},{m},{k},{t:.3f},{b:.3f},{100 * o:.2f}")
    ax.axhline(1.0, color="gray", lw=1, label="no monitor")
    ax.set_xscale("log", base=2)
    ax.set_xticks([1, 2, 4, 8, 16])
    ax.set_xticklabels(["1", "2", "4", "8", "16"])
    ax.set_xlabel("monitoring interval (every k steps)")
    ax.set_ylabel("throughput / throughput without a monitor")
    ax.set_title(f"{model}, {topology} ({gpus} GPUs)")
    ax.set_ylim(0, 1.08)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="lower right")
# Where a CSV holds both modes: the simulated overhead against the live one, in points.
by_path = {}
for path, df in frames:
    by_path.setdefault(path, {})[df["mode"].iloc[0]] = df
for path, modes in by_path.items():
    if set(modes) != {"sim", "live"}:
        continue
    print("scenario,model,monitor,interval,sim_overhead_pct,live_overhead_pct,difference_pp")
    for model in dict.fromkeys(modes["sim"]["model"]):
        sim = {(m, k): o for (_, m, k, _, _, o) in overhead_table(
            modes["sim"][modes["sim"]["model"] == model])}
        live = {(m, k): o for (_, m, k, _, _, o) in overhead_table(
            modes["live"][modes["live"]["model"] == model])}
        for (m, k), o in sim.items():
            if (m, k) in live:
                print(f"{os.path.basename(path).split('.')[0]},{model},{m},{k},{100 * o:.2f},"
                      f"{100 * live[(m, k)]:.2f},{100 * (o - live[(m, k)]):.2f}")
for ax in list(axes.flat)[len(panels):]:
    ax.axis("off")
save(fig, output)
