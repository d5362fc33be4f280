#!/usr/bin/python3
"""Bus bandwidth and time vs message size for each strategy (scenarios/allreduce.yaml).

Usage: /usr/bin/python3 plots/allreduce.py [out/allreduce/allreduce.csv] [-o out.png]
"""
import matplotlib.pyplot as plt
from matplotlib.ticker import FuncFormatter

from common import human_bytes, parse_args, read_csv, save

args = parse_args(__doc__.splitlines()[0], "out/allreduce/allreduce.csv")
df = read_csv(args.csv, ["strategy", "size_bytes", "time_us", "busbw_GBps", "n_ranks", "mode"])

# One figure per (sweep point, mode) would be too many; group by everything that is not a
# per-row measurement so sweeps over topology parameters get one line style per value.
measure = {"strategy", "size_bytes", "count", "time_us", "algbw_GBps", "busbw_GBps", "dtype"}
keys = [c for c in df.columns if c not in measure]
groups = list(df.groupby(keys)) if keys else [((), df)]

fig, axes = plt.subplots(len(groups), 2, figsize=(13, 4.2 * len(groups)), squeeze=False)
colors = plt.cm.tab20.colors  # 11 strategies need more than the default 10-colour cycle
for ax in axes.flat:
    ax.set_prop_cycle(color=colors)
for row, (key, g) in enumerate(groups):
    key = key if isinstance(key, tuple) else (key,)
    title = ", ".join(f"{k}={v}" for k, v in zip(keys, key))
    for strategy, s in g.groupby("strategy", sort=False):
        s = s.sort_values("size_bytes")
        style = "--" if strategy in ("CLASSIC_RING", "HALVING_DOUBLING") else "-"
        axes[row][0].plot(s["size_bytes"], s["busbw_GBps"], style, marker=".", label=strategy)
        axes[row][1].plot(s["size_bytes"], s["time_us"], style, marker=".", label=strategy)
    for ax, ylabel in zip(axes[row], ["bus bandwidth (GB/s)", "time (us)"]):
        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: human_bytes(v)))
        ax.set_xlabel("message size")
        ax.set_ylabel(ylabel)
        ax.grid(True, which="both", alpha=0.3)
        ax.set_title(title)
    axes[row][1].set_yscale("log")
axes[0][0].legend(fontsize=7, ncol=2)
save(fig, args.output)
