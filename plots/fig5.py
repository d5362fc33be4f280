#!/usr/bin/python3
"""Figure 5: per-step training throughput under interference, with and without adaptation.

Reads the steps CSV of scenarios/fig5.yaml (one or more: simulated, live), one line per policy
(the sweep's `policy` column: none = no adaptation, adaptive-strategy = KungFu's policy), the
steps with background traffic shaded (the `background_flows` column), the strategy switch
marked where a step's `decision` changed the strategy.
Usage: /usr/bin/python3 plots/fig5.py [out/fig5/fig5.steps.csv [out/fig5-live/fig5.steps.csv ...]]
       [-o out.png]
"""
import os

from common import parse_args_many, plt, read_csv, save

args = parse_args_many(__doc__.splitlines()[0], "out/fig5/fig5.steps.csv", "scenarios/fig5.yaml")
output = args.output

required = ["mode", "model", "system", "step", "measured", "throughput_total_samples_per_s",
            "strategy", "decision"]


def label_of(policy):
    """'{name: adaptive-strategy}' -> 'adaptive-strategy'; 'none' reads 'no adaptation'."""
    text = str(policy).strip("{} ")
    name = text.split(",")[0].replace("name:", "").strip()
    return "no adaptation" if name == "none" else f"adaptive ({name})"


frames = [read_csv(path, required) for path in args.csv]
fig, axes = plt.subplots(1, len(frames), figsize=(6.4 * len(frames), 4.2), squeeze=False)
for ax, df, path in zip(axes[0], frames, args.csv):
    mode = df["mode"].iloc[0]
    stem = os.path.basename(path).split(".")[0]
    unit = df["sample_unit"].iloc[0] if "sample_unit" in df.columns else "samples"
    groups = df.groupby("policy", sort=False) if "policy" in df.columns else [("", df)]
    shaded = False
    for policy, d in groups:
        d = d.sort_values("step")
        line, = ax.plot(d["step"], d["throughput_total_samples_per_s"], marker="o", ms=3,
                        label=label_of(policy) if policy != "" else d["system"].iloc[0])
        if "background_flows" in d.columns and not shaded:
            busy = d[d["background_flows"] > 0]["step"]
            if len(busy):
                ax.axvspan(busy.min() - 0.5, busy.max() + 0.5, color="tab:red", alpha=0.08,
                           label="background traffic")
                shaded = True
        switched = d[d["decision"].fillna("").str.startswith("strategy")]
        for _, row in switched.iterrows():
            # The decision after step k applies from step k + 1.
            ax.axvline(row["step"] + 0.5, color=line.get_color(), ls="--", lw=1)
            ax.annotate(f"switch to {row['decision'].split(' ', 1)[1]}",
                        (row["step"] + 0.5, ax.get_ylim()[1]), color=line.get_color(),
                        fontsize=8, ha="left", va="top", rotation=90)
    ax.set_title(f"{df['model'].iloc[0]}, {df['n_gpus'].iloc[0]} GPUs, {df['system'].iloc[0]}\n"
                 f"{mode}: {stem}", fontsize=10)
    ax.set_xlabel("step")
    ax.set_ylabel(f"throughput ({unit}/s, all GPUs)")
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="lower left")
save(fig, output)
