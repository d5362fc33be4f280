#!/usr/bin/python3
"""Figure 10: per-GPU throughput of the NCCL-scheduler comparison (scenarios/fig10.yaml).

Grouped bars: one panel per cluster size (one or two DGX-1), a group per model, a bar per system,
error bars one standard deviation over measured steps.
Usage: /usr/bin/python3 plots/fig10.py [out/fig10/fig10.csv] [-o out.png]
"""
import matplotlib.pyplot as plt
import numpy as np

from common import parse_args, read_csv, save

args = parse_args(__doc__.splitlines()[0], "out/fig10/fig10.csv")
df = read_csv(args.csv, ["model", "system", "n_gpus", "throughput_per_gpu_samples_per_s",
                         "throughput_per_gpu_std"])
sizes = sorted(df["n_gpus"].unique())
models = list(dict.fromkeys(df["model"]))
systems = list(dict.fromkeys(df["system"]))
fig, axes = plt.subplots(1, len(sizes), figsize=(6.5 * len(sizes), 4.2), squeeze=False)
width = 0.8 / len(systems)
x = np.arange(len(models))
for col, n in enumerate(sizes):
    ax = axes[0][col]
    d = df[df["n_gpus"] == n]
    for i, system in enumerate(systems):
        s = d[d["system"] == system].set_index("model").reindex(models)
        ax.bar(x + (i - (len(systems) - 1) / 2) * width, s["throughput_per_gpu_samples_per_s"],
               width, yerr=s["throughput_per_gpu_std"], capsize=2, label=system)
    ax.set_xticks(x, models)
    ax.set_ylabel("images/s per GPU")
    servers = f", {n // 8} servers" if n > 8 else ""
    ax.set_title(f"{n} GPUs{servers}")
    ax.grid(True, axis="y", alpha=0.3)
axes[0][0].legend(fontsize=8)
save(fig, args.output)
