#!/usr/bin/env python3
"""Figure 9 at 32 VMs: each of Horovod's modelled mechanisms switched off in turn (issue 17 item 3).

    python3 scripts/fig9-ablation.py [--simctl build/sim/simctl/simctl] [-o docs/data/fig9-ablation.csv]

Runs scenarios/fig9.yaml at 32 VMs over its egress caps, once per VM latency (the scenario's
sourced 95 us per hop; the project's earlier 12.5 us [U]; 227 us, half of the higher published
round trip of 908 us per hop pair), with these systems beside ideal and KungFu
MULTI_BINARY_TREE_STAR:

    horovod            Open MPI 4.0.0 as shipped: fixed decision, ob1 rendezvous above 64 KiB
    no-rendezvous      every message eager
    ring               the ring forced at every size (no recursive doubling below 10 000 B, no
                       segmented ring above ranks x 1 MiB): the fixed decision switched off
    ompi-4.1           Open MPI 4.1's decision (Rabenseifner from 128 B at 32 ranks)
    no-trees           the negotiation's gather and broadcasts straight to and from rank 0
                       instead of Open MPI 4.0.0's binomial trees
    neither            the ring forced, every message eager (the trees kept)

and prints img/s per GPU, the share of ideal, and each mechanism's share of Horovod's gap to
ideal: (throughput without it - throughput with all) / (ideal - throughput with all).
Writes every row to the CSV (temporary file, then rename).
"""

import argparse
import os
import sys
import tempfile

from atomic_csv import write_rows
from simctl_rows import simulate

SYSTEMS = ("[{label: ideal, kind: ideal},"
           " {label: kungfu-mbts, kind: kungfu, strategy: MULTI_BINARY_TREE_STAR},"
           " {label: horovod, kind: horovod, mpi: {version: 4.0.0}},"
           " {label: no-rendezvous, kind: horovod, mpi: {version: 4.0.0, rendezvous: false}},"
           " {label: ring, kind: horovod, mpi: {version: 4.0.0, algorithm: ring}},"
           " {label: ompi-4.1, kind: horovod, mpi: {version: 4.1.4}},"
           " {label: no-trees, kind: horovod, mpi: {version: 4.0.0, negotiation_trees: false}},"
           " {label: neither, kind: horovod, mpi: {version: 4.0.0, algorithm: ring, rendezvous: false}}]")
LATENCIES = [("95us", "sourced: 380 us round trip"), ("12.5us", "earlier [U]"),
             ("227us", "908 us round trip")]
ABLATIONS = [("no-rendezvous", "ob1's rendezvous"), ("ring", "the fixed decision (ring at every size)"),
             ("neither", "both"), ("no-trees", "the negotiation's trees")]


def run(simctl, latency, out_dir):
    return simulate(simctl, "scenarios/fig9.yaml", out_dir, "fig9.csv",
                    ["sweep.topology.params.servers=[32]", f"topology.params.nic_latency={latency}",
                     f"workload.systems={SYSTEMS}"])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--simctl", default="build/sim/simctl/simctl")
    ap.add_argument("-o", "--out", default="docs/data/fig9-ablation.csv")
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for latency, why in LATENCIES:
            for r in run(args.simctl, latency, os.path.join(tmp, latency)):
                r["nic_latency"] = latency
                rows.append(r)

    def thr(lat, cap, model, system):
        for r in rows:
            if (r["nic_latency"], r["nic_egress_bandwidth"], r["model"], r["system"]) == (lat, cap, model, system):
                return float(r["throughput_per_gpu_samples_per_s"])
        sys.exit(f"no row for {lat} {cap} {model} {system}")

    caps = []
    for r in rows:
        if r["nic_egress_bandwidth"] not in caps:
            caps.append(r["nic_egress_bandwidth"])
    for model in ("resnet50", "mobilenetv2"):
        print(f"\n{model}, 32 VMs, img/s per GPU (share of ideal)")
        for latency, why in LATENCIES:
            print(f"  VM latency {latency} per hop ({why})")
            print("    cap      " + "".join(f"{s:>16s}" for s in
                                          ("ideal", "kungfu-mbts", "horovod", "no-rendezvous", "ring", "ompi-4.1",
                                           "neither", "no-trees")))
            for cap in caps:
                ideal = thr(latency, cap, model, "ideal")
                cells = [f"{ideal:16.1f}"]
                for s in ("kungfu-mbts", "horovod", "no-rendezvous", "ring", "ompi-4.1", "neither",
                          "no-trees"):
                    t = thr(latency, cap, model, s)
                    cells.append(f"{t:9.1f} ({100 * t / ideal:3.0f}%)")
                print(f"    {cap:8s} " + "".join(cells))
            print("    share of Horovod's gap to ideal removed by switching off:")
            for cap in caps:
                ideal = thr(latency, cap, model, "ideal")
                full = thr(latency, cap, model, "horovod")
                gap = ideal - full
                parts = []
                for label, what in ABLATIONS:
                    share = (thr(latency, cap, model, label) - full) / gap if gap > 0 else 0.0
                    parts.append(f"{what} {100 * share:+5.0f}%")
                print(f"    {cap:8s} gap {gap:5.1f} img/s: " + ", ".join(parts))
        print(f"  the VM latency (95 us -> 12.5 us, full model): " + ", ".join(
            f"{cap} {100 * (thr('12.5us', cap, model, 'horovod') - thr('95us', cap, model, 'horovod')) / max(thr('95us', cap, model, 'ideal') - thr('95us', cap, model, 'horovod'), 1e-9):+.0f}%"
            for cap in caps))

    write_rows(args.out, rows, ["nic_latency"] + [k for k in rows[0].keys() if k != "nic_latency"])
    print(f"\nwrote {args.out} ({len(rows)} rows)")


if __name__ == "__main__":
    main()
