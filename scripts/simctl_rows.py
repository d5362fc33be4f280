"""Running one simulation from a script and reading its rows back, the way the ablation and
comparison scripts do: `simctl run SCENARIO --set KEY=VALUE ...` into a folder, then the CSV."""

import csv
import os
import subprocess


def simulate(simctl, scenario, out_dir, csv_name, sets=()):
    """Runs `scenario` with `sets` ("key=value" overrides) into `out_dir`; returns the rows of its
    CSV `csv_name` as dicts. A failing run raises (its error line is on stderr)."""
    cmd = [simctl, "run", scenario, "--no-progress", "-o", out_dir]
    for s in sets:
        cmd += ["--set", s]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    with open(os.path.join(out_dir, csv_name), newline="") as f:
        return list(csv.DictReader(f))
