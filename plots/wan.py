#!/usr/bin/python3
"""Training across cloud regions (scenarios/wan.yaml): throughput per GPU by placement and system.

Grouped bars: the job's workers in one, two or three regions (x), one bar per system; one panel
per socket buffer of the sweep (0B: no window bound, the WAN links alone; 4MiB: each connection
also bounded by its buffer / RTT).
Usage: /usr/bin/python3 plots/wan.py [out/wan/wan.csv] [-o out.png]
"""
import re

import matplotlib.pyplot as plt

from common import parse_args, read_csv, save

args = parse_args(__doc__.splitlines()[0], "out/wan/wan.csv")
df = read_csv(args.csv, ["params", "system", "throughput_per_gpu_samples_per_s"])


def placement(text):
    counts = dict(re.findall(r"servers_(\w+): (\d+)", text))
    used = [f"{n} {r}" for r, n in counts.items() if int(n) > 0]
    return f"{len(used)} region{'s' if len(used) > 1 else ''}\n(" + ", ".join(used) + ")"


df["placement"] = df["params"].map(placement)
buffers = list(dict.fromkeys(df["socket_buffer"])) if "socket_buffer" in df.columns else [None]
systems = list(dict.fromkeys(df["system"]))
places = list(dict.fromkeys(df["placement"]))
fig, axes = plt.subplots(1, len(buffers), figsize=(6 * len(buffers), 4.5), squeeze=False,
                         sharey=True)
width = 0.8 / len(systems)
for col, buf in enumerate(buffers):
    ax = axes[0][col]
    d = df if buf is None else df[df["socket_buffer"] == buf]
    for i, system in enumerate(systems):
        s = d[d["system"] == system].set_index("placement").reindex(places)
        ax.bar([p + i * width for p in range(len(places))], s["throughput_per_gpu_samples_per_s"],
               width, label=system)
    ax.set_xticks([p + width * (len(systems) - 1) / 2 for p in range(len(places))], places,
                  fontsize=8)
    unit = d["sample_unit"].iloc[0] if "sample_unit" in d.columns else "samples"
    ax.set_ylabel(f"{unit}/s per GPU")
    ax.set_yscale("log")
    ax.set_ylim(bottom=df["throughput_per_gpu_samples_per_s"].min() / 2)
    ax.set_title(f"socket buffer {buf}" if buf is not None else "")
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=7)
save(fig, args.output)
