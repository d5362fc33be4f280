#!/usr/bin/env python3
"""The NCCL model against published nccl-tests all-reduce results (issue 17 item 5).

    python3 scripts/compare-nccl.py [--simctl build/sim/simctl/simctl]
        [--published docs/data/nccl/published-allreduce.csv] [-o OUT_CSV]

For every topology (and server count) in the published file, runs an all-reduce sweep with the
`nccl: true` series (NCCL's own cost model over the topology's GPUs, sim/train/nccl_model.h) at
the published sizes and prints predicted against published bus bandwidth per size, the error
(predicted - published) / published, and the median |error| over all rows and over the rows
whose NVLS column is "off" (the model has no NVLS/SHARP: where NCCL used it, the published
bus bandwidth is not the one a ring or tree on the wire gives). Writes every pair to OUT_CSV.
"""

import argparse
import csv
import os
import statistics
import sys
import tempfile

from atomic_csv import write_rows
from simctl_rows import simulate


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--simctl", default="build/sim/simctl/simctl")
    ap.add_argument("--published", default="docs/data/nccl/published-allreduce.csv")
    ap.add_argument("-o", "--out", default="")
    args = ap.parse_args()
    with open(args.published, newline="") as f:
        published = list(csv.DictReader(f))
    if not published:
        sys.exit(f"{args.published}: no rows")
    root = os.getcwd()
    predicted = {}
    with tempfile.TemporaryDirectory() as tmp:
        # A row whose run had NVLS off (NCCL_ALGO=Ring, NVLS disabled) is predicted so too.
        for (topology, servers, nvls) in sorted({(p["topology"], p["servers"], p["nvls"]) for p in published}):
            sizes = sorted({int(p["size_bytes"]) for p in published
                            if (p["topology"], p["servers"], p["nvls"]) == (topology, servers, nvls)})
            for size in sizes:
                scenario = os.path.join(tmp, "nccl.yaml")
                with open(scenario, "w") as f:
                    f.write("name: nccl\n"
                            f"topology: {{file: {os.path.join(root, topology)}, params: {{servers: {servers}}}}}\n"
                            "workload: {kind: allreduce, nccl: true, endpoint: gpu, "
                            f"nccl_nvls: {'false' if nvls == 'off' else 'true'}, "
                            f"min_bytes: {size}B, max_bytes: {size}B}}\n")
                row = simulate(args.simctl, scenario, os.path.join(tmp, f"out-{size}"), "nccl.csv")[0]
                predicted[(topology, servers, nvls, size)] = float(row["busbw_GBps"])
    pairs = []
    for p in published:
        pred = predicted[(p["topology"], p["servers"], p["nvls"], int(p["size_bytes"]))]
        meas = float(p["busbw_GBps"])
        pairs.append({**p, "predicted_busbw_GBps": f"{pred:.2f}", "error": f"{(pred - meas) / meas:.4f}"})
    print(f"{'system':40s} {'size':>12s} {'published':>10s} {'model':>8s} {'error':>8s}")
    for q in pairs:
        print(f"{q['system']:40s} {int(q['size_bytes']):12d} {float(q['busbw_GBps']):10.1f} "
              f"{float(q['predicted_busbw_GBps']):8.1f} {100 * float(q['error']):+7.1f}%")
    for label, rows in (("all rows", pairs), ("rows without NVLS", [q for q in pairs if q["nvls"] == "off"])):
        if rows:
            e = [abs(float(q["error"])) for q in rows]
            print(f"{label}: {len(e)} rows, median |error| {100 * statistics.median(e):.1f} %, "
                  f"max {100 * max(e):.1f} %")
    if args.out:
        write_rows(args.out, pairs)
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
