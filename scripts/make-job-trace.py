#!/usr/bin/env python3
"""Writes a synthetic job trace for the `jobs` workload (sim/io/job_trace.h), seeded.

The columns are those of SenseTime's Helios cluster_log.csv (Hu et al., SC'21; github.com/
S-Lab-System-Group/HeliosData) that the workload reads -- job_id, user, gpu_num, submit_time (Helios'
"YYYY-MM-DD HH:MM:SS") -- plus `model` and `samples`, which public traces lack. The values are
NOT drawn from Helios: they are assumptions [U], stated here, sized so that a 50-job trace on a
64-GPU cluster simulates step by step in seconds:
  - gpu_num from {1, 2, 4, 8, 16} with weights 0.40/0.20/0.20/0.15/0.05: skewed to small jobs, as
    the published characterizations of GPU clusters find (Philly, Jeon et al., ATC'19 §3; Helios,
    Hu et al., SC'21 §3: most GPU jobs ask for one GPU) [U: the weights];
  - models resnet56 / mobilenetv2 / resnet50 with equal weight (zoo models with a V100 profile);
  - samples: steps x gpu_num x batch (32), steps log-uniform in [20, 200] at the requested size;
  - arrivals Poisson, mean inter-arrival --interarrival seconds (default 0.3 s: the cluster is
    over-subscribed while jobs arrive, so schedulers differ).
Usage: make-job-trace.py [--jobs 50] [--seed 1] [--interarrival 0.3] [-o FILE]
"""
import argparse
import datetime
import math
import random
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--jobs", type=int, default=50)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--interarrival", type=float, default=0.3)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("-o", "--output", default="-")
    a = ap.parse_args()
    rng = random.Random(a.seed)
    start = datetime.datetime(2020, 9, 1, 0, 0, 0)
    t = 0.0
    rows = ["job_id,user,gpu_num,submit_time,model,samples"]
    for i in range(a.jobs):
        gpus = rng.choices([1, 2, 4, 8, 16], weights=[0.40, 0.20, 0.20, 0.15, 0.05])[0]
        model = rng.choice(["resnet56", "mobilenetv2", "resnet50"])
        steps = math.exp(rng.uniform(math.log(20), math.log(200)))
        samples = int(round(steps)) * gpus * a.batch
        user = "u%02d" % rng.randrange(12)
        # Helios' timestamps are whole seconds: the arrival is kept in seconds, then written at
        # whole-second resolution would merge jobs; this trace writes seconds with milliseconds.
        rows.append("%d,%s,%d,%.3f,%s,%d" % (1000 + i, user, gpus, t, model, samples))
        t += rng.expovariate(1.0 / a.interarrival)
    text = "\n".join(rows) + "\n"
    if a.output == "-":
        sys.stdout.write(text)
    else:
        with open(a.output, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
