#!/usr/bin/env python3
"""Runs every simctl and calibrate command that README.md, docs/*.md and simctl --help show, so
the documentation cannot drift from the tools (issue 21 item 9).

Usage: doc_commands.py SOURCE_ROOT SIMCTL CALIBRATE WORK_DIR

A command is found in a fenced code block (a line starting with simctl, calibrate or their build
paths; a trailing backslash continues it) or in an inline code span (`simctl ...`, spanning lines
as Markdown allows). Each is then:
  - run, when it is concrete: `simctl run|compare SCENARIO ...` as `simctl validate SCENARIO` with
    the same --set and --calibration (the run-only options dropped), `simctl validate|list|--help|
    --version` as written, and `calibrate --backend tcp --procs N -o DIR` on a tiny sweep into
    WORK_DIR; it must exit 0;
  - option-checked, when it holds placeholders (SCENARIO, DIR, N, ...), needs hardware this check
    cannot assume (--gpus, --hosts, --rank, mpirun) or names a file that is not shipped: every
    --option it uses must be one its tool's --help lists.
An inline `--set KEY=VALUE` (an override example) must validate with at least one shipped
scenario. DOC_COMMANDS_VERBOSE=1 prints every command and what was done with it. Standard
library only.
"""
import glob
import os
import re
import shlex
import subprocess
import sys

ROOT, SIMCTL, CALIBRATE, WORK = sys.argv[1:5]
TOOLS = {
    "simctl": SIMCTL,
    "build/sim/simctl/simctl": SIMCTL,
    "calibrate": CALIBRATE,
    "build/calibrate/calibrate": CALIBRATE,
}
# A synopsis's words: "[--seed", "N]", "key=value]...", "...", "|", SCENARIO, and docs' CAP.
PLACEHOLDER = re.compile(r"^(\[.*|.*\]\.\.\.|\.\.\.|\||[A-Z][A-Z_]*\]?(\.\.\.)?|.*CAP.*)$")


def commands_in(path):
    """(where, text) of every command in one Markdown file."""
    text = open(path, encoding="utf-8").read()
    found = []
    in_block = False
    diagram = False  # a ```text block is a drawing, not commands
    pending = ""
    for number, line in enumerate(text.split("\n"), 1):
        if line.lstrip().startswith("```"):
            in_block = not in_block
            diagram = in_block and line.strip() == "```text"
            continue
        if in_block and not diagram:
            stripped = (pending + " " + line.strip()) if pending else line.strip()
            if pending or stripped.split(" ", 1)[0] in TOOLS:
                if stripped.endswith("\\"):
                    pending = stripped[:-1].strip()
                    continue
                pending = ""
                found.append((f"{path}:{number}", stripped))
    # Inline spans, which may run over a line break; blocks removed first.
    prose = re.sub(r"```.*?```", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    for m in re.finditer(r"`([^`]+)`", prose):
        span = " ".join(m.group(1).split())
        head = span.split(" ", 1)[0]
        if head in TOOLS and " " in span or span.startswith("--set "):
            line = prose.count("\n", 0, m.start()) + 1
            found.append((f"{path}:{line}", span))
    return found


def help_text(tool, sub):
    args = [tool] + ([sub] if sub else []) + ["--help"]
    return subprocess.run(args, capture_output=True, text=True).stdout


def words_of(command):
    command = re.split(r"\s(?:&&|\|\||;)\s|\s#\s|\s#$", command)[0]
    # A lone "|" between alternatives ("list strategies | topologies") is not a shell pipe.
    return shlex.split(command)


def check(where, command):
    """Returns None on success, else why it failed."""
    if command.startswith("--set "):
        if PLACEHOLDER.match(command[len("--set "):].split("=", 1)[0]):
            return "checked"  # --set KEY=VALUE: the option's form, not a value to try
        tried = []
        for scenario in sorted(glob.glob(os.path.join(ROOT, "scenarios/*.yaml"))):
            result = check(where, "simctl validate " + os.path.relpath(scenario, ROOT) + " " +
                           command)
            if result == "ran":
                return result
            tried.append(result)
        return "no shipped scenario validates with it: " + tried[0]
    words = words_of(command)
    # Alternatives ("list strategies | topologies", "--help | --version"): each is a command.
    if "|" in words:
        first = 2 if len(words) > 2 and words[1] == "list" else 1
        alternatives = [w for w in words[first:] if w != "|"]
        results = [check(where, " ".join(words[:first] + [a])) for a in alternatives]
        failed = [r for r in results if r not in ("ran", "checked")]
        return failed[0] if failed else "ran"
    tool = TOOLS[words[0]]
    name = "simctl" if tool == SIMCTL else "calibrate"
    args = words[1:]
    sub = args[0] if args and not args[0].startswith("-") else None
    subcommands = ("run", "validate", "compare", "list") if name == "simctl" else ("import",)
    if sub is not None and sub not in subcommands and not PLACEHOLDER.match(sub):
        return f"{name} has no subcommand '{sub}'"
    options = [a.split("=", 1)[0] for a in args if a.startswith("-") and a != "-"]
    helptext = help_text(tool, sub if sub in subcommands else None)
    for option in options:
        if not re.search(r"(^|[\s,])" + re.escape(option) + r"([\s,=]|$)", helptext, re.M):
            return f"option {option} is not in `{name} {sub or ''} --help`"
    placeholders = [a for a in args if PLACEHOLDER.match(a)]
    hardware = {"--gpus", "--hosts", "--rank"} & set(options) or "mpirun" in command
    files = [a for a in args[1:] if not a.startswith("-") and ("/" in a or a.endswith(".txt"))]
    missing = [f for f in files if f.endswith((".yaml", ".txt")) and not os.path.exists(
        os.path.join(ROOT, f))]
    no_scenario = sub in ("run", "compare", "validate") and (len(args) < 2 or
                                                             args[1].startswith("-"))
    if placeholders or hardware or missing or no_scenario:
        return "checked"
    if name == "simctl":
        if sub in ("run", "compare"):
            kept, i = ["validate", args[1]], 2
            while i < len(args):
                a = args[i]
                takes_value = a in ("--set", "--calibration", "-o", "--out", "--threads",
                                    "--seed", "--trace-connections", "--sim-seeds")
                if a in ("--set", "--calibration"):
                    kept += [a, args[i + 1]]
                i += 2 if takes_value else 1
            args = kept
    else:
        if "--procs" not in options or not ({"-o", "--output"} & set(options)):
            return "checked"
        out = os.path.join(WORK, "calibrate")
        # The documented sweep's own sizes, iterations and strategy give way to a tiny sweep.
        tiny = ("--minbytes", "-b", "--maxbytes", "-e", "--iters", "-n", "--warmup-iters", "-w",
                "--strategy", "--stepfactor", "-f")
        kept, i = [], 0
        while i < len(args):
            if args[i] in tiny:
                i += 2
                continue
            kept.append(args[i])
            i += 1
        args = kept
        at = args.index("-o") if "-o" in args else args.index("--output")
        args[at + 1] = out
        # A tiny sweep: two sizes, few iterations, one strategy, no kernel timing.
        args += ["--minbytes", "8B", "--maxbytes", "64B", "--iters", "2", "--warmup-iters", "1",
                 "--strategy", "STAR", "--no-kernels", "-q"]
    r = subprocess.run([tool] + args, cwd=ROOT, capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        return f"exit {r.returncode}: {(r.stderr or r.stdout).strip()[-400:]}"
    return "ran"


def main():
    os.makedirs(WORK, exist_ok=True)
    found = []
    for path in [os.path.join(ROOT, "README.md")] + sorted(glob.glob(os.path.join(ROOT,
                                                                                  "docs/*.md"))):
        found += [(os.path.relpath(w, ROOT), c) for w, c in commands_in(path)]
    footer = subprocess.run([SIMCTL, "--help"], capture_output=True, text=True).stdout
    for line in footer.split("Examples:", 1)[-1].split("\n"):
        if line.strip().startswith("simctl "):
            found.append(("simctl --help", line.strip()))
    ran = checked = 0
    failures = []
    for where, command in found:
        result = check(where, command)
        if os.environ.get("DOC_COMMANDS_VERBOSE"):
            print(f"{result:>8}  {where}: {command}")
        if result == "ran":
            ran += 1
        elif result == "checked":
            checked += 1
        else:
            failures.append(f"{where}: {command}\n    -> {result}")
    for f in failures:
        print("FAIL", f)
    print(f"{len(found)} documented commands: {ran} ran, {checked} option-checked, "
          f"{len(failures)} failed")
    # Enough found that the extraction itself has not silently broken.
    if ran < 10:
        print("FAIL: fewer than 10 commands ran; the extraction is broken")
        return 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
