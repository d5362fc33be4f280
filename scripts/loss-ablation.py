#!/usr/bin/env python3
"""Training under packet loss: each loss mechanism of the model switched off in turn, against the live rows (issue 20 item 4).

    python3 scripts/loss-ablation.py [--simctl build/sim/simctl/simctl]
        [--live docs/data/loss.compare.csv] [-o docs/data/loss-ablation.csv]

Simulates scenarios/loss.yaml four times:

    none     a lossy path's resent bytes and Padhye's window bound only (the model before
             2026-11-27)
    rates    + each lossy connection capped at the rate one CUBIC connection was measured to
             keep at its path's loss (workload.loss_rates, traces/loss/testbed-1Gbps-cubic.csv)
    timers   + a message whose last segment is lost waits for Linux's loss probe or
             retransmission timer unless the connection's next data reveals it
             (workload.loss_timers), without the measured rates
    both     the scenario as shipped

and prints each row's step time beside the live one of `--live` (a `simctl compare` CSV of the
same scenario), each variant's median |error| over all rows and over the lossy ones, and how many
rows are within 15 %. Writes every row to the CSV (temporary file, then rename).
"""

import argparse
import csv
import os
import statistics
import sys
import tempfile

from atomic_csv import write_rows
from simctl_rows import simulate

VARIANTS = [
    ("none", ["workload.loss_rates=null", "workload.loss_timers=false"]),
    ("rates", ["workload.loss_timers=false"]),
    ("timers", ["workload.loss_rates=null"]),
    ("both", []),
]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--simctl", default="build/sim/simctl/simctl")
    ap.add_argument("--live", default="docs/data/loss.compare.csv")
    ap.add_argument("-o", "--out", default="docs/data/loss-ablation.csv")
    args = ap.parse_args()
    with open(args.live, newline="") as f:
        live = {(r["nic_loss"], r["system"]): float(r["live_step_ms"]) for r in csv.DictReader(f)}
    sim = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, sets in VARIANTS:
            for r in simulate(args.simctl, "scenarios/loss.yaml", os.path.join(tmp, name),
                              "loss.csv", sets):
                sim[(name, r["nic_loss"], r["system"])] = float(r["step_time_ms_mean"])
    rows = []
    print("step time, s: live, then each variant simulated (error)")
    print(f"{'loss':6s}{'system':18s}{'live':>7s}" + "".join(f"{n:>17s}" for n, _ in VARIANTS))
    for (loss, system), lv in live.items():
        cells = ""
        row = {"nic_loss": loss, "system": system, "live_step_ms": f"{lv:.3f}"}
        for name, _ in VARIANTS:
            s = sim.get((name, loss, system))
            if s is None:
                sys.exit(f"loss-ablation: no simulated row for {loss} {system} ({name})")
            row[f"{name}_step_ms"] = f"{s:.3f}"
            row[f"{name}_rel_error"] = f"{(s - lv) / lv:.5f}"
            cells += f"{s / 1e3:9.2f} ({(s - lv) / lv * 100:+4.0f}%)"
        rows.append(row)
        print(f"{loss:6s}{system:18s}{lv / 1e3:7.2f}{cells}")
    for name, _ in VARIANTS:
        errors = [abs(float(r[f"{name}_rel_error"])) for r in rows]
        lossy = [abs(float(r[f"{name}_rel_error"])) for r in rows if r["nic_loss"] != "0%"]
        print(f"{name:7s} median |error| {statistics.median(errors) * 100:5.1f} % (lossy rows "
              f"{statistics.median(lossy) * 100:5.1f} %), within 15 %: "
              f"{sum(e <= 0.15 for e in errors)} of {len(errors)}")
    write_rows(args.out, rows)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
