#!/usr/bin/python3
"""Figure 7: elastic scaling latency against cluster size, KungFu's resize vs stop-checkpoint-restart.

Reads the steps CSV of scenarios/fig7.yaml. Each resize's phases are readings
"resize.<phase>_s" on the step the resize follows; the sweep columns `mechanism` (kungfu,
restart) and `sizes` ([1, N]) name the series. Left: scale-up (1 -> N), right: scale-down
(N -> 1), one stacked bar per mechanism and N (the mean over the run's resizes of that
direction). KungFu's bar stacks the staying workers' phases (consensus, propose, reconnect,
barrier, sync, broadcast: they add up to resize.total_s); the narrow bar beside it stacks the new
workers' own phases (join.process_start, join.framework_init where set, join.connect,
join.barrier), which run while the staying workers wait at the barrier. The restart bar stacks
checkpoint and the new cluster's join.process_start, join.framework_init, join.restore,
join.connect, join.barrier. A dot marks resize.total_s.
Usage: /usr/bin/python3 plots/fig7.py [out/fig7/fig7.steps.csv] [-o out.png]
"""
import ast

from common import parse_args_many, plt, read_csv, save

args = parse_args_many(__doc__.splitlines()[0], "out/fig7/fig7.steps.csv", "scenarios/fig7.yaml")
df = read_csv(args.csv[0], ["mechanism", "sizes", "step", "workers", "decision", "readings"])

KUNGFU = ["consensus", "propose", "reconnect", "barrier", "sync", "broadcast"]
# join.framework_init only where the scenario sets elastic.framework_init.
JOIN = ["join.process_start", "join.framework_init", "join.connect", "join.barrier"]
RESTART = ["checkpoint", "join.process_start", "join.framework_init", "join.restore",
           "join.connect", "join.barrier"]
COLORS = {"consensus": "tab:blue", "propose": "tab:cyan", "reconnect": "tab:gray",
          "barrier": "tab:olive", "sync": "tab:pink", "broadcast": "tab:orange",
          "checkpoint": "tab:red", "join.process_start": "tab:green", "join.framework_init": "lime",
          "join.restore": "tab:purple", "join.connect": "tab:brown", "join.barrier": "khaki"}


def readings(cell):
    """'resize.total_s=0.12 elastic.check_s=0.0006' -> {'total': 0.12} (the resize's, in s)."""
    out = {}
    for item in str(cell).split():
        name, _, value = item.partition("=")
        if name.startswith("resize.") and name.endswith("_s"):
            out[name[len("resize."):-len("_s")]] = float(value)
    return out


# One record per resize: mechanism, N, direction, phases.
rows = []
for _, r in df[df["decision"].fillna("").str.startswith("workers")].iterrows():
    phases = readings(r["readings"])
    if "total" not in phases:
        continue
    to = int(str(r["decision"]).split()[1])
    n = max(ast.literal_eval(str(r["sizes"])))
    rows.append({"mechanism": r["mechanism"], "n": n,
                 "direction": "up" if to > int(r["workers"]) else "down", "phases": phases})
if not rows:
    raise SystemExit(f"{args.csv[0]}: no resize readings (resize.total_s); is this fig7's CSV?")

ns = sorted({r["n"] for r in rows})
mechanisms = [m for m in ["kungfu", "restart"] if any(r["mechanism"] == m for r in rows)]


def mean_phases(mechanism, n, direction):
    picked = [r["phases"] for r in rows
              if r["mechanism"] == mechanism and r["n"] == n and r["direction"] == direction]
    if not picked:
        return None
    keys = set().union(*picked)
    return {k: sum(p.get(k, 0.0) for p in picked) / len(picked) for k in keys}


def stack(ax, x, width, phases, names, labelled):
    bottom = 0.0
    for name in names:
        if name not in phases:
            continue
        ms = phases[name] * 1e3
        label = name if name not in labelled else None
        ax.bar(x, ms, width, bottom=bottom, color=COLORS[name], label=label, edgecolor="white",
               linewidth=0.3)
        labelled.add(name)
        bottom += ms


fig, axes = plt.subplots(1, 2, figsize=(12, 4.8))
labelled = set()
for ax, direction, title in zip(axes, ["up", "down"], ["scale-up: 1 -> N", "scale-down: N -> 1"]):
    for i, n in enumerate(ns):
        for j, mech in enumerate(mechanisms):
            p = mean_phases(mech, n, direction)
            if p is None:
                continue
            x = i + (j - (len(mechanisms) - 1) / 2) * 0.4
            if mech == "kungfu":
                stack(ax, x - 0.05, 0.26, p, KUNGFU, labelled)
                if any(p.get(k, 0) > 0 for k in JOIN):
                    stack(ax, x + 0.13, 0.08, p, JOIN, labelled)
            else:
                stack(ax, x, 0.34, p, RESTART, labelled)
            ax.plot(x, p["total"] * 1e3, "k.", ms=5)
            ax.annotate(f"{mech}\n{p['total'] * 1e3:.0f} ms", (x, p["total"] * 1e3),
                        xytext=(0, 3), textcoords="offset points", ha="center", fontsize=7)
    ax.set_xticks(range(len(ns)), [str(n) for n in ns])
    ax.set_xlabel("cluster size N (1-GPU VMs)")
    ax.set_ylabel("latency (ms)")
    ax.set_title(f"{title} ({df['model'].iloc[0]}, simulated)", fontsize=10)
    ax.set_ylim(top=ax.get_ylim()[1] * 1.12)
    ax.grid(axis="y", alpha=0.3)
handles, labels = axes[0].get_legend_handles_labels()
fig.legend(handles, labels, loc="lower center", ncol=6, fontsize=8, bbox_to_anchor=(0.5, -0.08))
save(fig, args.output)
