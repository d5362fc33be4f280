#!/usr/bin/python3
"""Gantt chart of `simctl run [--live] ... --timeline DIR` files (Chrome/Perfetto trace events).

One panel per file (simulated and live side by side when given both), one row per worker (a
process per rank live, a track per worker simulated): compute phases, the monitors' kernels and
the step agreement as bars, and below each row a thin band while any of its all-reduces is in
flight. --steps A:B keeps the steps from A to B (inclusive), aligned so each panel starts at the
first kept step's start. The simulated files' link utilization counters ("C" events) are for
Perfetto's counter tracks and are not drawn here.
Usage: /usr/bin/python3 plots/timeline.py A.trace.json [B.trace.json] [--steps 2:3] [-o out.png]
"""
import argparse
import json
import os
import sys

from common import plt, save

COLORS = {"compute": "#4C72B0", "monitor": "#DD8452", "control": "#8C8C8C", "comm": "#55A868"}


def load(path):
    with open(path) as f:
        events = json.load(f)["traceEvents"]
    tracks = {}
    begun = {}
    for e in events:
        if e.get("ph") in ("M", "C"):  # metadata; link utilization counters (Perfetto draws them)
            continue
        key = (e["pid"], e["tid"])
        t = tracks.setdefault(key, {"bars": [], "comm": [], "steps": {}})
        if e["ph"] == "X":
            if e["name"].startswith("step "):
                t["steps"][int(e["name"][5:])] = (e["ts"], e["ts"] + e["dur"])
            elif e.get("cat") != "step":
                t["bars"].append((e["ts"], e["dur"], e.get("cat", ""), e["name"]))
        elif e["ph"] == "b":
            begun[(e["pid"], e["id"])] = e["ts"]
        elif e["ph"] == "e":
            b = begun.pop((e["pid"], e["id"]))
            if e.get("cat") == "comm":  # all-reduces; "transfer" messages are inside them
                t["comm"].append((b, e["ts"]))
    return tracks


def union(spans):
    """Merged [begin, end) intervals."""
    out = []
    for b, e in sorted(spans):
        if out and b <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([b, e])
    return out


parser = argparse.ArgumentParser(usage=__doc__)
parser.add_argument("traces", nargs="+")
parser.add_argument("--steps", default=None, help="A:B, the steps to draw (default: all)")
parser.add_argument("-o", "--output", default=None)
args = parser.parse_args()
for path in args.traces:
    if not os.path.exists(path):
        sys.exit(f"{path}: no such file (run simctl run ... --timeline DIR first)")
output = args.output or os.path.splitext(args.traces[0])[0] + ".png"

panels = [load(p) for p in args.traces]
rows = max(len(p) for p in panels)
fig, axes = plt.subplots(len(panels), 1, figsize=(12, 1.0 + 0.55 * rows * len(panels)),
                         squeeze=False)
for ax, path, tracks in zip(axes[:, 0], args.traces, panels):
    keys = sorted(tracks)
    first = tracks[keys[0]]["steps"]
    if args.steps:
        a, b = (int(x) for x in args.steps.split(":"))
    else:
        a, b = min(first), max(first)
    t0 = min(tracks[k]["steps"][a][0] for k in keys if a in tracks[k]["steps"])
    t1 = max(tracks[k]["steps"][b][1] for k in keys if b in tracks[k]["steps"])
    for row, key in enumerate(keys):
        t = tracks[key]
        y = rows - 1 - row
        for ts, dur, cat, name in t["bars"]:
            if ts + dur < t0 or ts > t1:
                continue
            ax.broken_barh([((ts - t0) / 1e3, max(dur, 1) / 1e3)], (y + 0.3, 0.6),
                           facecolors=COLORS.get(cat, "#999999"), edgecolor="none")
        for b0, e0 in union(t["comm"]):
            if e0 < t0 or b0 > t1:
                continue
            ax.broken_barh([((b0 - t0) / 1e3, (e0 - b0) / 1e3)], (y + 0.05, 0.2),
                           facecolors=COLORS["comm"], edgecolor="none")
        for k, (s0, s1) in t["steps"].items():
            if a <= k <= b:
                ax.axvline((s0 - t0) / 1e3, color="black", lw=0.4, alpha=0.3)
    ax.set_yticks([rows - 1 - r + 0.5 for r in range(len(keys))])
    ax.set_yticklabels([f"rank {p}" if p > 0 or len({k[0] for k in keys}) > 1 else f"worker {w}"
                        for p, w in keys])
    ax.set_xlim(0, (t1 - t0) / 1e3)
    ax.set_ylim(0, rows)
    name = os.path.join(os.path.basename(os.path.dirname(os.path.abspath(path))),
                        os.path.basename(path))
    ax.set_title(f"{name}: steps {a}-{b}", fontsize=9)
    ax.set_xlabel("ms")
handles = [plt.Rectangle((0, 0), 1, 1, color=c) for c in COLORS.values()]
fig.legend(handles, ["compute", "monitor kernels", "agreement / checks", "all-reduce in flight"],
           loc="upper right", fontsize=8, ncol=4)
fig.tight_layout(rect=(0, 0, 1, 0.95))
save(fig, output)
