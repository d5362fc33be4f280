#!/usr/bin/env python3
"""Random live resizes and kills, each checked against its simulation (issue 15's campaign).

Usage: elastic-campaign.py SIMCTL RUNS SEED [--placement local|testbed] [--work DIR]
                           [--kill-share P] [--config-store file|etcd] [--failure-timeout-ms MS]

Each run draws a small elastic scenario from SEED: 3 or 4 one-GPU servers (1 Gbit/s NICs),
MobileNetV2's gradients with the half-K80's compute scaled down, a resize-schedule of 2 or 3 sizes
(1..servers) every 2 or 3 steps, KungFu's mechanism or the restart baseline, and in a third of the
KungFu runs one worker killed or hung (failure.h's kill or silent) at a random step
(failure_timeout 1 s or --failure-timeout-ms, times ADAPTSIM_TEST_TIME_SCALE where set: under the
sanitizers a running worker's slow loop must not miss its own renewals; a starting one's lease is
its runner's). It runs the scenario simulated and live (`simctl run --live`, bounded by the scenario's live.timeout and a wall-clock
limit), then checks that:
  - both runs succeed, and every step's cluster size (the steps CSV's `workers`) is the same live
    as simulated (or, where the kill took the cluster's last worker, both fail saying so);
  - no process of the run is left (no command line mentions its folder: its processes' and, with
    `--config-store etcd`, the private etcd's, whose data lives in the run's temporary folder),
    no etcd data folder, and, on the testbed, no namespace of its prefix.
It prints one line per run and a total of resizes and kills; exit 1 on the first failed check.
Standard library only (runs with any python3).
"""
import argparse
import csv
import os
import random
import shutil
import subprocess
import sys
import tempfile

# Sanitizer builds run 4-10x slower (scripts/test-sanitizers.sh sets this): the leases' lifetime,
# the runs' timeouts scale with it, so a slow but live worker is not taken for a failed one.
SCALE = max(1.0, float(os.environ.get("ADAPTSIM_TEST_TIME_SCALE", "1") or "1"))

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ALL_DEAD = "every worker of the cluster failed"


def scenario(rng, placement, prefix, kill_share, store, failure_timeout_ms):
    servers = rng.choice([3, 4])
    every = rng.choice([2, 3])
    sizes = [rng.randint(1, servers) for _ in range(rng.choice([2, 3]))]
    mechanism = rng.choice(["kungfu", "restart"])
    steps = every * (len(sizes) + 1) + 1
    initial = rng.randint(1, servers)
    kill = None
    if kill_share is not None:
        # Forced share of runs with a kill (KungFu's mechanism: the survivors shrink the cluster).
        if rng.random() < kill_share:
            mechanism = "kungfu"
            kill = (rng.randrange(servers), rng.randint(1, steps - 1))
    elif mechanism == "kungfu" and rng.random() < 1 / 3:
        kill = (rng.randrange(servers), rng.randint(1, steps - 1))
    lines = [
        "name: campaign",
        "seed: 1",
        "topology:",
        f"  file: {ROOT}/topologies/cloud-vms.yaml",
        f"  params: {{servers: {servers}, nic_bandwidth: 1Gbps}}",
        "workload:",
        "  kind: training",
        "  models: [mobilenetv2]",
        "  batch_per_gpu: 32",
        f"  device: {ROOT}/traces/devices/k80-half.yaml",
        "  compute_scale: 0.05",
        "  warmup_steps: 0",
        f"  steps: {steps}",
        "  systems:",
        "    - {label: kf, kind: kungfu, strategy: BINARY_TREE_STAR}",
        f"  elastic: {{mechanism: {mechanism}, initial_workers: {initial}, "
        f"failure_timeout: {failure_timeout_ms * SCALE:g}ms}}",
        f"  policy: {{name: resize-schedule, every: {every}, sizes: {sizes}}}",
    ]
    if kill:
        mode = rng.choice(["kill", "silent"])
        lines.append(f"  failures: [{{worker: {kill[0]}, step: {kill[1]}, mode: {mode}}}]")
    lines.append(f"live: {{placement: {placement}, prefix: {prefix}, timeout: {60 * SCALE:g}s, "
                 f"config_store: {store}}}")
    return "\n".join(lines) + "\n", kill is not None


def workers(csv_path):
    with open(csv_path, newline="") as f:
        return [row["workers"] for row in csv.DictReader(f)]


def leftovers(folder, prefix, placement):
    out = subprocess.run(["ps", "-eo", "pid=,args="], capture_output=True, text=True).stdout
    procs = [line for line in out.splitlines() if folder in line and "ps -eo" not in line]
    procs += [os.path.join(d, "etcd") for d, subdirs, _ in os.walk(folder) if "etcd" in subdirs]
    spaces = []
    if placement == "testbed":
        ns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
        spaces = [line for line in ns.splitlines() if line.startswith(prefix + "-")]
    return procs, spaces


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("simctl")
    ap.add_argument("runs", type=int)
    ap.add_argument("seed", type=int)
    ap.add_argument("--placement", default="local", choices=["local", "testbed"])
    ap.add_argument("--work", default="")
    ap.add_argument("--kill-share", type=float, default=None,
                    help="share of runs with a worker killed (default: a third of KungFu's)")
    ap.add_argument("--config-store", default="file", choices=["file", "etcd"],
                    help="the live runs' config store (etcd: a private one per run)")
    # A worker whose lease lapsed this long ago is taken for failed (a new process's runner holds
    # its lease until the process has started, however long that takes).
    ap.add_argument("--failure-timeout-ms", type=float, default=1000)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    work = a.work or tempfile.mkdtemp(prefix="adaptsim-campaign-")
    prefix = f"ec{os.getpid() % 100000}"
    resizes = kills = 0
    for i in range(a.runs):
        text, killed = scenario(rng, a.placement, prefix, a.kill_share, a.config_store,
                                a.failure_timeout_ms)
        folder = os.path.join(work, f"run{i}")
        shutil.rmtree(folder, ignore_errors=True)
        os.makedirs(folder)
        path = os.path.join(folder, "campaign.yaml")
        with open(path, "w") as f:
            f.write(text)
        env = dict(os.environ, TMPDIR=folder)
        results = {}
        failed = {}
        for mode in ["sim", "live"]:
            cmd = [a.simctl, "run", path, "-o", os.path.join(folder, mode), "--no-progress"]
            if mode == "live":
                cmd.insert(2, "--live")
            try:
                r = subprocess.run(cmd, capture_output=True, text=True, env=env,
                                   timeout=180 * SCALE)
            except subprocess.TimeoutExpired:
                print(f"run {i}: {mode} did not finish in {180 * SCALE:g} s\n{text}",
                      file=sys.stderr)
                return 1
            if r.returncode != 0:
                # A kill of the cluster's last worker ends the job, in both modes alike.
                if killed and ALL_DEAD in r.stderr:
                    failed[mode] = True
                    continue
                print(f"run {i}: {mode} failed ({r.returncode}): {r.stderr.strip()}\n{text}",
                      file=sys.stderr)
                return 1
            results[mode] = workers(os.path.join(folder, mode, "campaign.steps.csv"))
        if failed:
            if len(failed) != 2:
                print(f"run {i}: only {list(failed)} ended with the last worker's death\n{text}",
                      file=sys.stderr)
                return 1
            results = {"sim": ["(the last worker died)"], "live": ["(the last worker died)"]}
        if results["sim"] != results["live"]:
            print(f"run {i}: cluster sizes differ: sim {results['sim']} live {results['live']}\n"
                  f"{text}", file=sys.stderr)
            return 1
        procs, spaces = leftovers(folder, prefix, a.placement)
        if procs or spaces:
            print(f"run {i}: left behind: {procs} {spaces}", file=sys.stderr)
            return 1
        sizes = results["live"]
        n_resizes = sum(1 for k in range(1, len(sizes)) if sizes[k] != sizes[k - 1]) if not failed else 0
        resizes += n_resizes
        kills += 1 if killed else 0
        print(f"run {i}: ok, sizes {' '.join(sizes)}" + (" (a worker failed)" if killed else ""),
              flush=True)
        shutil.rmtree(folder, ignore_errors=True)
    print(f"{a.runs} runs: {resizes} cluster size changes, {kills} failures (killed or hung), "
          "every one as simulated")
    if not a.work:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
