"""Shared helpers for adaptsim plot scripts (run with /usr/bin/python3: Debian's matplotlib)."""
import argparse
import os
import re
import sys

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402


def parse_args(description, default_csv):
    p = argparse.ArgumentParser(description=description)
    p.add_argument("csv", nargs="?", default=default_csv, help=f"input CSV (default {default_csv})")
    p.add_argument("-o", "--output", help="output image (default: the CSV's name with .png)")
    args = p.parse_args()
    if not os.path.exists(args.csv):
        sys.exit(f"{args.csv}: no such file (run the scenario first)")
    if not args.output:
        args.output = os.path.splitext(args.csv)[0] + ".png"
    return args


def parse_args_many(description, default_csv, scenario, extra=None):
    """Like parse_args for scripts that take several CSVs (simulated and live side by side); the
    default output is the first CSV's name, without `.steps`, with .png. `extra(parser)` may add
    the script's own options."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("csv", nargs="*", default=[default_csv],
                   help=f"input CSVs (default {default_csv})")
    p.add_argument("-o", "--output", help="output image (default: the first CSV's name with .png)")
    if extra:
        extra(p)
    args = p.parse_args()
    for path in args.csv:
        if not os.path.exists(path):
            sys.exit(f"{path}: no such file (run simctl run {scenario} first)")
    if not args.output:
        args.output = os.path.splitext(args.csv[0])[0].replace(".steps", "") + ".png"
    return args


def reading(text, key):
    """The value of `key` in a steps CSV's readings cell ("k1=v1 k2=v2"), NaN where absent."""
    m = re.search(re.escape(key) + r"=([-+0-9.eE]+|nan)", str(text))
    return float(m.group(1)) if m else float("nan")


def read_csv(path, required):
    df = pd.read_csv(path)
    missing = [c for c in required if c not in df.columns]
    if missing:
        sys.exit(f"{path}: missing columns {missing}; is this the right scenario's CSV?")
    return df


def save(fig, path):
    """Writes atomically: a temporary file, then rename."""
    fig.tight_layout()
    tmp = path + ".tmp.png"
    fig.savefig(tmp, dpi=130, bbox_inches="tight")
    plt.close(fig)
    os.replace(tmp, path)
    print(f"wrote {path}")


def human_bytes(n):
    for unit in ["B", "KiB", "MiB", "GiB"]:
        if n < 1024 or unit == "GiB":
            return f"{n:g} {unit}"
        n /= 1024
