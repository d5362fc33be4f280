#!/bin/sh
# Usage: validation_table_pool.sh PLOTS_DIR WORK_DIR
# plots/validation_table.py --pool-live: two runs of the same rows (folder run-a, matched by run
# name, hosts, model, system); the live step time becomes the mean of both runs and the error is
# taken against it. Row 1: sim 110, live 100 and 120 -> 110, error +0.0%, spread 18.2%. Row 2:
# sim 50, live 40 and 60 -> 50, +0.0%. Without pooling: +10.0% and +25.0%.
set -e
plots=$1
work=$2
rm -rf "$work"
mkdir -p "$work/new/run-a" "$work/old/run-a"
header=servers,model,system,n_gpus,sim_step_ms,live_step_ms,sim_step_std_ms,live_step_std_ms,sim_throughput_per_gpu,live_throughput_per_gpu,sim_seeds,sim_seed_std_ms,rel_error
printf '%s\n4,resnet50,star,4,110,100,1,1,1,1,4,2,0.1\n8,mobilenetv2,ring,8,50,40,1,1,1,1,4,2,0.25\n' \
  "$header" > "$work/new/run-a/x.compare.csv"
printf '%s\n8,mobilenetv2,ring,8,99,60,1,1,1,1,1,0,0.65\n4,resnet50,star,4,99,120,1,1,1,1,1,0,-0.175\n' \
  "$header" > "$work/old/run-a/x.compare.csv"
/usr/bin/python3 "$plots/validation_table.py" "$work/new/run-a/x.compare.csv" > "$work/single.txt"
grep -q '| run-a | 4 | resnet50 | star | 110.0 | 100.0 | 1.0 | +10.0% |' "$work/single.txt"
grep -q 'median |error| 17.5%; max |error| 25.0%' "$work/single.txt"
/usr/bin/python3 "$plots/validation_table.py" "$work/new/run-a/x.compare.csv" \
  --pool-live "$work/old/run-a/x.compare.csv" > "$work/pooled.txt"
grep -q '| run-a | 4 | resnet50 | star | 110.0 | 110.0 | 2 | 18.2% | +0.0% |' "$work/pooled.txt"
grep -q '| run-a | 8 | mobilenetv2 | ring | 50.0 | 50.0 | 2 | 40.0% | +0.0% |' "$work/pooled.txt"
grep -q 'median |error| 0.0%; max |error| 0.0%' "$work/pooled.txt"
echo "validation_table.py pools live runs: ok"
