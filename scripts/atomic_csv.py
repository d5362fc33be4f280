"""Writing a CSV the way every tool here writes its outputs: to a temporary file beside it, then
renamed over it, so a run that stops half way leaves nothing half written."""

import csv
import os


def write_rows(path, rows, fields=None):
    """Writes dict rows (columns: `fields`, else the first row's keys) to `path` atomically."""
    fields = fields or list(rows[0].keys())
    tmp = path + ".tmp"
    with open(tmp, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        w.writerows(rows)
    os.replace(tmp, path)
