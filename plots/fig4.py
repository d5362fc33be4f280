#!/usr/bin/python3
"""Figure 4: adaptive batch size, test accuracy against wall-clock time and epochs, and the batch.

Reads steps CSVs of scenarios/fig4-batch-live.yaml, live (learning for real) and simulated (the
training-dynamics model of learn.dynamics), drawn on the same axes: the readings
learn.test_accuracy at the evaluation points, learn.wall_s, learn.samples. One series per CSV and
sweep point of batch per GPU x policy: a fixed batch (policy none) or the adaptive-batch policy,
one colour per sweep point, live solid with dots and simulated dashed; an adaptive run that starts
at its cap (it cannot grow) is left out. Top: test accuracy against training wall time
(evaluations excluded); middle: against epochs (samples trained / --epoch-samples); bottom: the
batch per GPU over wall time.
Usage: /usr/bin/python3 plots/fig4.py [LIVE.steps.csv] [SIM.steps.csv ...] [-o out.png]
"""
from common import parse_args_many, plt, read_csv, reading, save


def extra(p):
    p.add_argument("--epoch-samples", type=int, default=60000,
                   help="samples in an epoch (default 60000, Fashion-MNIST's training set)")


args = parse_args_many(__doc__.splitlines()[0], "out/fig4-batch-live/fig4-batch-live.steps.csv",
                       "scenarios/fig4-batch-live.yaml", extra)
step_batch = "batch_per_gpu"  # the step's own; the sweep's starting batch is sweep.batch_per_gpu
fig, (top, middle, bottom) = plt.subplots(3, 1, figsize=(7.5, 8.5),
                                          gridspec_kw={"height_ratios": [2, 2, 1]})
colors, modes = {}, []
for path in args.csv:
    df = read_csv(path, ["sweep.batch_per_gpu", "batch_per_gpu", "policy", "step", "readings"])
    for key in ["learn.test_accuracy", "learn.wall_s", "learn.samples"]:
        df[key] = df["readings"].map(lambda s, k=key: reading(s, k))
    mode = df["mode"].iloc[0] if "mode" in df.columns else ""
    modes.append(mode)
    style = dict(ls="--", marker="", lw=1.3) if mode == "sim" else dict(ls="-", marker="o", ms=3)
    for (batch, policy), d in df.groupby(["sweep.batch_per_gpu", "policy"], sort=True):
        d = d.sort_values("step")
        adaptive = "adaptive" in str(policy)
        if adaptive and d[step_batch].nunique() == 1:
            continue  # started at its cap: a fixed run
        name = f"adaptive from {int(batch)} per GPU" if adaptive else f"fixed {int(batch)} per GPU"
        color = colors.setdefault(name, f"C{len(colors)}")
        label = f"{name} ({mode})" if mode else name
        ev = d[d["learn.test_accuracy"].notna()]
        top.plot(ev["learn.wall_s"], ev["learn.test_accuracy"], color=color, label=label, **style)
        middle.plot(ev["learn.samples"] / args.epoch_samples, ev["learn.test_accuracy"],
                    color=color, label=label, **style)
        bottom.step(d["learn.wall_s"], d[step_batch], where="post", color=color,
                    ls=style["ls"], label=label)

title = f"{df['model'].iloc[0]}, {df['n_gpus'].iloc[0]} workers, {df['system'].iloc[0]}"
if any(modes):
    title += " (" + " and ".join(dict.fromkeys(m for m in modes if m)) + ")"
top.set_title(title, fontsize=10)
top.set_xlabel("training wall time (s, evaluations excluded)")
top.set_ylabel("test accuracy")
middle.set_xlabel("epochs")
middle.set_ylabel("test accuracy")
bottom.set_xlabel("training wall time (s)")
bottom.set_ylabel("batch per GPU")
bottom.set_ylim(bottom=0)
for ax in (top, middle, bottom):
    ax.grid(alpha=0.3)
top.legend(fontsize=7, loc="lower right")
save(fig, args.output)
