#!/usr/bin/python3
"""Figure 6: adaptive resource provisioning, total throughput and workers over steps.

Reads the steps CSV of scenarios/fig6.yaml: one series per `initial_workers` sweep value (1: the
provision policy growing the cluster; the largest: all workers from the start). Top: the total
throughput of every step (thin) and, as the policy measures it, its mean over the second half of
each window of --window steps (markers; the policy's `every`, 100 by default); bottom: the
cluster's size. Resizes (the `decision` column) are marked where they apply.
Usage: /usr/bin/python3 plots/fig6.py [out/fig6/fig6.steps.csv] [-o out.png] [--window N]
"""
from common import parse_args_many, plt, read_csv, save


def extra(p):
    p.add_argument("--window", type=int, default=100,
                   help="steps per policy window, for the window means (default 100)")


args = parse_args_many(__doc__.splitlines()[0], "out/fig6/fig6.steps.csv", "scenarios/fig6.yaml",
                       extra)
required = ["model", "n_gpus", "system", "step", "workers", "throughput_total_samples_per_s",
            "decision"]
df = read_csv(args.csv[0], required)
unit = df["sample_unit"].iloc[0] if "sample_unit" in df.columns else "samples"
key = "initial_workers" if "initial_workers" in df.columns else None
groups = df.groupby(key, sort=True) if key else [(int(df["workers"].iloc[0]), df)]

fig, (top, bottom) = plt.subplots(2, 1, figsize=(7.5, 6.0), sharex=True,
                                  gridspec_kw={"height_ratios": [2, 1]})
for initial, d in groups:
    d = d.sort_values("step")
    grows = d["workers"].nunique() > 1 or int(initial) < int(df["workers"].max())
    label = (f"provision policy from {int(initial)} worker" + ("s" if int(initial) > 1 else "")
             if grows else f"all {int(initial)} workers from the start")
    line, = top.plot(d["step"], d["throughput_total_samples_per_s"], lw=0.6, alpha=0.5)
    # The policy's own measure: the mean over each window's second half.
    w = args.window
    half = d[(d["step"] % w) >= w // 2]
    means = half.groupby(half["step"] // w)["throughput_total_samples_per_s"].mean()
    top.plot(means.index * w + w - 1, means.values, "o-", color=line.get_color(), ms=4,
             label=label)
    bottom.step(d["step"], d["workers"], where="post", color=line.get_color(), label=label)
    for _, row in d[d["decision"].fillna("").str.startswith("workers")].iterrows():
        # The decision after step k applies from step k + 1.
        top.axvline(row["step"] + 0.5, color=line.get_color(), ls="--", lw=0.8)
        top.annotate(f"-> {row['decision'].split(' ', 1)[1]}",
                     (row["step"] + 0.5, 0), color=line.get_color(), fontsize=8,
                     xytext=(2, 2), textcoords="offset points")

top.set_title(f"{df['model'].iloc[0]}, up to {df['n_gpus'].iloc[0]} GPUs, "
              f"{df['system'].iloc[0]}: {df['mode'].iloc[0] if 'mode' in df.columns else ''}",
              fontsize=10)
top.set_ylabel(f"throughput ({unit}/s, all GPUs)")
top.set_ylim(bottom=0)
top.grid(alpha=0.3)
top.legend(fontsize=8, loc="upper left")
bottom.set_xlabel("step")
bottom.set_ylabel("workers")
bottom.set_ylim(0, int(df["workers"].max()) + 1)
bottom.grid(alpha=0.3)
save(fig, args.output)
