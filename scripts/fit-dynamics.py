#!/usr/bin/python3
"""Fits a training-dynamics model (sim/train/dynamics.h) on live runs of fashion-mlp at FIXED
batch sizes only (issue 16, Figure 4): the runs of the steps CSVs whose batch never changed and
whose policy is none. The adaptive-batch run is then predicted by simulating with the file, never
fitted.

    /usr/bin/python3 scripts/fit-dynamics.py STEPS.csv[.gz] [...] --lr 0.05 --base-batch 128 \\
        --momentum 0.9 -o traces/dynamics/fashion-mlp.yaml

The model (its sources are in sim/train/dynamics.h):
  progress:   a step at global batch B adds B (k B_simple + B0) / (k B_simple + B)   (Pollux)
  accuracy:   final - (final - chance) (1 + P / tau)^-alpha                           (pow4)
  B_simple(P) as the runs measured it (their gradient-noise-scale.b_simple readings)
B0 is the smallest global batch among the fixed runs, chance 0.1 (Fashion-MNIST's ten balanced
classes). Fitted: k (noise_factor), tau, alpha and final, by least squares on the test accuracy
at every evaluation of every fixed run: a grid over k, tau and alpha, final in closed form. Each
run's progress uses its own B_simple readings (the step's previous reading), so k moves only the
larger batches' progress; B_simple(P) is then the median of the pooled readings in bins of
progress. Writes the YAML atomically and prints the fit's residuals per run.
"""
import argparse
import hashlib
import math
import os
import shlex
import sys

import numpy as np
import pandas as pd

CHANCE = 0.1  # Fashion-MNIST: ten classes, 7,000 images each (Xiao et al. 2017, arXiv:1708.07747)
RUN_KEYS_BEFORE = "step"  # the columns before `step` name a run


def parse_readings(cell):
    out = {}
    for tok in str(cell).split():
        if "=" in tok:
            k, v = tok.split("=", 1)
            try:
                out[k] = float(v)
            except ValueError:
                pass
    return out


def fixed_runs(paths):
    runs = []
    for path in paths:
        df = pd.read_csv(path)
        cols = list(df.columns)
        if "step" not in cols or "readings" not in cols:
            sys.exit(f"fit-dynamics: {path}: not a training steps CSV (no step or readings column)")
        keys = cols[: cols.index(RUN_KEYS_BEFORE)]
        for key, g in df.groupby(keys, sort=False, dropna=False):
            key = dict(zip(keys, key if isinstance(key, tuple) else (key,)))
            if key.get("mode") != "live" or key.get("model") != "fashion-mlp":
                continue
            policy = str(key.get("policy", key.get("sweep.policy", "{name: none}")))
            if "name: none" not in policy or g["batch_per_gpu"].nunique() != 1:
                continue  # only fixed batches are fitted on
            g = g.sort_values("step")
            r = g["readings"].map(parse_readings)
            batch = (g["batch_per_gpu"] * g["workers"]).to_numpy(float)
            bs = np.array([d.get("gradient-noise-scale.b_simple", np.nan) for d in r])
            if np.isnan(bs).all():
                sys.exit(f"fit-dynamics: {path}: run {key} has no gradient-noise-scale readings")
            bs = pd.Series(bs).ffill().bfill().to_numpy()
            acc = np.array([d.get("learn.test_accuracy", np.nan) for d in r])
            samples = np.array([d.get("learn.samples", np.nan) for d in r])
            runs.append({"name": f"{os.path.basename(path)} batch {int(batch[0])}",
                         "batch": batch, "b_simple": bs, "acc": acc, "samples": samples})
    if not runs:
        sys.exit("fit-dynamics: no live fixed-batch fashion-mlp run in the inputs")
    return runs


def progress_of(run, k, b0):
    # The step's efficiency from the reading before it (the first step's own).
    prev = np.concatenate([run["b_simple"][:1], run["b_simple"][:-1]])
    noise = k * np.maximum(prev, 0)
    return np.cumsum(run["batch"] * (noise + b0) / (noise + run["batch"]))


def fit(runs, b0):
    best = None
    ks = np.exp(np.linspace(math.log(0.02), math.log(50), 121))
    taus = np.exp(np.linspace(math.log(1), math.log(1e7), 211))
    alphas = np.linspace(0.05, 3.0, 119)
    for k in ks:
        P, A = [], []
        for run in runs:
            p = progress_of(run, k, b0)
            m = ~np.isnan(run["acc"])
            P.append(p[m]); A.append(run["acc"][m])
        P = np.concatenate(P); A = np.concatenate(A)
        # f[tau, alpha, point]
        f = (1 + P[None, None, :] / taus[:, None, None]) ** -alphas[None, :, None]
        one = 1 - f
        final = ((A - CHANCE * f) * one).sum(-1) / np.maximum((one * one).sum(-1), 1e-300)
        final = np.clip(final, CHANCE + 1e-6, 1.0)
        sse = ((final[..., None] - (final[..., None] - CHANCE) * f - A) ** 2).sum(-1)
        i, j = np.unravel_index(np.argmin(sse), sse.shape)
        if best is None or sse[i, j] < best[0]:
            best = (sse[i, j], k, taus[i], alphas[j], final[i, j], len(A))
    return best


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("steps", nargs="+")
    ap.add_argument("--lr", type=float, required=True)
    ap.add_argument("--base-batch", type=int, required=True)
    ap.add_argument("--momentum", type=float, required=True)
    ap.add_argument("--bins", type=int, default=16)
    ap.add_argument("--comment", default="", help="a line on where the runs came from")
    ap.add_argument("-o", "--output", required=True)
    a = ap.parse_args()
    runs = fixed_runs(a.steps)
    b0 = min(r["batch"][0] for r in runs)
    sse, k, tau, alpha, final, n = fit(runs, b0)
    accuracy = lambda p: final - (final - CHANCE) * (1 + p / tau) ** -alpha
    # B_simple against progress at the fitted k: medians in log-spaced bins.
    P = np.concatenate([progress_of(r, k, b0) for r in runs])
    B = np.concatenate([r["b_simple"] for r in runs])
    edges = np.exp(np.linspace(math.log(P.min()), math.log(P.max()), a.bins + 1))
    edges[-1] *= 1.0000001
    points = []
    for lo, hi in zip(edges[:-1], edges[1:]):
        m = (P >= lo) & (P < hi)
        if m.sum() >= 3:
            points.append((float(np.median(P[m])), float(np.median(B[m]))))
    print(f"fitted on {len(runs)} fixed-batch runs, {n} evaluations: B0 {b0:g}, noise_factor "
          f"{k:.4g}, tau {tau:.4g} samples, alpha {alpha:.4g}, final {final:.4f}, "
          f"RMSE {math.sqrt(sse / n):.4f}")
    for r in runs:
        p = progress_of(r, k, b0)
        m = ~np.isnan(r["acc"])
        res = r["acc"][m] - accuracy(p[m])
        print(f"  {r['name']}: {m.sum()} evaluations, residual mean {res.mean():+.4f}, "
              f"RMSE {math.sqrt((res ** 2).mean()):.4f}, progress at the end {p[-1]:.0f} of "
              f"{r['samples'][-1]:.0f} samples")
    digests = ", ".join(f"{os.path.basename(s)} (sha256 {hashlib.sha256(open(s, 'rb').read()).hexdigest()[:12]})"
                        for s in a.steps)
    lines = [
        "# Training dynamics of fashion-mlp (sim/train/dynamics.h), written by scripts/fit-dynamics.py",
        "# from live fixed-batch runs only; the adaptive-batch run is predicted with it, not fitted.",
        "# Command: " + shlex.join(["scripts/fit-dynamics.py"] + sys.argv[1:]),
    ] + (["# " + a.comment] if a.comment else []) + [
        "dynamics: adaptsim-dynamics/1",
        "model: fashion-mlp",
        f'source: "fit-dynamics.py on the fixed-batch live runs of {digests}; RMSE {math.sqrt(sse / n):.4f} over {n} evaluations"',
        f"fitted_on: {{lr: {a.lr!r}, base_batch: {a.base_batch}, momentum: {a.momentum!r}}}",
        f"base_batch: {b0:g}",
        f"noise_factor: {k:.6g}",
        f"accuracy: {{chance: {CHANCE}, final: {final:.6g}, tau_samples: {tau:.6g}, alpha: {alpha:.6g}}}",
        "noise_scale:  # [progress (samples at base_batch), B_simple], medians of the pooled readings",
    ] + [f"  - [{p:.6g}, {b:.6g}]" for p, b in points]
    tmp = a.output + ".tmp"
    os.makedirs(os.path.dirname(os.path.abspath(a.output)), exist_ok=True)
    with open(tmp, "w") as f:
        f.write("\n".join(lines) + "\n")
    os.replace(tmp, a.output)
    print(f"wrote {a.output}")


if __name__ == "__main__":
    main()
