#!/usr/bin/python3
"""Per-connection goodput and window state from scripts/testbed-ss-trace.sh's `ss -tin` polls.

Usage: /usr/bin/python3 plots/ss_trace.py OUT [--bin SECONDS] [--window S>D ...]

OUT/ss-hK.txt holds host K's polls (a timestamp line, then `ss -tin` output). Hosts are numbered
by their testbed address (10.x.y.K+1 is host K). Prints, per interval of --bin seconds from the
first poll, the goodput (MB/s of bytes acknowledged) of every host pair S>D whose connections
carried more than 1 MB (its connections summed); --window S>D prints each of the pair's
connections' cwnd, ssthresh (segments), smoothed RTT (ms) and unsent bytes at every poll.
"""
import argparse
import collections
import glob
import os
import re
import sys

STAMP = re.compile(r"^\d+\.\d+$")
CONN = re.compile(r"ESTAB\s+\d+\s+(\d+)\s+\S+:(\d+)\s+(\S+):(\d+)")


def field(line, key):
    m = re.search(r"(?:^|\s)" + key + r":([\d.]+)", line)
    return float(m.group(1)) if m else None


def show(value, fmt):
    return "-" if value is None else fmt % value


def load(out):
    polls = {}  # (src, dst) -> [(t, bytes_acked, cwnd, ssthresh, rtt, send_q)]
    for path in sorted(glob.glob(os.path.join(out, "ss-h*.txt"))):
        src = int(re.search(r"ss-h(\d+)\.txt$", path).group(1))
        t, peer, send_q = None, None, 0
        for line in open(path):
            line = line.rstrip("\n")
            if STAMP.match(line.strip()):
                t = float(line)
                continue
            m = CONN.search(line)
            if m:
                send_q = int(m.group(1))
                peer = int(m.group(3).split(".")[-1]) - 1
                ports = (int(m.group(2)), int(m.group(4)))  # one host pair may hold several
                continue
            if peer is not None and "bytes_acked" in line:
                polls.setdefault((src, peer, ports), []).append(
                    (t, field(line, "bytes_acked"), field(line, "cwnd"), field(line, "ssthresh"),
                     field(line, "rtt"), send_q))
                peer = None
    return polls


def binned_bytes(polls, width):
    """Bytes acknowledged per interval of `width` seconds from the first poll: {bin: {(s, d): B}},
    summed over the host pair's connections (each pair of consecutive polls of one connection
    counts in the interval of the first)."""
    t0 = min(v[0][0] for v in polls.values())
    rates = collections.defaultdict(dict)
    for (s, d, _), v in polls.items():
        v.sort()
        for (ta, a_bytes, *_), (tb, b_bytes, *_) in zip(v, v[1:]):
            if tb > ta and b_bytes >= a_bytes:
                b = int((ta - t0) / width)
                rates[b][(s, d)] = rates[b].get((s, d), 0) + b_bytes - a_bytes
    return rates


def carried(polls):
    """The host pairs S>D whose connections carried more than 1 MB, sorted."""
    return sorted({(s, d) for (s, d, _), v in polls.items() if max(x[1] for x in v) > 1e6})


def main():
    p = argparse.ArgumentParser(usage=__doc__)
    p.add_argument("out")
    p.add_argument("--bin", type=float, default=0.25)
    p.add_argument("--window", nargs="+", default=[], metavar="S>D")
    a = p.parse_args()
    polls = load(a.out)
    if not polls:
        sys.exit(f"{a.out}: no ss polls with established connections (ss-hK.txt)")
    t0 = min(v[0][0] for v in polls.values())
    rates = binned_bytes(polls, a.bin)
    keys = carried(polls)
    print("goodput (MB/s) per connection S>D, per %.2f s" % a.bin)
    print("  t(s) " + " ".join("%5s" % f"{s}>{d}" for s, d in keys))
    for b in sorted(rates):
        print("%6.2f " % (b * a.bin) + " ".join(
            "%5.1f" % (rates[b].get(k, 0) / a.bin / 1e6) for k in keys))
    for name in a.window:
        s, d = (int(x) for x in name.split(">"))
        for (ps, pd, ports), v in sorted(polls.items()):
            if (ps, pd) != (s, d):
                continue
            print(f"\nconnection {name} (ports {ports[0]}>{ports[1]}): "
                  "t(s) cwnd ssthresh rtt(ms) unsent(B)")
            for t, _, cwnd, ssthresh, rtt, send_q in sorted(v):
                print("%6.2f %5s %5s %7s %9d" % (t - t0, show(cwnd, "%d"), show(ssthresh, "%d"),
                                                show(rtt, "%g"), send_q))


if __name__ == "__main__":
    main()
