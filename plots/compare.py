#!/usr/bin/python3
"""Simulated vs live step times from simctl compare (<name>.compare.csv).

Left: live vs simulated step time per row (the diagonal is perfect agreement). Right: the relative
error (sim - live) / live per row, with the median and max |error| in the title.
Usage: /usr/bin/python3 plots/compare.py out/NAME/NAME.compare.csv [-o out.png]
(default output: NAME.compare.png next to the CSV; simctl compare runs this after writing the CSV)
"""
import matplotlib.pyplot as plt

from common import parse_args, read_csv, save

args = parse_args(__doc__.splitlines()[0], "out/validate-testbed/validate-testbed.compare.csv")
df = read_csv(args.csv, ["model", "system", "sim_step_ms", "live_step_ms", "rel_error"])
fig, (ax, bx) = plt.subplots(1, 2, figsize=(12, 4.5))
for system, s in df.groupby("system", sort=False):
    ax.scatter(s["live_step_ms"], s["sim_step_ms"], label=system, s=18)
lo = min(df["live_step_ms"].min(), df["sim_step_ms"].min()) * 0.8
hi = max(df["live_step_ms"].max(), df["sim_step_ms"].max()) * 1.2
ax.plot([lo, hi], [lo, hi], "k--", lw=0.8)
ax.set_xscale("log")
ax.set_yscale("log")
ax.set_xlabel("live step time (ms)")
ax.set_ylabel("simulated step time (ms)")
ax.grid(True, which="both", alpha=0.3)
ax.legend(fontsize=7)
err = df["rel_error"].abs()
labels = [f"{r.model}/{r.system}" + "".join(f" {c}={getattr(r, c)}" for c in df.columns[: list(df.columns).index("model")])
          for r in df.itertuples()]
bx.bar(range(len(df)), 100 * df["rel_error"])
bx.axhline(0, color="k", lw=0.8)
for y in (-15, -5, 5, 15):
    bx.axhline(y, color="grey", lw=0.6, ls=":")
bx.set_xticks(range(len(df)), labels, rotation=90, fontsize=5)
bx.set_ylabel("(sim - live) / live (%)")
bx.set_title(f"median |error| {100 * err.median():.1f}%, max {100 * err.max():.1f}%")
save(fig, args.output)
