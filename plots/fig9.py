#!/usr/bin/python3
"""Figure 9: training throughput vs number of GPUs (scenarios/fig9.yaml).

Per model: throughput per GPU and in total vs GPUs at the main NIC egress cap (10 Gbit/s when
swept), with error bars (one standard deviation over measured steps), and the sensitivity of the
per-GPU throughput at the largest cluster to the egress cap.
Usage: /usr/bin/python3 plots/fig9.py [out/fig9/fig9.csv] [-o out.png]
"""
import matplotlib.pyplot as plt

from common import parse_args, read_csv, save

args = parse_args(__doc__.splitlines()[0], "out/fig9/fig9.csv")
df = read_csv(args.csv, ["model", "system", "n_gpus", "throughput_per_gpu_samples_per_s",
                         "throughput_per_gpu_std", "throughput_total_samples_per_s"])

bw_col = "nic_egress_bandwidth" if "nic_egress_bandwidth" in df.columns else None
main_bw = None
if bw_col:
    values = list(dict.fromkeys(df[bw_col]))
    main_bw = "10Gbps" if "10Gbps" in values else values[0]

models = list(dict.fromkeys(df["model"]))
systems = list(dict.fromkeys(df["system"]))
ncols = 3 if bw_col else 2
fig, axes = plt.subplots(len(models), ncols, figsize=(5.2 * ncols, 4 * len(models)), squeeze=False)
for row, model in enumerate(models):
    d = df[df["model"] == model]
    main = d[d[bw_col] == main_bw] if bw_col else d
    unit = d["sample_unit"].iloc[0] if "sample_unit" in d.columns else "samples"
    for system in systems:
        s = main[main["system"] == system].sort_values("n_gpus")
        style = "--" if system == "ideal" else "-"
        axes[row][0].errorbar(s["n_gpus"], s["throughput_per_gpu_samples_per_s"],
                              yerr=s["throughput_per_gpu_std"], fmt=style, marker="o", ms=3,
                              capsize=3, label=system)
        axes[row][1].errorbar(s["n_gpus"], s["throughput_total_samples_per_s"],
                              yerr=s["throughput_per_gpu_std"] * s["n_gpus"], fmt=style,
                              marker="o", ms=3, capsize=3, label=system)
    suffix = f" ({bw_col.replace('_', ' ')} {main_bw})" if bw_col else ""
    for col, ylabel in [(0, f"{unit}/s per GPU"), (1, f"{unit}/s total")]:
        ax = axes[row][col]
        ax.set_xscale("log", base=2)
        ax.set_xlabel("GPUs (1 per VM)")
        ax.set_ylabel(ylabel)
        ax.set_title(f"{model}{suffix}")
        ax.grid(True, alpha=0.3)
    axes[row][1].set_yscale("log", base=2)
    if bw_col:
        n = d["n_gpus"].max()
        big = d[d["n_gpus"] == n].copy()
        big["bw_gbps"] = big[bw_col].str.replace("Gbps", "").astype(float)
        for system in systems:
            s = big[big["system"] == system].sort_values("bw_gbps")
            axes[row][2].errorbar(s["bw_gbps"], s["throughput_per_gpu_samples_per_s"],
                                  yerr=s["throughput_per_gpu_std"], marker="o", ms=3, capsize=3,
                                  label=system)
        ax = axes[row][2]
        ax.set_xscale("log")
        ax.set_xlabel("VM NIC egress cap (Gbit/s)")
        ax.set_ylabel(f"{unit}/s per GPU")
        ax.set_title(f"{model}: sensitivity at {n} GPUs")
        ax.grid(True, alpha=0.3)
axes[0][0].legend(fontsize=8)
save(fig, args.output)
