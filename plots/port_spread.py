#!/usr/bin/python3
"""How evenly each host's port is split among its connections, live or simulated.

Usage: /usr/bin/python3 plots/port_spread.py TRACE [TRACE ...] [--bin SECONDS] [--busy MBPS]

TRACE is a scripts/testbed-ss-trace.sh output folder (live: `ss -tin` polls, goodput = bytes
acknowledged) or a CSV from `simctl run --trace-connections DIR` (simulated: each message's bytes
spread evenly over its transmission). For every host and interval of --bin seconds (0.25) in
which its outgoing (fan-out) or incoming (fan-in) connections carry at least --busy MB/s (45,
3/4 of a 500 Mbit/s cap), with at least three connections that carried more than 1 MB over the
trace, it takes the coefficient of variation (population standard deviation / mean) of those
connections' goodputs. Prints the median per direction, the number of such intervals, and how
many of them had every connection sending (docs/validation.md item 18).
"""
import argparse
import collections
import csv
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ss_trace  # noqa: E402  (beside this file)


def sim_bins(path, width):
    """{bin: {(src, dst): bytes}} and the connections that carried > 1 MB, from a sim trace."""
    bins = collections.defaultdict(lambda: collections.defaultdict(float))
    total = collections.defaultdict(float)
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            key = (int(row["src_rank"]), int(row["dst_rank"]))
            t0, t1, size = float(row["start_s"]), float(row["end_s"]), float(row["bytes"])
            total[key] += size
            if t1 <= t0:
                bins[int(t0 / width)][key] += size
                continue
            t = t0
            while t < t1:
                k = int(t / width + 1e-9)
                end = min(t1, (k + 1) * width)
                bins[k][key] += size * (end - t) / (t1 - t0)
                t = end
    return bins, sorted(k for k, v in total.items() if v > 1e6)


def live_bins(folder, width):
    polls = ss_trace.load(folder)
    if not polls:
        sys.exit(f"{folder}: no ss polls with established connections (ss-hK.txt)")
    return ss_trace.binned_bytes(polls, width), ss_trace.carried(polls)


def spread(bins, keys, width, busy_MBps, side):
    """Per busy (host, interval): CV of the goodputs; side 0 = fan-out (by source), 1 = fan-in."""
    ports = collections.defaultdict(list)
    for key in keys:
        ports[key[side]].append(key)
    cvs, all_active = [], 0
    for b in sorted(bins):
        for conns in ports.values():
            if len(conns) < 3:
                continue
            rates = [bins[b].get(k, 0) / width / 1e6 for k in conns]
            if sum(rates) < busy_MBps:
                continue
            cvs.append(statistics.pstdev(rates) / statistics.mean(rates))
            all_active += min(rates) > 0
    return cvs, all_active


def main():
    p = argparse.ArgumentParser(usage=__doc__)
    p.add_argument("traces", nargs="+")
    p.add_argument("--bin", type=float, default=0.25)
    p.add_argument("--busy", type=float, default=45.0, help="MB/s")
    a = p.parse_args()
    for trace in a.traces:
        if os.path.isdir(trace):
            bins, keys = live_bins(trace, a.bin)
        elif os.path.isfile(trace):
            bins, keys = sim_bins(trace, a.bin)
        else:
            sys.exit(f"{trace}: no such trace (an ss-trace folder or a .connections.csv)")
        parts = []
        for name, side in (("fan-out", 0), ("fan-in", 1)):
            cvs, active = spread(bins, keys, a.bin, a.busy, side)
            if cvs:
                parts.append(f"{name} CV {statistics.median(cvs):.2f} over {len(cvs)} busy "
                             f"intervals ({active} all active)")
            else:
                parts.append(f"{name}: no busy interval")
        print(f"{trace}: " + "; ".join(parts))


if __name__ == "__main__":
    main()
