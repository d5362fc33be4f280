#!/usr/bin/env python3
"""Measures a deep-learning framework's start-up in fresh processes, phase by phase, for the
elastic scenarios' `workload.elastic.framework_init` (issue 15: "an emulated framework start-up
time, a sourced number ... reported separately"). Needs PyTorch with CUDA (a lent GPU machine's
python3 has it; Debian's does not), so it runs there, not in the tests:

    python3 scripts/measure-framework-init.py [--trials 5] [--model resnet50] [-o FILE.json]

Each trial is a new interpreter (as a joining KungFu worker is a new process). Phases, in the
child, each from the end of the one before (time.perf_counter):
  interpreter  parent's Popen to the child's first statement (Python start-up)
  import       `import torch, torchvision`
  cuda_init    the CUDA context: torch.cuda.init() and a first allocation
  process_group torch.distributed.init_process_group("nccl") for one rank over a file store,
               and a first all_reduce (NCCL's communicator is made lazily, at the first collective)
  model        the model built and moved to the GPU (torchvision, random weights: nothing is read)
  first_step   one forward + backward + SGD step at the given batch (cuDNN/cuBLAS handles, kernel
               loading), synchronised
  second_step  one more step, the steady state the others are compared with
The first trial runs with a cold page cache for the framework's files only if the machine was just
started; later trials are warm. The JSON holds every trial; the summary prints medians.
"""
import argparse, json, os, statistics, subprocess, sys, tempfile, time

CHILD = r'''
import sys, time, json, os
t = [time.perf_counter()]
import torch, torchvision
t.append(time.perf_counter())
torch.cuda.init(); x = torch.zeros(1, device="cuda"); torch.cuda.synchronize()
t.append(time.perf_counter())
import torch.distributed as dist
dist.init_process_group("nccl", init_method="file://" + sys.argv[1], rank=0, world_size=1,
                        device_id=torch.device("cuda:0"))
y = torch.ones(1 << 20, device="cuda"); dist.all_reduce(y); torch.cuda.synchronize()
t.append(time.perf_counter())
model = getattr(torchvision.models, sys.argv[2])().cuda()
torch.cuda.synchronize()
t.append(time.perf_counter())
opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
batch = int(sys.argv[3])
data = torch.randn(batch, 3, 224, 224, device="cuda"); labels = torch.randint(0, 1000, (batch,), device="cuda")
def step():
    opt.zero_grad(); loss = torch.nn.functional.cross_entropy(model(data), labels); loss.backward(); opt.step()
    torch.cuda.synchronize()
step(); t.append(time.perf_counter())
step(); t.append(time.perf_counter())
dist.destroy_process_group()
print(json.dumps({"t0": t[0], "phases": [b - a for a, b in zip(t, t[1:])],
                  "torch": torch.__version__, "gpu": torch.cuda.get_device_name(0)}))
'''
NAMES = ["import", "cuda_init", "process_group", "model", "first_step", "second_step"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--trials", type=int, default=5)
    ap.add_argument("--model", default="resnet50")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("-o", "--output")
    a = ap.parse_args()
    trials = []
    for i in range(a.trials):
        with tempfile.TemporaryDirectory() as d:
            start = time.perf_counter()  # CLOCK_MONOTONIC: comparable across processes here
            r = subprocess.run([sys.executable, "-c", CHILD, os.path.join(d, "store"), a.model,
                                str(a.batch)], capture_output=True, text=True, timeout=600)
            end = time.perf_counter()
        if r.returncode != 0:
            sys.exit(f"measure-framework-init: trial {i} failed: {r.stderr.strip().splitlines()[-1:]}")
        out = json.loads(r.stdout.strip().splitlines()[-1])
        ph = dict(zip(NAMES, out["phases"]))
        ph["interpreter"] = out["t0"] - start
        ph["process_total"] = end - start
        trials.append(ph)
        print(f"trial {i}: " + " ".join(f"{k}={v:.3f}s" for k, v in ph.items()), flush=True)
    med = {k: statistics.median(t[k] for t in trials) for k in trials[0]}
    print("median: " + " ".join(f"{k}={v:.3f}s" for k, v in med.items()))
    doc = {"torch": out["torch"], "gpu": out["gpu"], "model": a.model, "batch": a.batch,
           "python": sys.version.split()[0], "trials": trials, "median": med}
    if a.output:
        tmp = a.output + ".tmp"
        with open(tmp, "w") as f:
            json.dump(doc, f, indent=1)
        os.replace(tmp, a.output)


if __name__ == "__main__":
    main()
