#!/usr/bin/env python3
"""Fault campaigns against the live runtime (issue 19 item 4): seeded, repeatable, leak-checked.

    scripts/fault-campaign.py --seed 1 --cases 200 --campaign kill --where both --build build
    scripts/fault-campaign.py --seed 1 --cases 200 --campaign malformed --where loopback --only 17

Campaigns (each case's parameters come from random.Random("SEED/CAMPAIGN/WHERE") and are printed
before it runs, so `--only INDEX` reruns one case alone):

  kill       a worker SIGKILLs itself after K sent messages (the tools' hidden --fault-* hooks, or
             the scenario's live.fault): adaptsim-tcp --procs N or simctl run --live (loopback),
             simctl run --live on a testbed. The others must exit non-zero, each with one line
             naming the dead rank; the summary names it first; nothing written.
  malformed  a real adaptsim-tcp job (host list, a secret file) attacked by strays of random kinds
             (garbage, truncated headers, lying sizes, other jobs' frames, wrong tags, silence),
             some while the ranks wait for their peers, some during the collectives. The job must
             complete (exit 0, every result right) and each rank log exactly one "rejected
             connection from IP:PORT: REASON" line per stray it got, with the expected reason.
  port       one rank's port is already taken (a listening or a bound socket, on its address or
             0.0.0.0): that rank fails at once with one line naming the address, the others
             within their timeout with one line naming it; simctl (placement hosts) one line.
  outdir     simctl run (simulated and live) and adaptsim-tcp -o into a full tmpfs (random free
             space) or a read-only one (tmpfs mounted ro, a read-only bind mount): success with
             complete files, or exit 1 with one line naming the path and the cause, and no file.
  signal     SIGINT or SIGTERM to `simctl run --live` at a random time of its run: it ends by the
             signal within SIGNAL_BOUND_S, with no output file and nothing left; a SIGINT to a
             simctl that inherited SIGINT ignored changes nothing.

After every case: the exit codes, the error lines, the wall time against the campaign's bound,
and the leaks, counted: processes carrying the case's marker variable (ADAPTSIM_FAULT_CAMPAIGN,
inherited by everything a case starts, /proc/*/environ), network namespaces and interfaces of
the case's testbed prefix (`ip netns list`, `ip -o link`), its state file in
/run/adaptsim-testbed, files in the case's TMPDIR (the tools' scratch folders), files in the
output folder beyond the complete output, mounts left. Leftovers are removed after being counted,
so one leaky case does not fail the next. A case that fails only by a defect of KNOWN_DEFECTS
(open defects of the tools these campaigns found) is reported as such and counted apart.

Exit code: 0 when no case failed (known defects fail only with --strict), 1 otherwise, 77 when
every requested campaign was skipped (the testbed and the mounts need root and `ip netns`).
Ctrl-C or SIGTERM removes what the running case started. The script runs itself as helpers
(--_strays, --_hold: the strays and the port holder, inside a testbed namespace when needed).

stdlib only; run with /usr/bin/python3 or python3.
"""

import argparse
import hashlib
import hmac
import json
import os
import random
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

SCRIPT = Path(__file__).resolve()
ROOT = SCRIPT.parent.parent
CAMPAIGNS = ["kill", "malformed", "port", "outdir", "signal"]
MARKER_VAR = "ADAPTSIM_FAULT_CAMPAIGN"
STATE_DIR = Path("/run/adaptsim-testbed")
SKIP_EXIT = 77

# ---------------------------------------------------------------------------------------------
# Bounds (seconds). Each is well below the timeout the case gives the tools, so a process that
# only stops when a timeout fires fails the bound: the fault must be noticed, not waited out.

# kill: adaptsim-tcp runs of at most ~2 s nominal (sizes to 1 MiB, at most 60 iterations) with
# --timeout 20s; the survivors see the lost connection at once (tests/hw/tcp/process_test.cpp
# asserts 8 s against a 10 s timeout on an idle machine; this one is shared, load 4-6 on 2 cores).
KILL_TCP_TIMEOUT = "20s"
KILL_TCP_BOUND_S = 15.0
# kill through simctl --live: 2-6 ranks, 1+1..3 steps of MobileNetV2 (3-8 s on loopback; on a
# testbed, built and removed in 2-4 s, up to 24 s under load 10 with 6 ranks, 4 steps); a kill
# at the last send lets the run go nearly to its end. live.timeout 60 s: a survivor that only
# stops at its timeout ends past the bound.
KILL_LIVE_TIMEOUT = "60s"
KILL_LIVE_BOUND_S = {"loopback": 40.0, "testbed": 50.0}
# malformed: the strays must not slow the job. A silent stray is dropped after the transport's
# handshake timeout (TcpTransportOptions::handshake_timeout_ns, 5 s); instant kinds at once.
HANDSHAKE_TIMEOUT_S = 5.0
STRAY_INSTANT_MAX_S = 3.0  # from our connect to the rank closing an instantly rejected stray
# The rank's timer starts at accept, after our connect returned: never before 5 s; the 50 ms are
# the clocks' granularity. A silent stray closed earlier was closed by the job's end.
STRAY_TIMEOUT_WINDOW_S = (HANDSHAKE_TIMEOUT_S - 0.05, HANDSHAKE_TIMEOUT_S + 4.0)
MALFORMED_TCP_TIMEOUT = "30s"
# The attacked job's collective phase, sized from pilots; strays of the run phase land in its
# first second, silent ones (long jobs only) are dropped 5 s later.
PILOT_ITERS = 200
PILOT_MIN_S = 0.5
MALFORMED_RUN_S = 5.0
MALFORMED_LONG_RUN_S = 12.0
# the job's collective phase against the pilot's projection (the same job without strays)
MALFORMED_SLOWDOWN = 3.0
MALFORMED_SLACK_S = 10.0
# port: the rank whose port is taken fails at once; the others give up after their connect
# timeout (--timeout / live.timeout 5 s) and must not hang past it.
PORT_TIMEOUT_S = 5
PORT_HOLDER_BOUND_S = 3.0
PORT_BOUND_S = PORT_TIMEOUT_S + 10.0
# outdir: simulated runs take < 1 s, the live ones 3-5 s.
OUTDIR_BOUND_S = 30.0
# signal: simctl ends by the signal within this (tests/simctl/simctl_testbed_test.cpp: 10 s,
# removing a 6-host testbed included).
SIGNAL_BOUND_S = 10.0
# Processes get this long to be reaped, a testbed to vanish, before they count as leaked.
LEAK_GRACE_S = 5.0
# Any process a case starts is killed past this (a hang), which fails the case.
HARNESS_LIMIT_S = 120.0

# ---------------------------------------------------------------------------------------------
# The wire format (hw/tcp/frame.h, version 2) and the job id (hw/tcp/auth.cpp), for the strays.

FRAME_MAGIC = 0x53544441  # "ADTS"
FRAME_VERSION = 2
HEADER = struct.Struct("<IHHQIIQ")  # magic, version, kind, job id, src rank, name, payload
KIND_HELLO, KIND_HELLO_ACK, KIND_DATA, KIND_BYE, KIND_ABORT = 1, 2, 3, 4, 5
HELLO_PAYLOAD_BYTES = 8 + 16  # expected peer u32, cluster size u32, nonce
TAG_BYTES = 16
MAX_NAME_BYTES = 4096
MAX_PAYLOAD_BYTES = 4 << 30  # adaptsim-tcp: max(4 GiB, --maxbytes); the sweeps here stay below


def header(kind, job_id, src=1, name_bytes=0, payload_bytes=HELLO_PAYLOAD_BYTES,
           version=FRAME_VERSION, magic=FRAME_MAGIC):
    return HEADER.pack(magic, version, kind, job_id, src, name_bytes, payload_bytes)


def job_id_of_secret_file(content):
    """JobSecret::from_file: the key is SHA-256 of the file, the id the first 8 bytes (little
    endian) of HMAC-SHA256(key, "adaptsim job id")."""
    key = hashlib.sha256(content).digest()
    return int.from_bytes(hmac.new(key, b"adaptsim job id", hashlib.sha256).digest()[:8], "little")


# A stray's kind: (rejected at once, or only by the handshake timeout; the reason's pattern).
CLOSED = r"(the peer closed the connection|Connection reset by peer)"
NO_HANDSHAKE = r"no handshake within 5 s"
STRAY_KINDS = {
    "garbage": (False, r"bad magic 0x[0-9a-f]+"),
    "short-garbage": (False, CLOSED),
    "truncated-header": (False, CLOSED),
    "connect-close": (False, CLOSED),
    "connect-reset": (False, CLOSED),
    "huge-payload": (False, r"payload of \d+ bytes exceeds the limit of \d+"),
    "huge-name": (False, r"name of \d+ bytes exceeds the limit of 4096"),
    "old-version": (False, r"protocol version \d+, expected 2"),
    "unknown-kind": (False, r"unknown frame kind \d+"),
    "other-job": (False, r"hello frame of another job \(job id [0-9a-f]{16}, this job's is "
                         r"[0-9a-f]{16}\)"),
    "wrong-kind": (False, r"expected a hello frame, got a (hello-ack|data|bye|abort) frame"),
    "malformed-hello": (False, r"malformed hello frame"),
    "lying-size-close": (False, CLOSED),
    "wrong-tag": (False, r"hello frame failed authentication: the peer does not know this "
                         r"job's secret"),
    "silent": (True, NO_HANDSHAKE),
    "truncated-silent": (True, NO_HANDSHAKE),
    "lying-size-silent": (True, NO_HANDSHAKE),
}


def stray_bytes(kind, p, job_id):
    """The bytes a stray sends, from its parameters (`p["seed"]` draws the random ones)."""
    r = random.Random(p["seed"])
    rand = lambda n: bytes(r.getrandbits(8) for _ in range(n))  # noqa: E731
    other = (job_id + 1 + r.getrandbits(63)) % (1 << 64)
    hello_rest = rand(HELLO_PAYLOAD_BYTES + TAG_BYTES)
    if kind == "garbage":
        data = rand(r.randint(32, 2048))
        while data[:4] == struct.pack("<I", FRAME_MAGIC):
            data = rand(len(data))
        return data
    if kind == "short-garbage":
        return rand(r.randint(1, 31))
    if kind in ("truncated-header", "truncated-silent"):
        return header(KIND_HELLO, r.choice([job_id, other]))[: r.randint(1, 31)]
    if kind in ("connect-close", "connect-reset", "silent"):
        return b""
    if kind == "huge-payload":
        return header(KIND_HELLO, other, payload_bytes=r.randint(MAX_PAYLOAD_BYTES + 1, 2**64 - 1))
    if kind == "huge-name":
        return header(KIND_HELLO, other, name_bytes=r.randint(MAX_NAME_BYTES + 1, 2**32 - 1))
    if kind == "old-version":
        return header(KIND_HELLO, job_id, version=r.choice([0, 1, 3, 0xFFFF])) + hello_rest
    if kind == "unknown-kind":
        return header(r.choice([0, 6, 7, 0x100, 0xFFFF]), job_id) + hello_rest
    if kind == "other-job":
        return header(KIND_HELLO, other) + hello_rest
    if kind == "wrong-kind":
        k = r.choice([KIND_HELLO_ACK, KIND_DATA, KIND_BYE, KIND_ABORT])
        return header(k, job_id) + hello_rest
    if kind == "malformed-hello":  # this job's id, a size no hello has
        size = r.choice([0, 1, 23, 25, 1 << 20, MAX_PAYLOAD_BYTES])
        return header(KIND_HELLO, job_id, payload_bytes=size) + hello_rest[: r.randint(0, 40)]
    if kind in ("lying-size-close", "lying-size-silent"):  # announces 24 + 16 bytes, sends fewer
        return header(KIND_HELLO, job_id) + hello_rest[: r.randint(0, HELLO_PAYLOAD_BYTES + 15)]
    if kind == "wrong-tag":
        return header(KIND_HELLO, job_id, src=p["claim_rank"]) + hello_rest
    raise ValueError(kind)


def stray_holds(kind, p):
    """Whether the stray keeps its end open after sending (else it closes at once)."""
    if STRAY_KINDS[kind][0]:
        return True
    if kind in ("short-garbage", "truncated-header", "connect-close", "connect-reset",
                "lying-size-close"):
        return False
    return p["hold"]


# ---------------------------------------------------------------------------------------------
# Helper modes: run as a separate process (inside a testbed namespace when the target is there).

def stray_helper(spec_path):
    """Connects each stray of the spec after its delay, sends its bytes and watches how the other
    end closes. Prints one JSON list of results."""
    spec = json.loads(Path(spec_path).read_text())
    if spec.get("wait_go"):  # the delays count from the harness's "go" (the job's last rank)
        print("ready", flush=True)
        sys.stdin.readline()
    t0 = time.monotonic()
    results = [None] * len(spec["strays"])

    def one(i, s):
        time.sleep(s["delay"])
        res = {"local": None, "how": None, "closed_after": None, "first_try": time.monotonic()}
        deadline = time.monotonic() + spec["connect_retry_s"]
        while True:
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            try:
                sock.connect((s["host"], s["port"]))
                break
            except ConnectionRefusedError:
                sock.close()
                if time.monotonic() > deadline:
                    res["how"] = "refused"
                    results[i] = res
                    return
                time.sleep(0.02)
        ip, port = sock.getsockname()[:2]
        res["local"] = f"{ip}:{port}"
        res["connected_at"] = time.monotonic() - t0
        connected = time.monotonic()
        try:
            if s["reset"]:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                sock.close()
                res["how"] = "we-reset"
                results[i] = res
                return
            data = bytes.fromhex(s["bytes"])
            if data:
                sock.sendall(data)
            if not s["hold"]:
                sock.close()
                res["how"] = "we-closed"
                results[i] = res
                return
            sock.settimeout(spec["hold_limit_s"])
            got = sock.recv(1)
            res["how"] = "eof" if got == b"" else "data"
        except socket.timeout:
            res["how"] = "open"
        except (ConnectionResetError, BrokenPipeError):
            res["how"] = "reset"
        except OSError as e:
            res["how"] = "error: " + str(e)
        res["closed_after"] = time.monotonic() - connected
        res["closed_at"] = time.monotonic()  # CLOCK_MONOTONIC: one clock for every namespace
        sock.close()
        results[i] = res

    threads = [threading.Thread(target=one, args=(i, s)) for i, s in enumerate(spec["strays"])]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print(json.dumps(results), flush=True)


def hold_port_helper(host, port, mode):
    """Takes host:port (listening or only bound) and keeps it until killed."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind((host, int(port)))
    if mode == "listen":
        s.listen(16)
    print("ready", flush=True)
    while True:
        time.sleep(3600)


# ---------------------------------------------------------------------------------------------
# Defects the campaigns found in the tools, open at the time of writing. A case that fails only
# by one of these is counted apart ("known defect"), its leaks still counted; --strict counts
# them as failures. Delete an entry when its defect is fixed.

# Every defect found so far is fixed (D1, D2, D4: 1cb1ae1; D3: fail() takes a pending hello-ack
# and sends the abort, hw/tcp/tcp_transport.cpp take_hello_ack); a new one goes here until fixed.
KNOWN_DEFECTS = {}


# ---------------------------------------------------------------------------------------------
# Processes, leaks, testbeds

def proc_state(pid):
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat[stat.rfind(")") + 2]


def marker_pids(marker):
    """Live (non-zombie) processes whose environment holds `marker` (NAME=value)."""
    needle = marker.encode()
    pids = []
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) == os.getpid():
            continue
        try:
            env = Path(f"/proc/{d}/environ").read_bytes()
        except OSError:
            continue
        if needle in env.split(b"\0") and proc_state(d) not in (None, "Z", "X"):
            pids.append(int(d))
    return pids


def is_testbed_name(prefix, name):
    """hw/testbed/testbed_plan.cpp is_testbed_name: <prefix>-h3, -v3, -l1, -u1a, -br, -sp."""
    head = prefix + "-"
    if not name.startswith(head) or len(name) <= len(head):
        return False
    rest = name[len(head):]
    if rest in ("br", "sp"):
        return True
    if rest[0] in "hvl":
        return rest[1:].isdigit()
    if rest[0] == "u":
        return len(rest) >= 3 and rest[-1] in "ab" and rest[1:-1].isdigit()
    return False


def testbed_objects(prefix):
    out = []
    r = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True)
    for line in r.stdout.splitlines():
        name = line.split()[0] if line.split() else ""
        if is_testbed_name(prefix, name):
            out.append("netns " + name)
    r = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True)
    for line in r.stdout.splitlines():
        parts = line.split(":", 2)
        if len(parts) >= 2:
            name = parts[1].strip().split("@")[0]
            if is_testbed_name(prefix, name):
                out.append("link " + name)
    return out


def mounted(path):
    p = str(Path(path).resolve())
    with open("/proc/self/mounts") as f:
        return any(line.split()[1] == p for line in f)


class Proc:
    """A process of a case: stdout and stderr in files of the case folder; its exit time is
    taken by a thread the moment it exits, whenever the case gets round to wait()."""

    def __init__(self, case, name, argv, stdin=subprocess.DEVNULL, preexec_fn=None):
        self.name = name
        self.argv = [str(a) for a in argv]
        self.out_path = case.dir / f"{name}.stdout"
        self.err_path = case.dir / f"{name}.stderr"
        self.t0 = time.monotonic()
        with open(self.out_path, "wb") as out, open(self.err_path, "wb") as err:
            self.p = subprocess.Popen(self.argv, stdout=out, stderr=err, stdin=stdin,
                                      env=case.env(), cwd=case.dir, preexec_fn=preexec_fn)
        self.rc = None
        self.wall = None
        self.end = None
        self.waiter = threading.Thread(target=self._reap, daemon=True)
        self.waiter.start()

    def _reap(self):
        self.p.wait()
        self.end = time.monotonic()

    def wait(self, limit_s=HARNESS_LIMIT_S):
        """Exit code (negative: the signal), or None when it ran past `limit_s` (then killed)."""
        self.waiter.join(max(0.0, limit_s - (time.monotonic() - self.t0)))
        if self.waiter.is_alive():
            self.p.kill()
            self.waiter.join()
            self.rc = None
        else:
            self.rc = self.p.returncode
        self.wall = self.end - self.t0
        return self.rc

    def poll(self):
        return self.p.returncode if self.end is not None else None

    def out(self):
        return self.out_path.read_text(errors="replace")

    def err(self):
        return self.err_path.read_text(errors="replace")

    def lines(self):
        return [l for l in (self.out() + self.err()).splitlines() if l.strip()]


class Case:
    """One case: its folder (TMPDIR and output inside), marker, processes, problems and leaks."""

    def __init__(self, suite, index, params):
        self.suite = suite
        self.index = index
        self.params = params
        self.dir = suite.work / f"case-{index:04d}"
        shutil.rmtree(self.dir, ignore_errors=True)
        self.tmp = self.dir / "tmp"
        self.out = self.dir / "out"
        self.tmp.mkdir(parents=True)
        self.marker = f"{MARKER_VAR}={suite.run_id}-{suite.name}-{index}"
        self.problems = []
        self.leaks = []
        self.notes = []
        self.known = {}  # known defect id -> what showed it
        self.known_leaks = set()  # leaks a known defect explains
        self.mounts = []  # unmounted at the end, whatever happens

    def env(self):
        e = dict(os.environ)
        e["TMPDIR"] = str(self.tmp)
        name, value = self.marker.split("=", 1)
        e[name] = value
        e.pop("ADAPTSIM_JOB_SECRET", None)
        return e

    def spawn(self, name, argv, **kw):
        return Proc(self, name, argv, **kw)

    def problem(self, text):
        self.problems.append(text)

    def known_defect(self, defect, text, leak=None):
        self.known.setdefault(defect, text)
        if leak is not None:
            self.known_leaks.add(leak)

    def failed(self):
        return bool(self.problems) or any(l not in self.known_leaks for l in self.leaks)

    def expect(self, cond, text):
        if not cond:
            self.problem(text)
        return cond


def collect_leaks(case, prefix=None, allowed_out=None):
    """Counts what the case left behind, then removes it."""
    deadline = time.monotonic() + LEAK_GRACE_S
    while marker_pids(case.marker) or (prefix and testbed_objects(prefix)):
        if time.monotonic() > deadline:
            break
        time.sleep(0.1)
    for pid in marker_pids(case.marker):
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()[:160]
        except OSError:
            cmd = "?"
        case.leaks.append(f"process {pid} ({cmd.strip()})")
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    if prefix:
        objects = testbed_objects(prefix)
        state = STATE_DIR / f"{prefix}.state"
        case.leaks += objects
        if state.exists():
            case.leaks.append(f"state file {state}")
        if objects or state.exists():
            subprocess.run([str(case.suite.tools.testbed), "down", "--prefix", prefix],
                           capture_output=True, env=case.env(), timeout=120)
    for m in reversed(case.mounts):
        if mounted(m):
            subprocess.run(["umount", "-l", str(m)], capture_output=True)
            if mounted(m):
                case.leaks.append(f"mount {m}")
    for p in sorted(case.tmp.iterdir()) if case.tmp.exists() else []:
        inside = sorted(str(x.relative_to(p)) for x in p.rglob("*")) if p.is_dir() else []
        leak = f"temporary {p.relative_to(case.dir)}"
        if inside:
            leak += f" ({', '.join(inside)})"
        case.leaks.append(leak)
    if allowed_out is not None and case.out.exists():
        for p in sorted(case.out.rglob("*")):
            rel = str(p.relative_to(case.out))
            if p.is_file() and rel not in allowed_out:
                case.leaks.append(f"output file {p.relative_to(case.dir)}")


# A testbed kept up by `adaptsim-testbed up` for one case (malformed, port): hosts are
# (namespace, ip) pairs, read from its state file.
class TestbedUp:
    def __init__(self, case, servers, bandwidth):
        self.case = case
        self.prefix = case.suite.prefix
        self.proc = case.spawn("testbed-up", [
            case.suite.tools.testbed, "up", ROOT / "topologies/cloud-vms.yaml", "--set",
            f"servers={servers}", "--set", f"nic_bandwidth={bandwidth}", "--prefix", self.prefix])
        deadline = time.monotonic() + 90
        while "tears it down" not in self.proc.out():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("adaptsim-testbed up failed: " + " | ".join(self.proc.lines()))
            time.sleep(0.05)
        self.hosts = []
        for line in (STATE_DIR / f"{self.prefix}.state").read_text().splitlines():
            parts = line.split()
            if parts and parts[0] == "host":
                self.hosts.append((parts[1], parts[2]))

    def ns_prefix(self, host):
        return ["ip", "netns", "exec", self.hosts[host][0]]

    def down(self):
        if self.proc.poll() is None:
            self.proc.p.send_signal(signal.SIGINT)
        rc = self.proc.wait(60)
        self.case.expect(rc == 0, f"adaptsim-testbed up exited with {rc}: {self.proc.lines()}")


# ---------------------------------------------------------------------------------------------
# Scenarios

def live_scenario(servers, system, steps, placement, timeout, bandwidth="1Gbps", prefix=None,
                  fault=None, hosts=None, warmup=1):
    live = [f"placement: {placement}", f"timeout: {timeout}", "compute: sleep"]
    if prefix:
        live.append(f"prefix: {prefix}")
    if fault:
        live.append(f"fault: {{kill_rank: {fault[0]}, after_sends: {fault[1]}}}")
    if hosts:
        live.append("hosts: [" + ", ".join(hosts) + "]")
    return (
        "name: fc\nseed: 1\ntopology:\n"
        f"  file: {ROOT / 'topologies/cloud-vms.yaml'}\n"
        f"  params: {{servers: {servers}, nic_bandwidth: {bandwidth}}}\n"
        "workload:\n  kind: training\n  models: [mobilenetv2]\n  batch_per_gpu: 32\n"
        f"  device: {ROOT / 'traces/devices/k80-half.yaml'}\n"
        f"  compute_scale: 0.05\n  warmup_steps: {warmup}\n  steps: {steps}\n"
        f"  systems:\n    - {system}\n"
        "live: {" + ", ".join(live) + "}\n")


LIVE_SYSTEMS = [
    "{label: star, kind: kungfu, strategy: STAR}",
    "{label: ring, kind: kungfu, strategy: RING}",
    "{label: clique, kind: kungfu, strategy: CLIQUE}",
    "{label: bts, kind: kungfu, strategy: BINARY_TREE_STAR}",
    "{label: mbts, kind: kungfu, strategy: MULTI_BINARY_TREE_STAR}",
    "{label: cring, kind: kungfu, strategy: CLASSIC_RING}",
    "{label: hd, kind: kungfu, strategy: HALVING_DOUBLING}",
    "{label: hvd, kind: horovod}",
]
TCP_STRATEGIES = ["STAR", "MULTI_STAR", "TREE", "BINARY_TREE", "BINARY_TREE_STAR",
                  "MULTI_BINARY_TREE_STAR", "CLIQUE", "RING", "AUTO", "CLASSIC_RING",
                  "HALVING_DOUBLING"]
SIZES = ["8B", "256B", "4KiB", "64KiB", "256KiB", "1MiB"]
LIVE_CSV = {"fc.csv", "fc.steps.csv", "fc.manifest.json"}


def label_of(system):
    return re.search(r"label: (\w+)", system).group(1)


def sim_sends_per_rank(case, scenario):
    """Messages each rank sends in the simulated run of `scenario` (--trace-connections): the same
    runtime and strategies as live, so a live rank sends at least as many (live adds the step
    agreement); a fault after at most that many sends always fires."""
    trace = case.dir / "sim-trace"
    p = case.spawn("sim-count", [case.suite.tools.simctl, "run", scenario, "-o",
                                 case.dir / "sim-out", "--no-progress", "--trace-connections",
                                 trace])
    if p.wait(60) != 0:
        raise RuntimeError("simulated run for the send count failed: " + " | ".join(p.lines()))
    counts = {}
    for f in trace.glob("*.connections.csv"):
        rows = f.read_text().splitlines()
        col = rows[0].split(",").index("src_rank")
        for row in rows[1:]:
            r = int(row.split(",")[col])
            counts[r] = counts.get(r, 0) + 1
    shutil.rmtree(trace, ignore_errors=True)
    shutil.rmtree(case.dir / "sim-out", ignore_errors=True)
    return counts


# ---------------------------------------------------------------------------------------------
# kill

def gen_kill(rng, where):
    n = rng.randint(2, 6)
    rank = rng.randrange(n)
    # K: the first send, the second, a random one, or the last one guaranteed to happen.
    which = rng.choice(["first", "second", "random", "random", "random", "last"])
    tool = "simctl-live" if where == "testbed" or rng.random() < 0.25 else "tcp"
    p = {"tool": tool, "ranks": n, "kill_rank": rank, "k": which}
    if tool == "tcp":
        p.update(strategy=rng.choice(TCP_STRATEGIES), size=rng.choice(SIZES),
                 iters=rng.randint(1, 60), warmup=rng.randint(0, 3))
        # Every rank sends at least one message per all-reduce (its input must leave it), and
        # the sweep runs warmup + iters of them: a fault at K <= that always fires.
        total = p["warmup"] + p["iters"]
        p["after_sends"] = {"first": 1, "second": min(2, total), "last": total}.get(
            which, rng.randint(1, total))
    else:
        p.update(system=rng.choice(LIVE_SYSTEMS), steps=rng.randint(1, 3),
                 bandwidth=rng.choice(["1Gbps", "10Gbps"]), frac=rng.random())
    return p


def run_kill(case, where):
    p = case.params
    n, dead = p["ranks"], p["kill_rank"]
    tools = case.suite.tools
    if p["tool"] == "tcp":
        argv = [tools.tcp, "--procs", n, "--strategy", p["strategy"], "--minbytes", p["size"],
                "--maxbytes", p["size"], "--iters", p["iters"], "--warmup-iters", p["warmup"],
                "--timeout", KILL_TCP_TIMEOUT, "-q", "-o", case.out, "--fault-kill-rank", dead,
                "--fault-after-sends", p["after_sends"]]
        proc = case.spawn("adaptsim-tcp", argv)
        rc = proc.wait()
        check_bound(case, proc, KILL_TCP_BOUND_S)
        case.expect(rc == 1, f"launcher exit code {rc}, expected 1")
        check_tcp_kill_lines(case, proc.lines(), n, dead, p["after_sends"])
        case.expect(not (case.out / "allreduce_tcp.csv").exists(), "a failed run wrote its CSV")
        collect_leaks(case, allowed_out=set())
        return
    # simctl run --live: K from the simulated run's count of the dead rank's sends
    placement = "testbed" if where == "testbed" else "local"
    prefix = case.suite.prefix if where == "testbed" else None
    plain = case.dir / "count.yaml"
    plain.write_text(live_scenario(n, p["system"], p["steps"], "local", KILL_LIVE_TIMEOUT,
                                   p["bandwidth"]))
    sent = sim_sends_per_rank(case, plain)[dead]

    def aim(sent):
        return {"first": 1, "second": min(2, sent), "last": sent}.get(
            p["k"], max(1, round(p["frac"] * sent)))

    def attempt(k, name):
        scenario = case.dir / f"{name}.yaml"
        scenario.write_text(live_scenario(n, p["system"], p["steps"], placement,
                                          KILL_LIVE_TIMEOUT, p["bandwidth"], prefix=prefix,
                                          fault=(dead, k)))
        return case.spawn(name, [tools.simctl, "run", "--live", scenario, "-o", case.out,
                                 "--no-progress"])

    k = aim(sent)
    case.notes.append(f"after_sends {k} of {sent} simulated sends")
    proc = attempt(k, "simctl")
    rc = proc.wait()
    # A live rank may send fewer messages than the simulated run (Horovod fuses what its 5 ms
    # cycles find ready, so live and simulated runs can fuse differently): a fault it never
    # reached fails the run with the rank's live count (Runtime::check_fault_fired). Aim again
    # from that count, once; the output folder holds nothing of the failed run.
    missed = re.search(r"fault injection did not fire: this rank sent (\d+) messages",
                       " ".join(proc.lines()))
    if rc == 1 and missed:
        live_sent = int(missed.group(1))
        k = aim(live_sent)
        case.notes.append(f"the fault did not fire: after_sends {k} of {live_sent} live sends")
        proc = attempt(k, "simctl-again")
        rc = proc.wait()
    check_bound(case, proc, KILL_LIVE_BOUND_S[where])
    case.expect(rc == 1, f"simctl exit code {rc}, expected 1")
    lines = proc.lines()
    if case.expect(len(lines) == 1, f"{len(lines)} lines of output, expected 1: {lines}"):
        line = lines[0]
        head = (f"simctl: failed: live run of mobilenetv2 / {label_of(p['system'])} failed "
                f"(exit code 1): rank {dead} (pid ")
        case.expect(line.startswith(head), f"the line does not start with the dead rank: {line}")
        case.expect(f"rank {dead} (pid" in line and "was killed by signal 9" in line,
                    f"the line does not say rank {dead} was killed by signal 9: {line}")
        if "; first error: " in line:
            first = line.split("; first error: ", 1)[1]
            case.expect(re.search(rf"\brank {dead}\b", first) is not None,
                        f"the first error does not name rank {dead}: {first}")
    collect_leaks(case, prefix=prefix, allowed_out=set())


def check_tcp_kill_lines(case, lines, n, dead, k):
    """adaptsim-tcp --procs: the fault's log line, at most one line per survivor (naming the dead
    rank), the launcher's summary last with the dead rank first; nothing else."""
    fault = f"[adaptsim-tcp rank {dead}] fault injection: killing this process after "
    summary = [l for l in lines if l.startswith("adaptsim-tcp: launcher: ")]
    per_rank = {}
    for l in lines:
        m = re.match(r"adaptsim-tcp: rank (\d+): ", l)
        if m:
            per_rank.setdefault(int(m.group(1)), []).append(l)
        elif not l.startswith(fault) and not l.startswith("adaptsim-tcp: launcher: "):
            case.problem(f"unexpected line: {l}")
    case.expect(sum(l.startswith(fault) for l in lines) == 1, "no (or several) fault lines")
    if not case.expect(len(summary) == 1 and lines[-1] == summary[0],
                       f"expected the launcher's summary as the last line: {lines}"):
        return
    s = summary[0]
    case.expect(s.startswith(f"adaptsim-tcp: launcher: rank {dead} (pid ")
                and "was killed by signal 9 (Killed)" in s.split(";")[0],
                f"the summary does not name rank {dead} first: {s}")
    failed = {int(r) for r in re.findall(r"rank (\d+) \(pid \d+\) exited with code 1", s)}
    case.expect("killed by the launcher" not in s, f"a survivor had to be killed: {s}")
    for r in range(n):
        if r == dead:
            case.expect(r not in per_rank, f"the dead rank printed an error line: {per_rank[r]}"
                        if r in per_rank else "")
            continue
        got = per_rank.get(r, [])
        case.expect(len(got) <= 1, f"rank {r} printed {len(got)} error lines: {got}")
        if r in failed:
            if not case.expect(len(got) == 1, f"rank {r} exited 1 without its line"):
                continue
            if not re.search(rf"\brank {dead} \(", got[0]):
                case.problem(f"rank {r}'s line does not name rank {dead}: {got[0]}")
        else:
            case.notes.append(f"rank {r} finished before it missed rank {dead}")


def check_bound(case, proc, bound_s):
    if proc.rc is None:
        case.problem(f"{proc.name} still ran after {HARNESS_LIMIT_S:.0f} s (killed): a hang")
    elif proc.wall > bound_s:
        case.problem(f"{proc.name} took {proc.wall:.1f} s, bound {bound_s:.0f} s")


# ---------------------------------------------------------------------------------------------
# malformed

INSTANT_KINDS = [k for k, (slow, _) in STRAY_KINDS.items() if not slow]
TIMEOUT_KINDS = [k for k, (slow, _) in STRAY_KINDS.items() if slow]


def gen_malformed(rng, where):
    n = rng.randint(2, 4)
    long_job = rng.random() < 0.2  # long enough for silent strays during the collectives
    strays = []
    for _ in range(rng.randint(1, 6)):
        slow = rng.random() < 0.3
        kind = rng.choice(TIMEOUT_KINDS if slow else INSTANT_KINDS)
        # Silent strays go to the ranks still waiting for their last peer, unless the job is
        # long; the others land then or during the collectives.
        phase = "connect" if slow and not long_job else rng.choice(["connect", "run"])
        target = rng.randrange(n - 1 if phase == "connect" else n)
        strays.append({"kind": kind, "phase": phase, "rank": target,
                       "delay": round(rng.uniform(0.0, 1.0), 3), "hold": rng.random() < 0.5,
                       "claim_rank": rng.randrange(n), "seed": rng.getrandbits(32)})
    return {"ranks": n, "strategy": rng.choice(TCP_STRATEGIES), "size": rng.choice(SIZES[:5]),
            "long": long_job, "bandwidth": rng.choice(["1Gbps", "10Gbps"]), "strays": strays}


class HostListJob:
    """An adaptsim-tcp job on a host list: loopback ports, or one testbed namespace per rank."""

    def __init__(self, case, n, bed=None):
        self.case, self.n, self.bed = case, n, bed
        if bed:
            self.addresses = [(bed.hosts[r][1], 7100) for r in range(n)]
        else:
            socks = []
            for _ in range(n):
                s = socket.socket()
                s.bind(("127.0.0.1", 0))
                socks.append(s)
            self.addresses = [("127.0.0.1", s.getsockname()[1]) for s in socks]
            for s in socks:
                s.close()
        self.secret = case.dir / "job.secret"
        content = os.urandom(32)
        fd = os.open(self.secret, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.write(fd, content)
        os.close(fd)
        self.job_id = job_id_of_secret_file(content)
        self.procs = {}

    def hosts(self):
        return ",".join(f"{h}:{p}" for h, p in self.addresses)

    def start(self, rank, args, name=None):
        prefix = self.bed.ns_prefix(rank) if self.bed else []
        argv = prefix + [self.case.suite.tools.tcp, "--hosts", self.hosts(), "--rank", rank,
                         "--secret-file", self.secret] + args
        self.procs[rank] = self.case.spawn(name or f"rank{rank}", argv)
        return self.procs[rank]


def sweep_args(p, iters, out):
    return ["--strategy", p["strategy"], "--minbytes", p["size"], "--maxbytes", p["size"],
            "--iters", iters, "--warmup-iters", "1", "--timeout", MALFORMED_TCP_TIMEOUT, "-q",
            "-o", out]


def check_sweep_csv(case, path, n, rows_expected=1):
    if not case.expect(path.exists(), f"no {path.name}"):
        return
    lines = path.read_text().splitlines()
    cols = lines[0].split(",")
    rows = [dict(zip(cols, l.split(","))) for l in lines[1:] if l]
    case.expect(len(rows) == rows_expected, f"{len(rows)} CSV rows, expected {rows_expected}")
    for row in rows:
        case.expect(row.get("wrong") == "0", f"wrong results: {row}")
        case.expect(row.get("n_ranks") == str(n), f"n_ranks {row.get('n_ranks')}, expected {n}")


def run_strays(case, name, strays, job, bed, attacker_host, wait_go=False):
    """Runs `strays` from the helper (in the attacker's namespace on a testbed); returns the
    helper process (the last line of its stdout: the JSON results). With `wait_go` the helper
    starts, says "ready" and counts the delays from a line on its stdin (go())."""
    spec = {"connect_retry_s": 15.0, "hold_limit_s": 15.0, "strays": [], "wait_go": wait_go}
    for s in strays:
        host, port = job.addresses[s["rank"]]
        spec["strays"].append({"host": host, "port": port, "delay": s["delay"],
                               "hold": stray_holds(s["kind"], s),
                               "reset": s["kind"] == "connect-reset",
                               "bytes": stray_bytes(s["kind"], s, job.job_id).hex()})
    path = case.dir / f"{name}.json"
    path.write_text(json.dumps(spec))
    prefix = bed.ns_prefix(attacker_host) if bed else []
    helper = case.spawn(name, prefix + [sys.executable, SCRIPT, "--_strays", path],
                        stdin=subprocess.PIPE if wait_go else subprocess.DEVNULL)
    if wait_go:
        deadline = time.monotonic() + 60
        while "ready" not in helper.out():
            if helper.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the stray helper did not start: {helper.lines()}")
            time.sleep(0.02)
    return helper


def go(helper):
    helper.p.stdin.write(b"go\n")
    helper.p.stdin.close()


def stray_results(helper):
    lines = helper.out().strip().splitlines()
    return json.loads(lines[-1]) if lines and lines[-1].startswith("[") else []


def run_malformed(case, where):
    p = case.params
    n = p["ranks"]
    bed = TestbedUp(case, n + 1, p["bandwidth"]) if where == "testbed" else None
    try:
        malformed_job(case, p, n, bed)
    finally:
        if bed:
            bed.down()
    collect_leaks(case, prefix=case.suite.prefix if bed else None,
                  allowed_out={"allreduce_tcp.csv"})


def malformed_job(case, p, n, bed):
    # Pilots: the same job without strays, 1 iteration and then 200, 1600, ... until the
    # difference, the iterations' own time, is at least PILOT_MIN_S (starting the processes and
    # connecting take 0.1-0.5 s, and the load changes the time per iteration several-fold).
    def pilot(iters):
        job = HostListJob(case, n, bed)
        for r in range(n):
            job.start(r, sweep_args(p, iters, case.dir / "pilot-out"), name=f"pilot{iters}-{r}")
        for r, proc in job.procs.items():
            proc.wait(90)
            if proc.rc != 0:
                raise RuntimeError(f"a pilot's rank {r} exited {proc.rc}: {proc.lines()}")
        shutil.rmtree(case.dir / "pilot-out", ignore_errors=True)
        return max(pr.wall for pr in job.procs.values())

    base = pilot(1)
    pilot_iters = PILOT_ITERS
    while True:
        wall = pilot(pilot_iters)
        if wall - base >= PILOT_MIN_S or pilot_iters >= 100 * PILOT_ITERS:
            break
        pilot_iters *= 8
    per_iter = max(1e-6, (wall - base) / (pilot_iters - 1))
    run_target_s = MALFORMED_LONG_RUN_S if p["long"] else MALFORMED_RUN_S
    iters = max(PILOT_ITERS, int(run_target_s / per_iter))
    case.notes.append(f"iters {iters} ({per_iter * 1e3:.3f} ms each in the pilots)")

    job = HostListJob(case, n, bed)
    attacker = n  # the testbed's extra host
    connect = [s for s in p["strays"] if s["phase"] == "connect"]
    run = [s for s in p["strays"] if s["phase"] == "run"]
    args = sweep_args(p, iters, case.out)
    for r in range(n - 1):
        job.start(r, args)
    helpers = []
    if connect:
        helper = run_strays(case, "strays-connect", connect, job, bed, attacker)
        helper.wait(60)
        helpers.append((connect, helper))
    # The run phase's helper is started first (Python takes up to a second to start under
    # load), its delays counted from the moment the last rank is started.
    run_helper = None
    if run:
        run_helper = run_strays(case, "strays-run", run, job, bed, attacker, wait_go=True)
    t_last = time.monotonic()
    job.start(n - 1, args)
    if run_helper:
        go(run_helper)
        helpers.append((run, run_helper))
    for r in range(n):
        job.procs[r].wait()
    job_end = max(pr.end for pr in job.procs.values())
    case.notes.append(f"job {job_end - t_last:.1f} s after its last rank started")
    results = {}
    for strays, helper in helpers:
        helper.wait(60)
        results.update(zip(map(id, strays), stray_results(helper)))
    bound = MALFORMED_SLOWDOWN * per_iter * iters + MALFORMED_SLACK_S
    for r, proc in job.procs.items():
        check_bound(case, proc, bound + (HANDSHAKE_TIMEOUT_S + 4 if connect else 0))
        case.expect(proc.rc == 0, f"rank {r} exited {proc.rc}: {proc.lines()[-3:]}")
    check_sweep_csv(case, case.out / "allreduce_tcp.csv", n)

    # Every stray got exactly one rejection line, with the reason its kind calls for, from the
    # rank it attacked; no rank printed anything else.
    rejected = {r: [] for r in range(n)}  # [address, reason, claimed]
    for r, proc in job.procs.items():
        for line in proc.lines():
            m = re.match(rf"\[adaptsim-tcp rank {r}\] rejected connection from (\S+): (.*)$", line)
            if m:
                rejected[r].append([m.group(1), m.group(2), False])
            else:
                case.problem(f"rank {r}: unexpected line: {line}")
    for s in p["strays"]:
        res = results.get(id(s))
        slow, pattern = STRAY_KINDS[s["kind"]]
        what = f"stray {s['kind']} ({s['phase']}) at rank {s['rank']}"
        if res is not None and res["how"] == "refused" and res["first_try"] > job_end:
            # The job ran shorter than the pilots promised: the stray never reached it.
            case.notes.append(f"{what}: not delivered, the job had ended")
            case.suite.count("not delivered (the job had ended)")
            continue
        end_r = job.procs[s["rank"]].end
        if (slow and s["phase"] == "run" and res is not None and res["how"] in ("eof", "reset")
                and res["closed_after"] < STRAY_TIMEOUT_WINDOW_S[0]
                and end_r - 2.0 <= res.get("closed_at", 0.0) <= end_r + 0.5
                and not any(l[0] == res["local"] for l in rejected[s["rank"]])):
            # A silent stray still in its handshake when the rank shuts down is closed with the
            # job, without a line (TcpTransport::shutdown): the job outran its 5 s.
            case.notes.append(f"{what}: closed with the job's end after "
                              f"{res['closed_after']:.1f} s")
            case.suite.count("silent, closed with the job's end")
            continue
        if not case.expect(res is not None and res["local"] is not None,
                           f"{what} never connected: {res}"):
            continue
        lines = rejected[s["rank"]]
        got = [l for l in lines if l[0] == res["local"]]
        for l in got:
            l[2] = True
        if case.expect(len(got) == 1, f"{what} from {res['local']}: {len(got)} rejection lines"):
            case.suite.count("rejected with one line")
            reason = got[0][1]
            case.expect(re.fullmatch(pattern, reason) is not None,
                        f"{what}: reason \"{reason}\" does not match /{pattern}/")
            if s["kind"] == "other-job":  # the job id we derived from the secret file
                case.expect(reason.endswith(f"this job's is {job.job_id:016x})"),
                            f"{what}: the rank's job id is not {job.job_id:016x}: {reason}")
        if res["how"] in ("eof", "reset"):
            lo, hi = STRAY_TIMEOUT_WINDOW_S if slow else (0.0, STRAY_INSTANT_MAX_S)
            case.expect(lo <= res["closed_after"] <= hi,
                        f"{what}: closed after {res['closed_after']:.2f} s, expected {lo}-{hi} s")
        elif res["how"] not in ("we-closed", "we-reset"):
            case.problem(f"{what}: the rank never closed it ({res['how']})")
    for r, lines in rejected.items():
        for address, reason, claimed in lines:
            case.expect(claimed, f"rank {r}: a rejection no stray explains: from {address}: "
                        f"{reason}")


# ---------------------------------------------------------------------------------------------
# port

def gen_port(rng, where):
    n = rng.randint(2, 4)
    tool = "tcp" if where == "testbed" or rng.random() < 0.6 else "simctl-hosts"
    return {"tool": tool, "ranks": n, "held_rank": 0 if rng.random() < 0.5 else rng.randrange(n),
            "holder": rng.choice(["listen", "bound", "wildcard-listen"]),
            "strategy": rng.choice(TCP_STRATEGIES), "system": rng.choice(LIVE_SYSTEMS)}


def run_port(case, where):
    p = case.params
    bed = TestbedUp(case, p["ranks"], "1Gbps") if where == "testbed" else None
    try:
        port_case(case, p, bed)
    finally:
        if bed:
            bed.down()
    collect_leaks(case, prefix=case.suite.prefix if bed else None, allowed_out=set())


def port_case(case, p, bed):
    n, held = p["ranks"], p["held_rank"]
    job = HostListJob(case, n, bed)
    ip, port = job.addresses[held]
    bind_ip = "0.0.0.0" if p["holder"] == "wildcard-listen" else ip
    mode = "bound" if p["holder"] == "bound" else "listen"
    prefix = bed.ns_prefix(held) if bed else []
    holder = case.spawn("holder", prefix + [sys.executable, SCRIPT, "--_hold", bind_ip, port, mode])
    deadline = time.monotonic() + 20
    while "ready" not in holder.out():
        if holder.poll() is not None or time.monotonic() > deadline:
            case.problem(f"the port holder did not start: {holder.lines()}")
            return
        time.sleep(0.02)
    address = f"{ip}:{port}"
    try:
        if p["tool"] == "tcp":
            for r in range(n):
                job.start(r, ["--strategy", p["strategy"], "--maxbytes", "64KiB", "--iters", "3",
                              "--timeout", f"{PORT_TIMEOUT_S}s", "-q"])
            for r, proc in job.procs.items():
                proc.wait()
                lines = proc.lines()
                case.expect(proc.rc == 1, f"rank {r} exited {proc.rc}, expected 1")
                if not case.expect(len(lines) == 1, f"rank {r}: {len(lines)} lines: {lines}"):
                    continue
                if r == held:
                    check_bound(case, proc, PORT_HOLDER_BOUND_S)
                    case.expect(lines[0] == f"adaptsim-tcp: cannot listen on {address}: bind: "
                                "Address already in use", f"rank {r}: {lines[0]}")
                else:
                    check_bound(case, proc, PORT_BOUND_S)
                    case.expect(lines[0].startswith(f"adaptsim-tcp: rank {r}: ") and
                                address in lines[0], f"rank {r}'s line does not name {address}: "
                                f"{lines[0]}")
        else:
            scenario = case.dir / "hosts.yaml"
            scenario.write_text(live_scenario(
                n, p["system"], 2, "hosts", f"{PORT_TIMEOUT_S}s",
                hosts=[f"{h}:{pt}" for h, pt in job.addresses]))
            proc = case.spawn("simctl", [case.suite.tools.simctl, "run", "--live", scenario, "-o",
                                         case.out, "--no-progress"])
            proc.wait()
            check_bound(case, proc, PORT_BOUND_S)
            lines = proc.lines()
            case.expect(proc.rc == 1, f"simctl exited {proc.rc}, expected 1")
            if case.expect(len(lines) == 1, f"{len(lines)} lines: {lines}"):
                case.expect(lines[0].startswith("simctl: failed: live run of ") and
                            f"cannot listen on {address}: bind: Address already in use" in lines[0],
                            f"the line does not name {address} in use: {lines[0]}")
    finally:
        holder.p.kill()
        holder.wait(10)


# ---------------------------------------------------------------------------------------------
# outdir

OUTDIR_TOOLS = ["sim-allreduce", "sim-training", "live-training", "tcp-procs"]
MOUNT_SIZE_KIB = 64


def gen_outdir(rng, where):
    return {"tool": rng.choice(OUTDIR_TOOLS), "fs": rng.choice(["full", "full", "ro-tmpfs",
                                                                "ro-bind"]),
            "free_kib": rng.randint(0, 20), "subdir": rng.random() < 0.5}


SIM_ALLREDUCE = """name: fc
seed: 1
topology:
  file: {root}/topologies/cloud-vms.yaml
  params: {{servers: 4}}
workload:
  kind: allreduce
  strategies: all
  min_bytes: 8B
  max_bytes: 1MiB
  step_factor: 4
  endpoint: host
output:
  csv: fc.csv
"""


def run_outdir(case, where):
    p = case.params
    base = case.dir / "mnt"
    base.mkdir()
    keep = None
    try:
        if p["fs"] == "ro-bind":
            src = case.dir / "rw"
            src.mkdir()
            keep = src / "keep.txt"
            keep.write_text("kept\n")
            mount(case, ["--bind", src, base])
            mount(case, ["-o", "remount,ro,bind", base])
            cause = "Read-only file system"
        else:
            opts = f"size={MOUNT_SIZE_KIB}k" + (",ro" if p["fs"] == "ro-tmpfs" else "")
            mount(case, ["-t", "tmpfs", "-o", opts, "tmpfs", base])
            cause = "Read-only file system" if p["fs"] == "ro-tmpfs" else "No space left on device"
            if p["fs"] == "full":
                fill = base / "fill"
                size = (MOUNT_SIZE_KIB - p["free_kib"]) * 1024
                with open(fill, "wb") as f:
                    f.write(b"\0" * size)
        out = base / "out" if p["subdir"] else base
        before = {str(x.relative_to(base)) for x in base.rglob("*")}
        tools = case.suite.tools
        if p["tool"] == "tcp-procs":
            argv = [tools.tcp, "--procs", 2, "--strategy", "STAR", "--maxbytes", "64KiB",
                    "--iters", 2, "-q", "-o", out]
            expected = {"allreduce_tcp.csv"}
        else:
            scenario = case.dir / "fc.yaml"
            if p["tool"] == "sim-allreduce":
                scenario.write_text(SIM_ALLREDUCE.format(root=ROOT))
                expected = {"fc.csv", "fc.manifest.json"}
            else:
                scenario.write_text(live_scenario(3, LIVE_SYSTEMS[0], 2, "local", "30s"))
                expected = set(LIVE_CSV)
            argv = [tools.simctl, "run", scenario, "-o", out, "--no-progress"]
            if p["tool"] == "live-training":
                argv.insert(2, "--live")
        proc = case.spawn("tool", argv)
        rc = proc.wait()
        check_bound(case, proc, OUTDIR_BOUND_S)
        lines = proc.lines()
        after = {str(x.relative_to(base)) for x in base.rglob("*") if x.is_file()}
        new_files = {f for f in after - before}
        if rc == 0:
            case.expect(p["fs"] == "full", "a read-only folder took the output")
            case.notes.append("enough space: the run succeeded")
            want = {str((out / f).relative_to(base)) for f in expected}
            case.expect(new_files == want, f"files {sorted(new_files)}, expected {sorted(want)}")
            for f in want:
                text = (base / f).read_text()
                if f.endswith(".json"):
                    try:
                        json.loads(text)
                    except ValueError:
                        case.problem(f"{f} is not complete JSON")
                else:
                    case.expect(text.endswith("\n") and text.count("\n") >= 2,
                                f"{f} is not a complete CSV")
        else:
            case.expect(rc == 1, f"exit code {rc}, expected 1 (or 0 with room)")
            case.expect(not new_files, f"files left: {sorted(new_files)}")
            # One line per failing process: simctl one; adaptsim-tcp rank 0's and the launcher's.
            nlines = 2 if p["tool"] == "tcp-procs" else 1
            if case.expect(len(lines) == nlines, f"{len(lines)} lines, expected {nlines}: {lines}"):
                line = lines[0]
                case.expect(cause in line, f"the line does not name the cause ({cause}): {line}")
                case.expect(str(base) in line or str(base.relative_to(case.dir)) in line,
                            f"the line does not name the path: {line}")
            if p["subdir"] and (base / "out").is_dir() and not any((base / "out").iterdir()):
                case.notes.append("an empty output folder was left")
        if keep is not None:
            case.expect(keep.read_text() == "kept\n", "the read-only folder's file changed")
    finally:
        for m in reversed(case.mounts):
            subprocess.run(["umount", str(m)], capture_output=True)
    collect_leaks(case, allowed_out=set())


def mount(case, args):
    target = Path(args[-1])
    r = subprocess.run(["mount"] + [str(a) for a in args], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"mount {' '.join(map(str, args))}: {r.stderr.strip()}")
    if target not in case.mounts:
        case.mounts.append(target)


# ---------------------------------------------------------------------------------------------
# signal

def gen_signal(rng, where):
    sig = rng.choice(["SIGINT", "SIGTERM"])
    # One SIGINT in five goes to a simctl that inherited SIGINT ignored (started in the
    # background by a non-interactive shell, as `cmd &` in a script): it must carry on.
    ignored = sig == "SIGINT" and rng.random() < 0.2
    return {"signal": sig, "ranks": rng.randint(2, 4), "system": rng.choice(LIVE_SYSTEMS),
            "frac": round(rng.random(), 3), "ignored": ignored}


def ignore_sigint():
    signal.signal(signal.SIGINT, signal.SIG_IGN)


SIGNAL_STEPS = 12


def run_signal(case, where):
    p = case.params
    placement = "testbed" if where == "testbed" else "local"
    prefix = case.suite.prefix if where == "testbed" else None
    scenario = case.dir / "sig.yaml"
    scenario.write_text(live_scenario(p["ranks"], p["system"], SIGNAL_STEPS, placement, "30s",
                                      prefix=prefix))
    # The run's length without a signal (this case's scenario, a pilot) scales the delay.
    suite = case.suite
    pilot = case.spawn("pilot", [suite.tools.simctl, "run", "--live", scenario, "-o",
                                 case.dir / "pilot-out", "--no-progress"])
    if pilot.wait() != 0:
        case.problem(f"the run without a signal failed ({pilot.rc}): {pilot.lines()}")
        collect_leaks(case, prefix=prefix)
        return
    shutil.rmtree(case.dir / "pilot-out", ignore_errors=True)
    delay = p["frac"] * pilot.wall
    sig = getattr(signal, p["signal"])
    proc = case.spawn("simctl", [suite.tools.simctl, "run", "--live", scenario, "-o", case.out,
                                 "--no-progress"],
                      preexec_fn=ignore_sigint if p["ignored"] else None)
    time.sleep(delay)
    t_sig = time.monotonic()
    sent = proc.poll() is None
    if sent:
        proc.p.send_signal(sig)
    rc = proc.wait()
    after = time.monotonic() - t_sig
    lines = proc.lines()
    case.notes.append(f"signal at {delay:.2f} s" + (" (ignored by the caller)" if p["ignored"]
                                                    else ""))
    if p["ignored"]:
        # It must not notice: the run completes, every file written, the testbed removed.
        case.expect(rc == 0, f"exit status {rc} after an ignored SIGINT: {lines}")
        if rc == 0:
            case.expect(all((case.out / f).exists() for f in LIVE_CSV), "exit 0 without every file")
        collect_leaks(case, prefix=prefix, allowed_out=LIVE_CSV)
        return
    if rc == 0:
        # Only when it was ending anyway: a process that outlives a SIGINT/SIGTERM ignored it.
        case.expect(not sent or after < 1.0, f"exit 0 {after:.1f} s after {p['signal']}: ignored")
        case.notes.append("the run ended before the signal")
        case.expect(all((case.out / f).exists() for f in LIVE_CSV), "exit 0 without every file")
        collect_leaks(case, prefix=prefix, allowed_out=LIVE_CSV)
        return
    case.expect(rc == -sig, f"exit status {rc}, expected death by {p['signal']}")
    case.notes.append(f"ended {after:.2f} s after it")
    case.suite.count_max("slowest end after the signal (s)", round(after, 2))
    if proc.rc is not None:
        case.expect(after <= SIGNAL_BOUND_S, f"ended {after:.1f} s after the signal, bound "
                    f"{SIGNAL_BOUND_S:.0f} s")
    case.expect(len(lines) <= 1, f"{len(lines)} lines: {lines}")
    collect_leaks(case, prefix=prefix, allowed_out=set())


# ---------------------------------------------------------------------------------------------
# Suites

GENERATORS = {"kill": gen_kill, "malformed": gen_malformed, "port": gen_port,
              "outdir": gen_outdir, "signal": gen_signal}
RUNNERS = {"kill": run_kill, "malformed": run_malformed, "port": run_port, "outdir": run_outdir,
           "signal": run_signal}


class Tools:
    def __init__(self, build):
        b = Path(build).resolve()
        self.tcp = b / "hw/tcp/adaptsim-tcp"
        self.live = b / "hw/live/adaptsim-live"
        self.simctl = b / "sim/simctl/simctl"
        self.testbed = b / "hw/testbed/adaptsim-testbed"

    def missing(self):
        return [str(t) for t in (self.tcp, self.live, self.simctl, self.testbed)
                if not os.access(t, os.X_OK)]


class Suite:
    def __init__(self, campaign, where, args, tools, run_id):
        self.campaign, self.where, self.tools, self.run_id = campaign, where, tools, run_id
        self.name = f"{campaign}-{where}"
        self.work = Path(args.work).resolve() / self.name
        self.prefix = f"fc{campaign[0]}{os.getpid() % 100000}"  # a testbed prefix of its own
        self.cases = self.clean = self.known = self.failures = self.leaked = 0
        self.known_ids = set()
        self.stats = {}  # e.g. the strays' outcomes
        self.wall = 0.0
        self.skipped = None

    def count(self, what):
        self.stats[what] = self.stats.get(what, 0) + 1

    def count_max(self, what, value):
        self.stats[what] = max(self.stats.get(what, value), value)


def testbed_unsupported(tools):
    if os.geteuid() != 0:
        return "the testbed needs root"
    if subprocess.run(["ip", "netns", "list"], capture_output=True).returncode != 0:
        return "`ip netns` does not work here"
    r = subprocess.run([str(tools.testbed), "run", str(ROOT / "topologies/cloud-vms.yaml"),
                        "--set", "servers=2", "--prefix", f"fcprobe{os.getpid() % 100000}",
                        "-q", "--", "true"], capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        return "cannot build a testbed: " + (r.stderr.strip().splitlines() or ["?"])[-1]
    return None


def run_suite(suite, args):
    rng = random.Random(f"{args.seed}/{suite.campaign}/{suite.where}")
    params = [GENERATORS[suite.campaign](rng, suite.where) for _ in range(args.cases)]
    indices = [args.only] if args.only is not None else range(args.cases)
    suite.work.mkdir(parents=True, exist_ok=True)
    t_suite = time.monotonic()
    for i in indices:
        case = Case(suite, i, params[i])
        print(f"[{suite.name} {i}] {json.dumps(params[i], sort_keys=True)}", flush=True)
        t0 = time.monotonic()
        try:
            RUNNERS[suite.campaign](case, suite.where)
        except KeyboardInterrupt:  # Ctrl-C or SIGTERM: remove what the case started, then stop
            print(f"  interrupted; removing what case {i} started", flush=True)
            collect_leaks(case, prefix=suite.prefix if suite.where == "testbed" else None)
            raise
        except Exception as e:  # a harness failure is a failed case too, never a silent pass
            case.problem(f"harness: {type(e).__name__}: {e}")
            try:
                collect_leaks(case, prefix=suite.prefix if suite.where == "testbed" else None)
            except Exception as e2:
                case.problem(f"leak check: {e2}")
        dt = time.monotonic() - t0
        suite.cases += 1
        suite.leaked += len(case.leaks)
        notes = f" ({'; '.join(case.notes)})" if case.notes and args.verbose else ""
        failed = case.failed() or (args.strict and case.known)
        if not failed and not case.known:
            suite.clean += 1
            print(f"  clean in {dt:.1f} s{notes}", flush=True)
            shutil.rmtree(case.dir, ignore_errors=True)
            continue
        if failed:
            suite.failures += 1
            print(f"  FAILED in {dt:.1f} s{notes}; rerun: {rerun_command(args, suite, i)}")
        else:
            suite.known += 1
            print(f"  known defect {', '.join(sorted(case.known))} in {dt:.1f} s{notes}; rerun: "
                  f"{rerun_command(args, suite, i)}")
        for d in sorted(case.known):
            suite.known_ids.add(d)
            print(f"    known defect {d}: {case.known[d]}")
        for pr in case.problems:
            print(f"    problem: {pr}")
        for lk in case.leaks:
            print(f"    leaked: {lk}" + (" (known defect)" if lk in case.known_leaks else ""))
        print(f"    files: {case.dir}", flush=True)
        if failed and not args.keep_going:
            break
    suite.wall = time.monotonic() - t_suite
    if suite.stats:
        print(f"[{suite.name}] " + ", ".join(f"{k}: {v}" for k, v in sorted(suite.stats.items())))


def rerun_command(args, suite, i):
    return (f"{SCRIPT.relative_to(ROOT) if SCRIPT.is_relative_to(ROOT) else SCRIPT} --seed "
            f"{args.seed} --cases {args.cases} --campaign {suite.campaign} --where {suite.where} "
            f"--build {args.build} --only {i}")


def interrupted(signum, frame):
    raise KeyboardInterrupt  # SIGTERM as Ctrl-C: the running case's processes are removed


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--cases", type=int, default=10, help="cases per campaign and place")
    ap.add_argument("--campaign", choices=CAMPAIGNS + ["all"], default="all")
    ap.add_argument("--where", choices=["loopback", "testbed", "both"], default="loopback")
    ap.add_argument("--build", default=str(ROOT / "build"))
    ap.add_argument("--work", default=None, help="case folders (default: a temporary folder)")
    ap.add_argument("--only", type=int, default=None, help="run only this case index")
    ap.add_argument("--keep-going", action="store_true", help="go on after a failed case")
    ap.add_argument("--verbose", action="store_true", help="print each case's notes")
    ap.add_argument("--strict", action="store_true",
                    help="count cases that fail by a known defect (KNOWN_DEFECTS) as failures")
    ap.add_argument("--_strays", help=argparse.SUPPRESS)
    ap.add_argument("--_hold", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args._strays:
        return stray_helper(args._strays)
    if args._hold:
        return hold_port_helper(*args._hold)
    if args.only is not None and not 0 <= args.only < args.cases:
        ap.error("--only must be below --cases")
    signal.signal(signal.SIGTERM, interrupted)
    # Python leaves SIGINT ignored when it started so (a background job of a non-interactive
    # shell, nohup); the tools it starts would inherit that and shrug off the signal campaign's
    # SIGINT. A handler here resets it to the default in every child.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    tools = Tools(args.build)
    missing = tools.missing()
    if missing:
        print("fault-campaign: missing tools (build them first): " + ", ".join(missing))
        return 2
    own_work = args.work is None
    if own_work:
        args.work = f"/tmp/adaptsim-fault-campaign-{os.getpid()}"
    run_id = f"{os.getpid()}-{int(time.time())}"
    campaigns = CAMPAIGNS if args.campaign == "all" else [args.campaign]
    places = ["loopback", "testbed"] if args.where == "both" else [args.where]
    testbed_why = None
    if "testbed" in places:
        testbed_why = testbed_unsupported(tools)
    suites = []
    for c in campaigns:
        for w in places:
            s = Suite(c, w, args, tools, run_id)
            if c == "outdir" and w == "testbed":
                s.skipped = "not applicable (file systems are not the testbed's)"
            elif w == "testbed" and testbed_why:
                s.skipped = testbed_why
            elif c == "outdir" and os.geteuid() != 0:
                s.skipped = "mounting a tmpfs needs root"
            suites.append(s)
    interrupted_by = None
    try:
        for s in suites:
            if s.skipped:
                print(f"[{s.name}] skipped: {s.skipped}", flush=True)
                continue
            run_suite(s, args)
            if s.failures and not args.keep_going:
                break
    except KeyboardInterrupt:
        interrupted_by = "interrupted"
    print()
    print(f"fault campaigns, seed {args.seed}, {args.cases} cases each "
          f"({time.strftime('%Y-%m-%d')}):")
    print("| campaign | where | cases | clean | known defect | failures | leaked resources | "
          "wall |")
    print("|---|---|---|---|---|---|---|---|")
    for s in suites:
        if s.skipped:
            print(f"| {s.campaign} | {s.where} | skipped: {s.skipped} | | | | | |")
        else:
            known = f"{s.known} ({', '.join(sorted(s.known_ids))})" if s.known else "0"
            print(f"| {s.campaign} | {s.where} | {s.cases} | {s.clean} | {known} | {s.failures} | "
                  f"{s.leaked} | {s.wall:.0f} s |")
    shown = sorted(set().union(*(s.known_ids for s in suites)))
    for d in shown:
        print(f"{d}: {KNOWN_DEFECTS[d]}")
    ran = [s for s in suites if not s.skipped]
    if interrupted_by:
        print("fault-campaign: interrupted; the running case's processes, testbed and mounts "
              "were removed")
        return 130
    if own_work and ran and all(s.failures == 0 for s in ran):
        shutil.rmtree(args.work, ignore_errors=True)
    if not ran:
        return SKIP_EXIT
    return 0 if all(s.failures == 0 and s.cases > 0 for s in ran) else 1


if __name__ == "__main__":
    sys.exit(main())
