#!/usr/bin/env bash
# Figure 4 (scenarios/fig4-batch-live.yaml) on a machine with more cores than this 2-core one,
# where the 4 live processes do not share cores: is the simulated step right when the CPU is not
# oversubscribed? (docs/figures.md "Figure 4", "On 16 cores".) Two halves:
#
#   scripts/fig4-cores.sh pack            here: simctl, adaptsim-live, adaptsim-learn, the libraries
#                                         they load (not glibc) and Fashion-MNIST into .fig4cores/
#                                         (ignored by git; ~45 MB), for the device tool to carry
#   bash scripts/fig4-cores.sh run        there (from the repository root): the CPU's fashion-mlp
#                                         speed (adaptsim-learn, one process alone, 3 runs per
#                                         batch) into a device profile, then the scenario live and
#                                         simulated on that profile with compute_cores = the
#                                         machine's cores and its loopback calibration
#                                         (CALIBRATION, default the 16-core H100 machine's), and
#                                         scripts/fig4-targets.py; everything into $OUT
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
b="$root/.fig4cores"
case "${1:-}" in
  pack)
    set -e
    rm -rf "$b"
    mkdir -p "$b/bin" "$b/lib" "$b/data"
    bins=(sim/simctl/simctl hw/live/adaptsim-live sim/learn/adaptsim-learn)
    for x in "${bins[@]}"; do cp "$root/build/$x" "$b/bin/"; done
    . "$root/scripts/bundle-libs.sh"
    copy_libs "$b/lib" "${bins[@]/#/$root/build/}"
    cp /usr/share/datasets/fashion-mnist/*.gz "$b/data/"
    du -sh "$b"
    ;;
  run)
    out="${OUT:-/tmp/fig4-cores}"
    mkdir -p "$out"
    exec > >(tee "$out/run.log") 2>&1
    if grep -q GLIBCXX_3.4.30 /usr/lib/x86_64-linux-gnu/libstdc++.so.6 2>/dev/null; then
      rm -f "$b/lib/libstdc++.so.6" "$b/lib/libgcc_s.so.1"
    fi
    export LD_LIBRARY_PATH="$b/lib"
    export ADAPTSIM_LIVE_TOOL="$b/bin/adaptsim-live"
    cores=$(nproc)
    echo "cores: $cores; $(grep -m1 'model name' /proc/cpuinfo)"
    rates=()
    for batch in 16 32 64 128; do
      runs=$(for i in 1 2 3; do
        "$b/bin/adaptsim-learn" --data "$b/data" --steps 400 --batch "$batch" --eval-every 0 2>&1 |
          awk '/train throughput/ {print $3}'; done | sort -n | tr '\n' ' ')
      median=$(echo "$runs" | awk '{print $2}')
      echo "adaptsim-learn batch $batch: $runs(median $median)"
      rates+=("$batch:$median:$runs")
    done
    dev="$out/cpu-core-here.yaml"
    {
      echo "# One core of the machine fig4-cores.sh ran on ($cores cores), fashion-mlp on one thread."
      echo "name: cpu-core-here"
      echo "description: \"one core of a $cores-core machine, Eigen float32 on one thread (sim/learn)\""
      echo "default_precision: fp32"
      echo "memory: {value: 16GiB, source: \"[U] not used by fashion-mlp\"}"
      echo "memory_bandwidth: {value: 10GB/s, source: \"[U] as traces/devices/cpu-core.yaml\"}"
      echo "step_time_cv: {value: 10%, source: \"[U] as traces/devices/cpu-core.yaml\"}"
      echo "throughput:"
      for r in "${rates[@]}"; do
        IFS=: read -r batch median runs <<< "$r"
        echo "  - {model: fashion-mlp, precision: fp32, batch: $batch, rate: $median img/s, source: \"[V] adaptsim-learn --steps 400 --batch $batch, median of 3 runs ($runs) by scripts/fig4-cores.sh\"}"
      done
    } > "$dev"
    cal="${CALIBRATION:-$root/traces/calibration/loopback-tcp-4procs-16cores-128MiB.yaml}"
    sets=(--set "workload.device=$dev" --set "workload.compute_cores=$cores"
          --set "workload.learn.data=$b/data" --calibration "$cal" --no-progress)
    echo "### live"
    time "$b/bin/simctl" run --live "$root/scenarios/fig4-batch-live.yaml" -o "$out/live" "${sets[@]}"
    echo "### simulated"
    "$b/bin/simctl" run "$root/scenarios/fig4-batch-live.yaml" -o "$out/sim" "${sets[@]}"
    # A Python with pandas: Debian's here, the image's own on a lent machine.
    py=python3
    /usr/bin/python3 -c "import pandas" 2>/dev/null && py=/usr/bin/python3
    "$py" "$root/scripts/fig4-targets.py" "$out/live/fig4-batch-live.steps.csv" \
      --sim "$out/sim/fig4-batch-live.steps.csv"
    ;;
  *)
    echo "usage: scripts/fig4-cores.sh pack|run" >&2
    exit 2
    ;;
esac
