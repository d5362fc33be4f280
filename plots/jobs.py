#!/usr/bin/python3
"""Many jobs on one cluster (scenarios/jobs.yaml): job completion times and GPUs in use, per scheduler.

Left: the distribution (CDF) of job completion times (arrival to end), the mean in the legend.
Right: the cluster's GPUs held by jobs over time (from the steps CSV beside the jobs CSV), with
the jobs waiting in the queue below. Prints each scheduler's mean and median completion time,
mean queueing time, makespan and mean GPUs held until the makespan.
Usage: /usr/bin/python3 plots/jobs.py [out/jobs/jobs.csv] [-o out.png]
"""
import os

import matplotlib.pyplot as plt

from common import parse_args, read_csv, save

args = parse_args(__doc__.splitlines()[0], "out/jobs/jobs.csv")
jobs = read_csv(args.csv, ["scheduler", "job_id", "gpu_num", "submit_s", "start_s", "end_s",
                           "queue_s", "jct_s", "resizes"])
steps_path = os.path.splitext(args.csv)[0] + ".steps.csv"
cluster = read_csv(steps_path, ["scheduler", "time_s", "allocated_gpus", "queued_jobs", "n_gpus"])
schedulers = list(dict.fromkeys(jobs["scheduler"]))
fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5))
for s in schedulers:
    d = jobs[jobs["scheduler"] == s].sort_values("jct_s")
    n = len(d)
    left.step(d["jct_s"], [(i + 1) / n for i in range(n)], where="post",
              label=f"{s}: mean {d['jct_s'].mean():.2f} s")
    c = cluster[cluster["scheduler"] == s]
    line, = right.step(c["time_s"], c["allocated_gpus"], where="post", label=f"{s}: GPUs held")
    right.step(c["time_s"], c["queued_jobs"], where="post", linestyle=":", color=line.get_color(),
               label=f"{s}: jobs queued")
    makespan = d["end_s"].max()
    # Time-weighted mean of the GPUs held from the first arrival to the makespan.
    t, g = list(c["time_s"]) + [makespan], list(c["allocated_gpus"])
    held = sum(g[i] * (t[i + 1] - t[i]) for i in range(len(g))) / (makespan - t[0])
    print(f"{s}: {n} jobs, completion time mean {d['jct_s'].mean():.3f} s, median "
          f"{d['jct_s'].median():.3f} s; queueing mean {d['queue_s'].mean():.3f} s; makespan "
          f"{makespan:.3f} s; GPUs held {held:.1f} of {c['n_gpus'].iloc[0]} on average; "
          f"{int(d['resizes'].sum())} resizes")
left.set_xscale("log")
left.set_xlabel("job completion time (s, arrival to end)")
left.set_ylabel("fraction of jobs")
left.grid(True, alpha=0.3)
left.legend(fontsize=8)
right.axhline(cluster["n_gpus"].iloc[0], color="grey", linewidth=0.8)
right.set_xlabel("time (s)")
right.set_ylabel("GPUs held / jobs queued")
right.grid(True, alpha=0.3)
right.legend(fontsize=8)
save(fig, args.output)
