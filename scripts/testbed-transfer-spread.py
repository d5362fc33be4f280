#!/usr/bin/env python3
"""How much the time of one TCP transfer varies on the testbed (issue 17 item 2).

    scripts/testbed-transfer-spread.py OUT_CSV [--sizes 65536,262144,1048576,4194304]
        [--reps 20] [--cap 1Gbps] [--congestion-control cubic] [--build build]      (root)

Open MPI's exchanges fall out of step when one pair of ranks finishes before another
(docs/validation.md "On a core per rank"): this measures the spread that starts it. A testbed of 4
cloud VMs (adaptsim-testbed, every NIC capped at CAP both ways, the congestion control every
namespace's default) carries two independent transfers at once, h0 -> h1 and h2 -> h3, over one
connection per pair kept for all repetitions (as the TCP BTL keeps its connections). Each
repetition starts both senders at the same instant of CLOCK_MONOTONIC (shared by the namespaces;
the last millisecond spun, not slept) and each receiver notes when its last byte arrived. Writes
one row per repetition, size and pair (size_bytes, rep, pair, start_ns, duration_us), and prints
per size the durations' mean, coefficient of variation, and the median and 90th percentile of the
two pairs' difference in finishing time.
"""

import argparse
import os
import socket
import statistics
import subprocess
import sys
import time

PORT = 7300


def spin_until(t_ns):
    while True:
        left = t_ns - time.monotonic_ns()
        if left <= 0:
            return
        if left > 2_000_000:
            time.sleep((left - 1_000_000) / 1e9)


def role_send(peer, sizes, reps, t0_ns, period_ns):
    s = socket.create_connection((peer, PORT), timeout=30)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    buf = bytearray(max(sizes))
    k = 0
    for size in sizes:
        view = memoryview(buf)[:size]
        for _ in range(reps):
            start = t0_ns + k * period_ns
            spin_until(start)
            print(f"start {size} {k} {time.monotonic_ns()}", flush=True)
            s.sendall(view)
            k += 1
    s.close()


def role_recv(sizes, reps):
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("0.0.0.0", PORT))
    ls.listen(1)
    ls.settimeout(30)
    c, _ = ls.accept()
    c.settimeout(60)
    buf = bytearray(max(sizes))
    k = 0
    for size in sizes:
        view = memoryview(buf)
        for _ in range(reps):
            got = 0
            while got < size:
                n = c.recv_into(view[got:size])
                if n == 0:
                    sys.exit("receiver: the sender closed early")
                got += n
            print(f"end {size} {k} {time.monotonic_ns()}", flush=True)
            k += 1
    c.close()


def in_testbed(args, sizes):
    ips = os.environ["ADAPTSIM_TESTBED_HOSTS"].split(",")
    nss = os.environ["ADAPTSIM_TESTBED_NS"].split(",")
    me = os.path.abspath(__file__)
    # The longest repetition at the cap, twice over, and 20 ms between repetitions.
    cap_Bps = args.cap_bps / 8
    period_ns = int((2 * max(sizes) / cap_Bps + 0.02) * 1e9)
    t0_ns = time.monotonic_ns() + 2_000_000_000
    common = ["--sizes", ",".join(map(str, sizes)), "--reps", str(args.reps)]
    procs = []
    for pair, (src, dst) in enumerate([(0, 1), (2, 3)]):
        recv = subprocess.Popen(["ip", "netns", "exec", nss[dst], sys.executable, me, "--role", "recv"]
                                + common, stdout=subprocess.PIPE, text=True)
        procs.append((pair, "recv", recv))
    time.sleep(0.5)
    for pair, (src, dst) in enumerate([(0, 1), (2, 3)]):
        send = subprocess.Popen(["ip", "netns", "exec", nss[src], sys.executable, me, "--role", "send",
                                 "--peer", ips[dst], "--t0", str(t0_ns), "--period", str(period_ns)]
                                + common, stdout=subprocess.PIPE, text=True)
        procs.append((pair, "send", send))
    starts, ends = {}, {}
    for pair, role, p in procs:
        out, _ = p.communicate(timeout=600)
        if p.returncode != 0:
            sys.exit(f"pair {pair} {role}: exit {p.returncode}")
        for line in out.splitlines():
            kind, size, k, ns = line.split()
            (starts if kind == "start" else ends)[(pair, int(k))] = (int(size), int(ns))
    rows = []
    for (pair, k), (size, end_ns) in sorted(ends.items()):
        start_ns = starts[(pair, k)][1]
        rows.append((size, k, pair, start_ns, end_ns))
    tmp = args.out + ".tmp"
    with open(tmp, "w") as f:
        f.write("size_bytes,rep,pair,start_ns,end_ns,duration_us\n")
        for size, k, pair, s, e in rows:
            f.write(f"{size},{k},{pair},{s},{e},{(e - s) / 1e3:.1f}\n")
    os.replace(tmp, args.out)
    print(f"wrote {args.out}: {len(rows)} rows")
    print("size_bytes  duration mean (us)  cv      |end0 - end1| median  p90 (us)   wire time (us)")
    for size in sizes:
        d = [(e - s) / 1e3 for sz, k, pair, s, e in rows if sz == size]
        ends_by_k = {}
        for sz, k, pair, s, e in rows:
            if sz == size:
                ends_by_k.setdefault(k, {})[pair] = e
        skew = sorted(abs(v[0] - v[1]) / 1e3 for v in ends_by_k.values() if len(v) == 2)
        cv = statistics.pstdev(d) / statistics.mean(d)
        p90 = skew[int(0.9 * (len(skew) - 1))]
        print(f"{size:10d}  {statistics.mean(d):18.1f}  {cv:6.3f}  {statistics.median(skew):20.1f}"
              f"  {p90:8.1f}   {size / cap_Bps * 1e6:10.1f}")


def parse_rate(text):
    units = {"Gbps": 1e9, "Mbps": 1e6, "Kbps": 1e3}
    for u, f in units.items():
        if text.endswith(u):
            return float(text[: -len(u)]) * f
    sys.exit(f"--cap: expected e.g. 1Gbps, got {text}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", nargs="?")
    ap.add_argument("--sizes", default="65536,262144,1048576,4194304")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--cap", default="1Gbps")
    ap.add_argument("--congestion-control", default="cubic")
    ap.add_argument("--build", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build"))
    ap.add_argument("--role", choices=["send", "recv", "testbed"])
    ap.add_argument("--peer")
    ap.add_argument("--t0", type=int)
    ap.add_argument("--period", type=int)
    args = ap.parse_args()
    sizes = [int(x) for x in args.sizes.split(",")]
    if args.role == "send":
        return role_send(args.peer, sizes, args.reps, args.t0, args.period)
    if args.role == "recv":
        return role_recv(sizes, args.reps)
    if not args.out:
        ap.error("OUT_CSV is required")
    args.cap_bps = parse_rate(args.cap)
    if args.role == "testbed":
        return in_testbed(args, sizes)
    tool = os.path.join(args.build, "hw", "testbed", "adaptsim-testbed")
    topo = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "topologies", "cloud-vms.yaml")
    cmd = [tool, "run", topo, "--prefix", "tspread", "--set", "servers=4", "--set",
           f"nic_bandwidth={args.cap}", "-q"]
    if args.congestion_control:
        cmd += ["--congestion-control", args.congestion_control]
    cmd += ["--", sys.executable, os.path.abspath(__file__), os.path.abspath(args.out), "--role", "testbed",
            "--sizes", args.sizes, "--reps", str(args.reps), "--cap", args.cap]
    sys.exit(subprocess.call(cmd))


if __name__ == "__main__":
    main()
