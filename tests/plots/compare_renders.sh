#!/bin/sh
# Usage: compare_renders.sh PLOTS_DIR WORK_DIR
# plots/compare.py on a small synthetic <name>.compare.csv (the columns simctl compare writes,
# sim/run/runner.cpp's compare_scenario: sweep columns, then model, system, n_gpus, the sim and
# live step times, their deviations and throughputs, rel_error) renders a non-empty PNG next to
# the CSV by default, and where -o says.
set -e
plots=$1
work=$2
rm -rf "$work"
mkdir -p "$work"
csv=$work/synthetic.compare.csv
cat >"$csv" <<'CSV'
servers,model,system,n_gpus,sim_step_ms,live_step_ms,sim_step_std_ms,live_step_std_ms,sim_throughput_per_gpu,live_throughput_per_gpu,rel_error
4,resnet50,star,4,310.5,300.2,2.1,4.0,103.06,106.59,0.03431
4,resnet50,horovod,4,280.0,295.0,1.5,3.2,114.29,108.47,-0.05085
8,mobilenetv2,ring,8,95.2,90.1,0.8,1.9,336.13,355.16,0.05660
8,mobilenetv2,horovod,8,101.0,99.0,0.9,2.2,316.83,323.23,0.02020
CSV
/usr/bin/python3 "$plots/compare.py" "$csv"
test -s "$work/synthetic.compare.png"
/usr/bin/python3 "$plots/compare.py" "$csv" -o "$work/elsewhere.png"
test -s "$work/elsewhere.png"
