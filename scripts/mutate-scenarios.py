#!/usr/bin/env python3
"""Seeded mutation fuzzing of simctl's inputs (issue 21's acceptance; results in docs/reliability.md).

Each case takes a valid input -- a shipped scenario, or a small scenario written here, with its
topology, device profile or calibration profile -- applies one to three seeded mutations to one of
its files or to its command line (--set, --seed), and runs `simctl validate`; a small scenario that
still validates is then also run (`simctl run`). Every process runs under a time limit and an
address-space limit (none with --memory-limit-mib 0, for sanitized builds), and its peak resident
memory is measured (wait4). A case is a defect when
simctl
  - crashes (dies by a signal), or hangs (passes its time limit),
  - exits with a code other than 0 (done) and 2 (bad input), or uses more than 1 GiB,
  - on exit 2: prints other than exactly one line, or leaves an output file behind,
  - on a run's exit 0: leaves no CSV or manifest.
Defective cases are copied to WORK/findings/CASE/ (the files and the command) to reproduce them.
Run cases mutate small scenarios with small values only (counts up to 3, sizes up to 10x the
base): they check the path from a validated input through the simulator, not its scale, which the
validate cases cover with extreme values.

Usage:
  scripts/mutate-scenarios.py [--cases N] [--seed S] [--jobs J] [--simctl PATH] [--work DIR]
                              [--time-limit S] [--run-time-limit S] [--memory-limit-mib M]
Exit status: 0 when no case was a defect, 1 otherwise. Standard library only (any python3).
"""
import argparse
import json
import os
import random
import re
import resource
import shutil
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ProcessPoolExecutor

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MIB = 1 << 20
DEFECT_RSS_KIB = 1024 * 1024  # 1 GiB

# Values that probe every parser: empties, wrong types, NaN and infinities, extremes of each unit,
# paths that are not regular files, references, odd characters.
INTERESTING = [
    "0", "-1", "1", "2", "3", "1e308", "-1e308", "1e-30", ".nan", ".inf", "-.inf", "NaN", "nan",
    "''", '""', ".", "..", "~", "null", "true", "[]", "{}", "[1, 2]", "{a: 1}", "{value: 1}",
    "9223372036854775807", "9223372036854775808", "18446744073709551616", "1048576", "65536",
    "1e23", "-0", "0x10", "1_000", "0s", "1e-30s", "1e30s", "1e308s", "-5us", "5", "1e-30Gbps",
    "1e300Gbps", "0Gbps", "-5Gbps", "1Kbps", "999bps", "1B", "0B", "1.5B", "1e300B", "1024TiB",
    "1e-9 img/s", "1e300 img/s", "0 img/s", "NaN%", "100%", "-1%", "1e-300%", "/dev/zero",
    "/dev/null", "/tmp", "/nonexistent/x.yaml", "${servers}", "${nope}", "${", "&a x", "*a",
    "!!binary aGk=", "'\x7f'", "\u00e9", "caf\u00e9", "x" * 300, "a" * 5000, "[[[[[[[[[[",
    "{{{{", "- x", ": :", "@", "`", "%YAML 1.2", "? x", "|", ">",
]
# Run cases: values that keep a small scenario small (they may still be rejected).
RUN_SAFE = [
    "0", "-1", "1", "2", "3", "1e308", "-1e308", "1e-30", ".nan", ".inf", "NaN", "''", ".", "~",
    "null", "true", "[]", "{}", "[1, 2]", "{a: 1}", "0s", "1e-30s", "1e30s", "1ns", "1us", "1ms",
    "-5us", "5", "1e-30Gbps", "1e300Gbps", "0Gbps", "1Kbps", "1Mbps", "1B", "0B", "1.5B", "8B",
    "1KiB", "1e-9 img/s", "1e300 img/s", "1e20 img/s", "NaN%", "99%", "0%", "/dev/zero", "/tmp",
    "${servers}", "${nope}", "&a x", "*a", "caf\u00e9", "x" * 300, "a" * 5000, "{{{{", "- x",
]
# "\udcff" is written as the byte 0xff (surrogateescape): text that is not UTF-8.
INSERTS = ["\0", "\udcff", "\udcc0", ":", "{", "[", "]", "}", "&", "*", "!", "%", "@", "`", "#", "'", '"',
           "\t", "\n", "---\n", "...\n", "- ", "? ", "${x}", "\\", "|", ">"]


def small_bases():
    """Small valid scenarios (name -> text) that run in well under a second."""
    topo = os.path.join(ROOT, "topologies")
    k80 = os.path.join(ROOT, "traces/devices/k80-half.yaml")
    bases = {}

    def allreduce(name, topology, params, strategies, extra=""):
        bases[name] = (
            f"name: {name}\nseed: 3\ntopology:\n  file: {topology}\n  params: {params}\n"
            f"workload:\n  kind: allreduce\n  strategies: {strategies}\n  min_bytes: 1KiB\n"
            f"  max_bytes: 64KiB\n  step_factor: 8\n  chunk_size: 16KiB\n{extra}")

    allreduce("ar_cloud", "cloud-vms.yaml", "{servers: 3}", "[STAR, CLASSIC_RING, MULTI_BINARY_TREE_STAR]")
    allreduce("ar_leaves", "testbed-leaves.yaml", "{servers: 4}", "[RING, HALVING_DOUBLING]",
              "  sharing: tcp\n  connection: serialized\n  socket_buffer: 64KiB\n")
    allreduce("ar_fat", "fat-tree.yaml", "{servers: 2, servers_per_leaf: 1, spines: 1}",
              "[TREE, CLIQUE]", "  endpoint: gpu\n  sharing: bottleneck\n")
    allreduce("ar_dgx", "dgx1.yaml", "{servers: 1}", "[AUTO, BINARY_TREE_STAR]")
    allreduce("ar_wan", "wan-regions.yaml", "{servers_us: 1, servers_eu: 1, servers_asia: 1}",
              "[STAR]", "  connection: parallel\n  per_message_overhead: 5us\n")
    bases["ar_cal"] = ("calibration: " + os.path.join(ROOT, "traces/calibration/testbed-1Gbps.yaml")
                       + "\n" + bases["ar_cloud"].replace("name: ar_cloud", "name: ar_cal"))
    systems = {
        "tr_ideal": "{kind: ideal}",
        "tr_kungfu": "{kind: kungfu, strategy: STAR, chunk_size: 1MiB}",
        "tr_horovod": "{kind: horovod, cycle_time: 5ms, fusion_threshold: 64MiB}",
        "tr_nccl": "{kind: nccl, poll_interval: 100us}",
        "tr_hvnccl": "{label: hv, kind: horovod-nccl}",
        "tr_hier": "{kind: hierarchical, strategy: RING}",
    }
    for name, system in systems.items():
        bases[name] = (
            f"name: {name}\nseed: 5\ntopology:\n  file: cloud-vms.yaml\n  params: {{servers: 2}}\n"
            f"workload:\n  kind: training\n  models: [resnet56]\n  batch_per_gpu: 8\n"
            f"  device: k80-half.yaml\n  warmup_steps: 0\n  steps: 1\n  systems:\n"
            f"    - {system}\n")
    bases["tr_tcp"] = bases["tr_kungfu"].replace("name: tr_kungfu", "name: tr_tcp") + (
        "  sharing: tcp\n  share_cv: 0.3\n  socket_buffer: 1MiB\n")
    bases["tr_sweep"] = bases["tr_ideal"].replace("name: tr_ideal", "name: tr_sweep") + (
        "sweep:\n  topology.params.servers: [1, 2]\n")
    files = {name: text for name, text in bases.items()}
    return files, topo, k80


def mutate_text(rng, text, values, scale_often=False):
    """One mutation of a YAML text; `scale_often`: half of them scale a number (run cases, so that
    more stay valid and reach the simulator)."""
    lines = text.split("\n")
    op = 3 if scale_often and rng.random() < 0.5 else rng.randrange(12)
    scalar_lines = [i for i, l in enumerate(lines) if re.match(r"^\s*(- )?[\w.${}-]+:\s*\S", l)]
    numbers = list(re.finditer(r"(?<![\w.])\d+(\.\d+)?([eE][+-]?\d+)?", text))
    if op == 3 and numbers:  # a number scaled by a power of ten, its unit kept
        m = rng.choice(numbers)
        exponents = [-30, -9, -3, -1, 1, 2, 3, 9, 30] if values is INTERESTING else [
            -30, -9, -3, -1, 1]  # run cases: never larger than 10x
        scaled = float(m.group(0)) * 10 ** rng.choice(exponents)
        number = repr(int(scaled)) if scaled.is_integer() and abs(scaled) < 1e15 else repr(scaled)
        return text[:m.start()] + number + text[m.end():]
    if op <= 3 and scalar_lines:  # a value replaced: the most telling mutation, so the most common
        i = rng.choice(scalar_lines)
        m = re.match(r"^(\s*(?:- )?[\w.${}-]+:\s*)(.*)$", lines[i])
        lines[i] = m.group(1) + rng.choice(values)
    elif op == 4 and lines:  # a line deleted
        del lines[rng.randrange(len(lines))]
    elif op == 5 and lines:  # a line given twice (a repeated key)
        i = rng.randrange(len(lines))
        lines.insert(i, lines[i])
    elif op == 6 and len(lines) > 1:  # two lines swapped
        i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
        lines[i], lines[j] = lines[j], lines[i]
    elif op == 7 and lines:  # indentation changed
        i = rng.randrange(len(lines))
        lines[i] = (" " * rng.choice([1, 2, 4]) + lines[i]) if rng.random() < 0.5 else lines[i].lstrip()
    elif op == 8:  # a character inserted
        joined = "\n".join(lines)
        at = rng.randrange(len(joined) + 1)
        return joined[:at] + rng.choice(INSERTS) + joined[at:]
    elif op == 9:  # truncated
        joined = "\n".join(lines)
        return joined[:rng.randrange(len(joined) + 1)]
    elif op == 10 and scalar_lines:  # a key renamed
        i = rng.choice(scalar_lines)
        m = re.match(r"^(\s*(?:- )?)([\w.${}-]+)(:.*)$", lines[i])
        name = m.group(2)
        pick = rng.random()
        name = (name[:-1] if pick < 0.3 else name + rng.choice(["s", "_", "x"]) if pick < 0.6
                else rng.choice(["servers", "kind", "file", "params", "sweep", "name", "value",
                                 "source", "bandwidth", "latency", "systems", "models"]))
        lines[i] = m.group(1) + name + m.group(3)
    else:  # a key added at a random depth
        i = rng.randrange(len(lines) + 1)
        indent = " " * rng.choice([0, 2, 4, 6])
        key = rng.choice(["servers", "extra", "sweep", "topology.params.servers", "cycle_time",
                          "chunk_size", "max_bytes", "nic", "steps", "name", "seed", "output"])
        lines.insert(i, f"{indent}{key}: {rng.choice(values)}")
    return "\n".join(lines)


def set_override(rng, text, values):
    """A --set of a dotted key found in the scenario (or a made-up one) to an interesting value."""
    keys = []
    stack = []
    for line in text.split("\n"):
        m = re.match(r"^(\s*)([\w.-]+):", line)
        if not m:
            continue
        depth = len(m.group(1)) // 2
        stack = stack[:depth] + [m.group(2)]
        keys.append(".".join(stack))
    keys += ["sweep.topology.params.servers", "topology.params.nic_bandwidth", "workload.systems",
             "nope.key", "workload", "name", "output.csv", ".", "a..b"]
    return f"{rng.choice(keys)}={rng.choice(values)}"


def run_limited(args, cwd, seconds, memory_bytes, stdout, stderr):
    """(exit code or -signal, timed out, max RSS in KiB) of one process, killed at the limit."""
    limit = ["prlimit", f"--as={memory_bytes}", "--"] if memory_bytes > 0 else []
    p = subprocess.Popen(limit + args, cwd=cwd,
                         stdout=stdout, stderr=stderr, stdin=subprocess.DEVNULL,
                         start_new_session=True)
    timed_out = []

    def kill():
        timed_out.append(True)
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    timer = threading.Timer(seconds, kill)
    timer.start()
    _, status, usage = os.wait4(p.pid, 0)
    timer.cancel()
    p.returncode = 0  # reaped here; keeps Popen from waiting again
    code = os.waitstatus_to_exitcode(status)
    return code, bool(timed_out), usage.ru_maxrss


def run_case(job):
    """One case; returns its record (and copies it to findings/ when it is a defect)."""
    o = job["options"]
    case = job["case"]
    rng = random.Random(o["seed"] * 1_000_003 + case)
    work = os.path.join(o["work"], f"w{os.getpid()}")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    files, topo_dir, k80 = small_bases()
    shipped = sorted(f for f in os.listdir(os.path.join(ROOT, "scenarios")) if f.endswith(".yaml"))
    run_case_kind = rng.random() < o["run_share"]
    written = {}
    bases = sorted(files) if run_case_kind else shipped + sorted(files)
    base = rng.choice(bases)
    values = RUN_SAFE if run_case_kind else INTERESTING
    if base in files:
        # A small scenario; its topology, device and calibration files are copies in the case
        # folder, mutable too.
        scenario = files[base]
        topo_name = re.search(r"file: (\S+)", scenario).group(1)
        written[topo_name] = open(os.path.join(topo_dir, os.path.basename(topo_name))).read()
        if "device:" in scenario:
            written["k80-half.yaml"] = open(k80).read()
        if "calibration:" in scenario:
            cal = re.search(r"calibration: (\S+)", scenario).group(1)
            scenario = scenario.replace(cal, "cal.yaml")
            written["cal.yaml"] = open(cal).read()
        written["s.yaml"] = scenario
    else:
        # A shipped scenario, with its relative paths made absolute.
        text = open(os.path.join(ROOT, "scenarios", base)).read()
        written["s.yaml"] = text.replace("../", ROOT + "/")
    args = []
    mutations = []
    # Run cases take one mutation, so that more of them stay valid and reach the simulator.
    for _ in range(1 if run_case_kind else rng.choice([1, 1, 2, 3])):
        target = rng.random()
        if target < 0.15:
            override = set_override(rng, written["s.yaml"], values)
            args += ["--set", override]
            mutations.append(f"--set {override[:80]}")
        else:
            name = rng.choice(sorted(written)) if target < 0.45 else "s.yaml"
            written[name] = mutate_text(rng, written[name], values, scale_often=run_case_kind)
            mutations.append(f"edit {name}")
    for name, text in written.items():
        with open(os.path.join(work, name), "w", encoding="utf-8", errors="surrogateescape") as f:
            f.write(text)
    record = {"case": case, "base": base, "mutations": mutations, "defects": [], "steps": []}
    memory = o["memory_limit_mib"] * MIB
    out_dir = os.path.join(work, "out")
    steps = [("validate", [o["simctl"], "validate", "s.yaml"] + args, o["time_limit"])]
    if run_case_kind:
        run_args = [o["simctl"], "run", "s.yaml", "--no-progress", "--threads", "1", "-o", out_dir]
        if rng.random() < 0.1:
            seed = rng.choice(["-1", "1e23", "0", "9223372036854775807", "9223372036854775808", "x"])
            run_args += ["--seed", seed]
            mutations.append(f"--seed {seed}")
        steps.append(("run", run_args + args, o["run_time_limit"]))
    for kind, argv, limit in steps:
        with open(os.path.join(work, "stdout"), "w") as so, open(os.path.join(work, "stderr"),
                                                                 "w") as se:
            code, timed_out, rss = run_limited(argv, work, limit, memory, so, se)
        err = open(os.path.join(work, "stderr"), errors="replace").read()
        step = {"kind": kind, "code": code, "rss_kib": rss, "timed_out": timed_out}
        record["steps"].append(step)
        defects = []
        if timed_out:
            defects.append("hang")
        elif code < 0:
            defects.append("crash")
        elif code not in (0, 2):
            defects.append(f"exit {code}")
        if rss > DEFECT_RSS_KIB:
            defects.append("memory")
        if code == 2 and not timed_out:
            if err.count("\n") != 1 or not err.endswith("\n"):
                defects.append("not one line")
            if kind == "run" and os.path.isdir(out_dir) and os.listdir(out_dir):
                defects.append("partial output")
        if kind == "run" and code == 0:
            # The manifest, and the CSV it names.
            manifests = [f for f in (os.listdir(out_dir) if os.path.isdir(out_dir) else [])
                         if f.endswith(".manifest.json")]
            try:
                csv = json.load(open(os.path.join(out_dir, manifests[0])))["csv"]
                if not os.path.isfile(os.path.join(out_dir, csv)):
                    raise FileNotFoundError(csv)
            except (IndexError, OSError, ValueError, KeyError):
                defects.append("missing output")
        if kind == "run" and code == 2:
            record["run_rejected"] = err.strip()[-300:]
        if defects:
            record["defects"] += [f"{kind}: {d}" for d in defects]
            record["stderr"] = err[-2000:]
        if code != 0 or timed_out:
            break
    if record["defects"]:
        found = os.path.join(o["work"], "findings", f"case{case}")
        shutil.rmtree(found, ignore_errors=True)
        shutil.copytree(work, found, ignore=shutil.ignore_patterns("out"))
        with open(os.path.join(found, "case.json"), "w") as f:
            json.dump(record | {"commands": [s[1] for s in steps]}, f, indent=2)
    return record


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cases", type=int, default=1000)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    p.add_argument("--simctl", default=os.path.join(ROOT, "build/sim/simctl/simctl"))
    p.add_argument("--work", default=None, help="scratch folder (default /tmp/adaptsim-mutate-SEED)")
    p.add_argument("--time-limit", type=float, default=20, help="seconds per validate")
    p.add_argument("--run-time-limit", type=float, default=30, help="seconds per run")
    p.add_argument("--memory-limit-mib", type=int, default=2048,
                   help="address-space limit per process, 0 for none (a sanitized simctl's "
                        "shadow memory alone is terabytes of address space); 1 GiB of resident "
                        "memory is a defect either way")
    p.add_argument("--run-share", type=float, default=0.5,
                   help="share of cases that mutate a small scenario and run it if it validates")
    p.add_argument("--verbose", action="store_true",
                   help="also print each run that validate accepted and run rejected (exit 2)")
    p.add_argument("--first-case", type=int, default=0, help="resume a seeded series here")
    a = p.parse_args()
    options = {"seed": a.seed, "simctl": os.path.abspath(a.simctl),
               "work": os.path.abspath(a.work or f"/tmp/adaptsim-mutate-{a.seed}"),
               "time_limit": a.time_limit, "run_time_limit": a.run_time_limit,
               "memory_limit_mib": a.memory_limit_mib, "run_share": a.run_share}
    os.makedirs(options["work"], exist_ok=True)
    start = time.monotonic()
    totals = {"cases": 0, "validate": 0, "run": 0, "exit": {}, "defects": {}, "max_rss_kib": 0,
              "run_rejected_after_validate": 0}
    defective = []
    jobs = ({"options": options, "case": c} for c in range(a.first_case, a.first_case + a.cases))
    with ProcessPoolExecutor(max_workers=a.jobs) as pool:
        for r in pool.map(run_case, jobs, chunksize=8):
            totals["cases"] += 1
            for s in r["steps"]:
                totals[s["kind"]] += 1
                key = f'{s["kind"]} {"timeout" if s["timed_out"] else s["code"]}'
                totals["exit"][key] = totals["exit"].get(key, 0) + 1
                if s["rss_kib"] > totals["max_rss_kib"]:
                    totals["max_rss_kib"] = s["rss_kib"]
                    totals["max_rss_case"] = f'{r["case"]} {s["kind"]} ({r["base"]}; ' + \
                        "; ".join(r["mutations"]) + ")"
            if len(r["steps"]) == 2 and r["steps"][1]["code"] == 2:
                totals["run_rejected_after_validate"] += 1
                if a.verbose:
                    print(f'run rejected case {r["case"]} ({r["base"]}; '
                          f'{"; ".join(r["mutations"])}): {r.get("run_rejected", "")}', flush=True)
            for d in r["defects"]:
                totals["defects"][d] = totals["defects"].get(d, 0) + 1
            if r["defects"]:
                defective.append(r)
                print(f'DEFECT case {r["case"]} ({r["base"]}; {"; ".join(r["mutations"])}): '
                      f'{", ".join(r["defects"])}: {r.get("stderr", "").strip()[-300:]}',
                      flush=True)
            if totals["cases"] % 1000 == 0:
                print(f'... {totals["cases"]} cases, {len(defective)} defective, '
                      f'{time.monotonic() - start:.0f} s', flush=True)
    elapsed = time.monotonic() - start
    totals["seconds"] = round(elapsed, 1)
    totals["defective_cases"] = len(defective)
    with open(os.path.join(options["work"], "summary.json"), "w") as f:
        json.dump(totals, f, indent=2, sort_keys=True)
    print(f'{totals["cases"]} cases (seed {a.seed}, from case {a.first_case}) in {elapsed:.0f} s: '
          f'{totals["validate"]} validate, {totals["run"]} run; '
          f'crashes {sum(v for k, v in totals["defects"].items() if "crash" in k)}, '
          f'hangs {sum(v for k, v in totals["defects"].items() if "hang" in k)}, '
          f'other exits {sum(v for k, v in totals["defects"].items() if "exit" in k)}, '
          f'over 1 GiB {sum(v for k, v in totals["defects"].items() if "memory" in k)}, '
          f'not one line {sum(v for k, v in totals["defects"].items() if "one line" in k)}, '
          f'partial output {sum(v for k, v in totals["defects"].items() if "partial" in k)}, '
          f'missing output {sum(v for k, v in totals["defects"].items() if "missing" in k)}; '
          f'max RSS {totals["max_rss_kib"] / 1024:.0f} MiB (case {totals.get("max_rss_case")}); exits {json.dumps(totals["exit"], sort_keys=True)}; '
          f'runs rejected after validate {totals["run_rejected_after_validate"]}')
    return 1 if defective else 0


if __name__ == "__main__":
    sys.exit(main())
