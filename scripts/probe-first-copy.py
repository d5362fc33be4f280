#!/usr/bin/env python3
"""What a kernel copy of a buffer costs the first time, on this machine.

Live runs on local processes (Figures 4, 7 and 8 on this machine) move buffers through the
kernel: socket sends and receives over loopback, checkpoint writes and reads through the page
cache. On a bare-metal host, or a VM with hardware-assisted paging, a page that the process has
already written costs the kernel's copy nothing more the first time than the next. Under a
software-paged VM (PVM: the guest kernel and guest user space run under separate shadow page
tables) the guest kernel's first access to each user page faults to the hypervisor, so the
first copy of a buffer, in either direction, is several times slower than the next one. A
new process's state, a checkpoint written from memory no socket has touched, a restore read into
fresh buffers, the first all-reduce after a join: each pays it once. The simulated clusters do
not (they model hosts where it is free), so a local live comparison is only valid where it is
small: run this first.

Every buffer here is written by user space first (mmap, then a write of every byte), so what is
measured is the kernel's first copy of a page the process already touched, not a page fault:
  - loopback TCP, 4 cases: each end's buffer warm (copied by the kernel before) or fresh;
  - a file in $TMPDIR (the page cache): write() from and read() into a warm or a fresh buffer.
Prints the medians and the extra cost of a fresh buffer in ns per byte; exit 0.

  scripts/probe-first-copy.py                 # 64 MiB, 5 repetitions of every case
  scripts/probe-first-copy.py --mib 128 --reps 5
Stdlib only (python3 or /usr/bin/python3).
"""

import argparse
import mmap
import os
import socket
import statistics
import sys
import tempfile
import time


def touched(size):
    """A buffer user space has written (every page mapped), which no kernel copy has read."""
    buf = mmap.mmap(-1, size)
    chunk = b"\x01" * (1 << 20)
    for off in range(0, size, len(chunk)):
        buf[off:off + len(chunk)] = chunk[: size - off]
    return buf


def recv_exactly(conn, buf, size):
    view = memoryview(buf)
    got = 0
    while got < size:
        n = conn.recv_into(view[got:], size - got)
        if n == 0:
            raise RuntimeError("the sending process closed the connection early")
        got += n


def socket_cases(size, reps):
    """Median seconds per transfer for (sender, receiver) in {warm, fresh}^2."""
    cases = [(s, r) for _ in range(reps) for s in ("warm", "fresh") for r in ("warm", "fresh")]
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    port = listener.getsockname()[1]
    pid = os.fork()
    if pid == 0:  # the sender
        try:
            conn = socket.create_connection(("127.0.0.1", port), timeout=60)
            warm = touched(size)
            conn.sendall(warm)  # its first copy, untimed: warm from now on
            for sender, _ in cases:
                buf = touched(size) if sender == "fresh" else warm
                conn.sendall(b"r")  # ready: the receiver starts its clock after this
                if conn.recv(1) != b"g":
                    os._exit(1)
                conn.sendall(buf)
                if buf is not warm:
                    buf.close()
            os._exit(0)
        except Exception:  # noqa: BLE001 - the parent reports a failed child by its status
            os._exit(1)
    conn, _ = listener.accept()
    conn.settimeout(60)
    warm = touched(size)
    recv_exactly(conn, warm, size)
    times = {}
    for sender, receiver in cases:
        buf = touched(size) if receiver == "fresh" else warm
        if conn.recv(1) != b"r":
            raise RuntimeError("the sending process did not get ready")
        start = time.perf_counter()
        conn.sendall(b"g")
        recv_exactly(conn, buf, size)
        times.setdefault((sender, receiver), []).append(time.perf_counter() - start)
        if buf is not warm:
            buf.close()
    _, status = os.waitpid(pid, 0)
    if status != 0:
        raise RuntimeError(f"the sending process failed (wait status {status})")
    return {k: statistics.median(v) for k, v in times.items()}


def file_cases(size, reps):
    """Median seconds of write() from and read() into a warm or a fresh buffer."""
    fd, path = tempfile.mkstemp(prefix="probe-first-copy-")
    os.close(fd)
    try:
        def write(buf):
            with open(path, "wb", buffering=0) as f:
                start = time.perf_counter()
                f.write(buf)
                return time.perf_counter() - start

        def read(buf):
            with open(path, "rb", buffering=0) as f:
                start = time.perf_counter()
                f.readinto(buf)
                return time.perf_counter() - start

        warm = touched(size)
        write(warm)
        read(warm)
        out = {}
        for name, op in (("write", write), ("read", read)):
            out[(name, "warm")] = statistics.median(op(warm) for _ in range(reps))
            fresh = []
            for _ in range(reps):
                buf = touched(size)
                fresh.append(op(buf))
                buf.close()
            out[(name, "fresh")] = statistics.median(fresh)
        return out
    finally:
        os.unlink(path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mib", type=int, default=64, help="buffer size in MiB (default 64)")
    ap.add_argument("--reps", type=int, default=5, help="repetitions of every case (default 5)")
    args = ap.parse_args()
    if not 1 <= args.mib <= 4096:
        sys.exit("probe-first-copy: --mib expects a whole number from 1 to 4096")
    if not 1 <= args.reps <= 100:
        sys.exit("probe-first-copy: --reps expects a whole number from 1 to 100")
    size = args.mib << 20
    sock = socket_cases(size, args.reps)
    files = file_cases(size, args.reps)

    def row(what, seconds, base):
        extra = (seconds - base) / size * 1e9
        print(f"| {what} | {seconds * 1e3:.1f} | {size / seconds / 1e9:.2f} | {extra:+.2f} |")

    print(f"{args.mib} MiB, median of {args.reps}; extra = (time - warm time) / bytes")
    print("| case | ms | GB/s | extra ns per byte |")
    print("|---|---|---|---|")
    base = sock[("warm", "warm")]
    for key in (("warm", "warm"), ("fresh", "warm"), ("warm", "fresh"), ("fresh", "fresh")):
        row(f"loopback TCP, sender {key[0]}, receiver {key[1]}", sock[key], base)
    for name in ("write", "read"):
        row(f"file {name}(), buffer warm", files[(name, "warm")], files[(name, "warm")])
        row(f"file {name}(), buffer fresh", files[(name, "fresh")], files[(name, "warm")])
    one_side = max(sock[("fresh", "warm")], sock[("warm", "fresh")]) - base
    print(f"first copy of a buffer by the kernel: {one_side / size * 1e9:.2f} ns per byte more "
          f"on one end of a transfer ({one_side * 1e3:.0f} ms for {args.mib} MiB)")


if __name__ == "__main__":
    main()
