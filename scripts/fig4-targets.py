#!/usr/bin/python3
"""Figure 4's acceptance numbers from steps CSVs of scenarios/fig4-batch-live.yaml: per run (live
and simulated) the final accuracy, the accuracy at equal epochs, the wall time to the target, the
step time and the share of the step spent in communication; then how far the simulated adaptive
run's time to the target is from each live one's.

    /usr/bin/python3 scripts/fig4-targets.py LIVE.steps.csv [LIVE2.steps.csv ...] --sim SIM.steps.csv

The target is fixed before any run is compared: each live run's small fixed batch's final test
accuracy less one point (issue 16: "the adaptive run reaches the small batch's final accuracy
(within 1 point)"). A run's time to it is its training wall time (learn.wall_s, evaluations
excluded) at its first evaluation at or above it. Equal epochs: each run's accuracy interpolated
at the small run's final samples.
"""
import argparse
import os
import re
import sys

import numpy as np
import pandas as pd

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "plots"))
from common import reading  # noqa: E402  (the plots' readings parser)


def runs_of(path):
    df = pd.read_csv(path)
    # The share of the step spent in communication (exposed, the summary CSV beside: the runs'
    # means of exposed_link_ms / step_time_ms), where it is there.
    comm = {}
    summary = re.sub(r"\.steps\.csv(\.gz)?$", ".csv", path)
    try:
        sm = pd.read_csv(summary)
        for _, row in sm.iterrows():
            comm[(row["sweep.batch_per_gpu"], row["policy"])] = (
                row["exposed_link_ms"] / row["step_time_ms_mean"])
    except (OSError, KeyError):
        pass
    for key in ["learn.test_accuracy", "learn.wall_s", "learn.samples"]:
        df[key] = df["readings"].map(lambda s, k=key: reading(s, k))
    out = {}
    for (batch, policy), d in df.groupby(["sweep.batch_per_gpu", "policy"], sort=True):
        d = d.sort_values("step")
        adaptive = "adaptive" in str(policy)
        if adaptive and d["batch_per_gpu"].nunique() == 1:
            continue
        name = "adaptive" if adaptive else ("small" if batch == df["sweep.batch_per_gpu"].min()
                                            else "large")
        ev = d[d["learn.test_accuracy"].notna()]
        out[name] = {"ev": ev, "steps": d, "mode": d["mode"].iloc[0], "comm": comm.get(
                         (batch, policy), float("nan")),
                     "step_ms": d["step_time_ms"].mean(), "batches": sorted(d["batch_per_gpu"].unique())}
    return out


def first_at(run, target, column):
    hit = run["ev"][run["ev"]["learn.test_accuracy"] >= target]
    return float(hit[column].iloc[0]) if len(hit) else float("nan")


def time_to(run, target):
    return first_at(run, target, "learn.wall_s")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("live", nargs="+")
    ap.add_argument("--sim", required=True)
    ap.add_argument("--epoch-samples", type=int, default=60000)
    a = ap.parse_args()
    sim = runs_of(a.sim)
    for path in a.live:
        live = runs_of(path)
        small = live["small"]["ev"]
        target = float(small["learn.test_accuracy"].iloc[-1]) - 0.01
        at = float(small["learn.samples"].iloc[-1])
        print(f"{path}: target {target:.4f} (small batch's final {target + 0.01:.4f} less 1 point); "
              f"equal epochs at {at / a.epoch_samples:.2f}")
        print(f"  {'run':9s} {'mode':4s} {'final':>6s} {'@epochs':>7s} {'to target':>9s} "
              f"{'epochs':>6s} {'step ms':>7s} {'comm':>5s}  batches")
        for runs in (live, sim):
            for name in ("small", "large", "adaptive"):
                r = runs[name]
                ev = r["ev"]
                eq = np.interp(at, ev["learn.samples"], ev["learn.test_accuracy"])
                epochs = first_at(r, target, "learn.samples") / a.epoch_samples
                print(f"  {name:9s} {r['mode']:4s} {ev['learn.test_accuracy'].iloc[-1]:6.4f} "
                      f"{eq:7.4f} {time_to(r, target):8.2f}s {epochs:6.2f} {r['step_ms']:7.3f} "
                      f"{r['comm']:5.2f}  {r['batches'][0]}..{r['batches'][-1]}")
        e_live = first_at(live["adaptive"], target, "learn.samples")
        e_sim = first_at(sim["adaptive"], target, "learn.samples")
        print(f"  simulated adaptive samples to target / live: {e_sim:.0f} / {e_live:.0f} = "
              f"{e_sim / e_live:.3f} ({(e_sim / e_live - 1) * 100:+.1f} %)")
        t_live, t_sim = time_to(live["adaptive"], target), time_to(sim["adaptive"], target)
        print(f"  simulated adaptive time to target / live: {t_sim:.2f} / {t_live:.2f} s = "
              f"{t_sim / t_live:.3f} ({(t_sim / t_live - 1) * 100:+.1f} %)")


if __name__ == "__main__":
    main()
