#!/usr/bin/env python3
"""Figure 10 on two DGX-1 (16 GPUs): how each system crosses the servers, switched in turn (issue 17 item 4).

    python3 scripts/fig10-ablation.py [--simctl build/sim/simctl/simctl] [-o docs/data/fig10-ablation.csv]

Runs scenarios/fig10.yaml at 2 servers (ResNet-50, MobileNetV2, VGG-16, batch 32 per GPU) with
these systems beside ideal:

    kungfu-tcp          KungFu's own path: host staging, BINARY_TREE_STAR over TCP on ib0
    hierarchical        NCCL reduce and broadcast inside each server, KungFu across the masters
    nccl-ib             flat NCCL over all 16 GPUs, IB verbs on the four HCAs (NCCL's default
                        wherever libibverbs finds an active port)
    nccl-socket         flat NCCL 2.4 by its socket transport over one IP interface (ib0): one
                        ring per card, doubled (2 channels), one TCP connection per channel and
                        direction, both channels' sockets on one proxy thread per boundary GPU
    nccl-socket-4if     the same over four IP interfaces (ib0..ib3 all configured)
    horovod-nccl        Horovod's coordinator cycle, flat NCCL over IB verbs

each with the DGX-1's per-connection limit of IP over InfiniBand (topologies/dgx1.yaml
nic_stream_bandwidth, 20 Gbit/s, sourced), without it, and, as a sensitivity (no source), at
10, 5, 2.5 and 1 Gbit/s, and prints img/s per GPU, the order of the three systems the paper
compares (flat NCCL, KungFu TCP, hierarchical) under each transport, and each mechanism's
effect. Writes every row to the CSV (temporary file, then rename).
"""

import argparse
import os
import sys
import tempfile

from atomic_csv import write_rows
from simctl_rows import simulate

SYSTEMS = ("[{label: ideal, kind: ideal},"
           " {label: kungfu-tcp, kind: kungfu, strategy: BINARY_TREE_STAR},"
           " {label: hierarchical, kind: hierarchical},"
           " {label: nccl-ib, kind: nccl},"
           " {label: nccl-socket, kind: nccl, nccl_net: {transport: socket}},"
           " {label: nccl-socket-4if, kind: nccl, nccl_net: {transport: socket, interfaces: 4}},"
           " {label: horovod-nccl, kind: horovod-nccl}]")
# The per-connection limit as the topology ships it, and switched off (null: the link's rate only).
STREAMS = [("20Gbps", None), ("none", "null")]
# Sensitivity, not a source: the order as that limit falls (every TCP system slows with it).
SENSITIVITY = ["10Gbps", "5Gbps", "2.5Gbps", "1Gbps"]
MODELS = ("resnet50", "mobilenetv2", "vgg16")
SHOWN = ("ideal", "kungfu-tcp", "hierarchical", "nccl-ib", "nccl-socket", "nccl-socket-4if",
         "horovod-nccl")


def run(simctl, params, out_dir):
    sets = ["sweep.topology.params.servers=[2]", f"workload.systems={SYSTEMS}"]
    if params:
        sets.append(f"topology.params.nic_stream_bandwidth={params}")
    return simulate(simctl, "scenarios/fig10.yaml", out_dir, "fig10.csv", sets)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--simctl", default="build/sim/simctl/simctl")
    ap.add_argument("-o", "--out", default="docs/data/fig10-ablation.csv")
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for stream, params in STREAMS + [(s, s) for s in SENSITIVITY]:
            for r in run(args.simctl, params, os.path.join(tmp, stream)):
                r["ipoib_stream_limit"] = stream
                rows.append(r)

    def thr(stream, model, system):
        for r in rows:
            if (r["ipoib_stream_limit"], r["model"], r["system"]) == (stream, model, system):
                return float(r["throughput_per_gpu_samples_per_s"])
        sys.exit(f"no row for {stream} {model} {system}")

    for model in MODELS:
        print(f"\n{model}, 2 DGX-1 (16 GPUs), img/s per GPU (share of ideal)")
        print("  IPoIB limit  " + "".join(f"{s:>17s}" for s in SHOWN))
        for stream in [s for s, _ in STREAMS] + SENSITIVITY:
            ideal = thr(stream, model, "ideal")
            cells = [f"{ideal:17.1f}"]
            for s in SHOWN[1:]:
                t = thr(stream, model, s)
                cells.append(f"{t:10.1f} ({100 * t / ideal:3.0f}%)")
            print(f"  {stream:12s} " + "".join(cells))
        for stream in [s for s, _ in STREAMS] + SENSITIVITY:
            for flat in ("nccl-ib", "nccl-socket"):
                three = sorted((("flat NCCL", flat), ("KungFu TCP", "kungfu-tcp"),
                                ("hierarchical", "hierarchical")),
                               key=lambda x: -thr(stream, model, x[1]))
                print(f"  order, IPoIB limit {stream}, flat NCCL by {flat[5:]}: " +
                      " > ".join(f"{name} {thr(stream, model, s):.1f}" for name, s in three))
        print("  effects (img/s per GPU): " + ", ".join([
            f"IPoIB limit on kungfu-tcp {thr('20Gbps', model, 'kungfu-tcp') - thr('none', model, 'kungfu-tcp'):+.1f}",
            f"on hierarchical {thr('20Gbps', model, 'hierarchical') - thr('none', model, 'hierarchical'):+.1f}",
            f"sockets instead of IB verbs on flat NCCL {thr('20Gbps', model, 'nccl-socket') - thr('20Gbps', model, 'nccl-ib'):+.1f}",
            f"four interfaces instead of one {thr('20Gbps', model, 'nccl-socket-4if') - thr('20Gbps', model, 'nccl-socket'):+.1f}"]))

    write_rows(args.out, rows, ["ipoib_stream_limit"] + [k for k in rows[0].keys() if k != "ipoib_stream_limit"])
    print(f"\nwrote {args.out} ({len(rows)} rows)")


if __name__ == "__main__":
    main()
