#!/usr/bin/env python3
"""Figure 7's resize phases, simulated against live: the tables of docs/figures.md (Figure 7).

Usage: fig7-phases.py SIM_STEPS_CSV LIVE_STEPS_CSV [LIVE_STEPS_CSV ...]

Each CSV is a steps CSV of the same elastic scenario (scenarios/fig7-local.yaml or
fig7-testbed.yaml) run simulated and live (`simctl run [--live] SCENARIO -o DIR`). For every
resize (a step with a decision), by mechanism and sizes, it prints each phase's reading in ms
(`resize.<phase>_s`, the slowest worker's): the simulated value, and the live median with its
minimum and maximum over the live runs given. Standard library only.
"""
import csv
import statistics
import sys

PHASES = ["consensus", "propose", "reconnect", "checkpoint", "join.process_start",
          "join.restore", "join.connect", "join.barrier", "barrier", "sync", "broadcast", "total"]


def load(path):
    out = {}
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            if not row["decision"]:
                continue
            readings = dict(kv.split("=", 1) for kv in row["readings"].split())
            key = (row.get("mechanism", ""), row.get("sizes", ""), row["decision"])
            out[key] = {p: float(readings[f"resize.{p}_s"]) * 1e3 for p in PHASES
                        if f"resize.{p}_s" in readings}
    return out


def main():
    if len(sys.argv) < 3:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    sim = load(sys.argv[1])
    lives = [load(p) for p in sys.argv[2:]]
    for key, phases in sim.items():
        print(" ".join(k for k in key if k))
        for p in PHASES:
            if p not in phases:
                continue
            values = sorted(l[key][p] for l in lives if key in l and p in l[key])
            live = (f"{statistics.median(values):8.1f} ({values[0]:.1f}-{values[-1]:.1f})"
                    if values else "       -")
            print(f"  {p:20s} sim {phases[p]:8.1f}  live {live}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
