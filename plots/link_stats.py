#!/usr/bin/python3
"""Traffic per link over time from `simctl run ... --link-stats DIR` (one task's files).

Top: each link direction's utilization per time bin (bytes in the bin / (capacity x bin width)),
the --top busiest links by bytes; bottom: the traffic matrix (bytes per rank pair) of the host
messages. Virtual resources (loopback, memory, transport threads) are left out: only topology
channels, named "a->b".
Usage: /usr/bin/python3 plots/link_stats.py DIR/p0-TASK [--top 8] [-o out.png]
  (DIR/p0-TASK is the common prefix of p0-TASK.links.csv, .link-bins.csv and .matrix.csv)
"""
import argparse
import os
import sys

from common import pd, plt, save

parser = argparse.ArgumentParser(usage=__doc__)
parser.add_argument("prefix")
parser.add_argument("--top", type=int, default=8, help="links drawn (the busiest by bytes)")
parser.add_argument("-o", "--output", default=None)
args = parser.parse_args()
files = {k: f"{args.prefix}.{k}.csv" for k in ("links", "link-bins", "matrix")}
for path in files.values():
    if not os.path.exists(path):
        sys.exit(f"{path}: no such file (run simctl run SCENARIO --link-stats DIR first)")
output = args.output or args.prefix + ".links.png"

links = pd.read_csv(files["links"])
links = links[links["resource"].str.contains("->") & (links["bytes"] > 0)]
busiest = links.sort_values("bytes", ascending=False).head(args.top)
bins = pd.read_csv(files["link-bins"])
matrix = pd.read_csv(files["matrix"])

fig, (ax, mx) = plt.subplots(2, 1, figsize=(10, 8), gridspec_kw={"height_ratios": [2, 1.4]})
for _, link in busiest.iterrows():
    b = bins[bins["resource"] == link["resource"]].sort_values("bin_start_s")
    width = b["bin_end_s"] - b["bin_start_s"]
    util = b["bytes"] / (link["capacity_Bps"] * width)
    ax.step(b["bin_start_s"] * 1e3, util, where="post", lw=1,
            label=f"{link['resource']} (mean {link['mean_utilization']:.2f}, "
                  f"peak {link['peak_utilization']:.2f})")
ax.set_xlabel("time (ms)")
ax.set_ylabel("utilization per bin")
ax.set_ylim(0, 1.05)
ax.legend(fontsize=7, loc="upper right")
ax.set_title(os.path.basename(args.prefix) + ": the busiest links")

n = int(max(matrix["src_rank"].max(), matrix["dst_rank"].max()) + 1) if len(matrix) else 1
grid = [[0.0] * n for _ in range(n)]
for _, r in matrix.iterrows():
    grid[int(r["src_rank"])][int(r["dst_rank"])] = r["bytes"] / 1e6
im = mx.imshow(grid, cmap="viridis")
mx.set_xlabel("destination rank")
mx.set_ylabel("source rank")
mx.set_title("traffic matrix (MB, host messages)")
fig.colorbar(im, ax=mx)
save(fig, output)
