#!/usr/bin/env bash
# The checks on a machine with an NVIDIA GPU, from the bundle scripts/gpu-bundle.sh packed
# (binaries built elsewhere). Run from the repository root as root, with the bundle in .devrun/:
#
#   bash .devrun/gpu-check.sh [gpu] [auth] [fig8]        (default: gpu)
#
#   gpu   the GPU tests (the gpu label of ctest, run directly), adaptsim-nccl over every
#         collective and `calibrate --gpus 1`
#   auth  scripts/bench-auth.sh on the machine's cores: adaptsim-tcp with and without frame
#         authentication (the bundle's base binary), docs/reliability.md "Authentication"
#   fig8  `simctl compare scenarios/fig8-local.yaml` with that machine's loopback profile and
#         `live.compute=sleep`, docs/figures.md "Figure 8" (16 cores)
#   fig8v like fig8, the baseline and the variance monitor's five intervals only, simulated with
#         the profile the loopback step just measured on the same machine (when it ran first)
#   timeline  one Figure 8 point of each model (no monitor; the variance every step), simulated
#         and live, 8 steps, with --timeline: where the live variance step's time goes
#   loopback  `calibrate --backend tcp --procs 4` on the machine's loopback, every strategy, 8 B to
#         LOOPBACK_MAX (default 128MiB: beyond the last-level cache, as a model's gradients are),
#         the CPU kernels to 3.2e7 elements (ResNet-50's 2.56e7), on one thread and on 4 at once
#   hvdmpi  Open MPI's own all-reduce on a testbed of namespaces (scripts/testbed-mpi.sh, fixed
#         decision, MPI_HOSTS [2 4 8 16] hosts to MPI_MAXBYTES [128MiB], in MPI_SECONDS [300]),
#         then Horovod over the real Open MPI there, simulated and live
#         (scenarios/horovod-mpi-testbed.yaml): issue 17 with a core per rank
#   spread  scripts/testbed-transfer-spread.py: two transfers at once on a 4-host testbed, the
#         spread of their times (30 repetitions, 64 KiB-16 MiB)
#   fuzz  the bundle's fuzz_scenario (BUNDLE_FUZZ=1 scripts/gpu-bundle.sh carries it from build-fuzz/)
#         from the checked-in seeds, libFuzzer's fork mode on all cores but two, to FUZZ_RUNS
#         executions (default 1,000,000)
#
# Everything lands in $OUT (default /tmp/gpu-check): run.log, nccl/*.csv, cal/gpu-1.{csv,yaml}
# (the profile to commit under traces/calibration/), auth.txt, fig8/, timeline.tar.gz, lb/, fuzz/. Each step has its own time
# limit, cut to what is left of DEADLINE seconds (default 3600) from the start, and reports its
# exit code; the script's code is the number of failed steps.
R="$(pwd)"
O="${OUT:-/tmp/gpu-check}"
mkdir -p "$O"
exec > >(tee "$O/run.log") 2>&1
t0=$(date +%s)
step() { echo "### +$(( $(date +%s) - t0 ))s $*"; }
failed=0
deadline=${DEADLINE:-3600}
check() {  # check SECONDS COMMAND...: runs it, 77 (skipped) counts as a failure here
  local left=$(( deadline - ($(date +%s) - t0) ))
  local limit=$(( $1 < left ? $1 : left ))
  if [ "$limit" -le 5 ]; then echo "skipped: past the deadline"; failed=$((failed + 1)); return; fi
  timeout "$limit" "${@:2}"
  local rc=$?
  echo "rc=$rc"
  [ "$rc" -eq 0 ] || failed=$((failed + 1))
}
step start
nvidia-smi
head -2 /etc/os-release
nccl=$(find /usr /opt -name 'libnccl.so.2*' 2>/dev/null | head -1)
cuda_libs=$(find /usr/local/cuda* -name 'libcublas.so.13*' 2>/dev/null | head -1)
echo "NCCL: $nccl  cuBLAS: $cuda_libs"
# The bundle's libstdc++ only where the machine's is older than GCC 12's (GLIBCXX_3.4.30).
if grep -q GLIBCXX_3.4.30 /usr/lib/x86_64-linux-gnu/libstdc++.so.6 2>/dev/null; then
  rm -f .devrun/lib/libstdc++.so.6 .devrun/lib/libgcc_s.so.1
fi
export LD_LIBRARY_PATH="$R/.devrun/lib:$(dirname "$nccl"):$(dirname "$cuda_libs")"
# Tests and tools name their paths as configured on the build machine (.devrun/paths).
. .devrun/paths
if [ ! -e "$built_root" ]; then mkdir -p "$(dirname "$built_root")"; ln -s "$R" "$built_root"; fi
if [ ! -e "$built_build" ]; then mkdir -p "$(dirname "$built_build")"; ln -s "$R/.devrun/build" "$built_build"; fi
# Open MPI at its own paths, adding files only: existing files and directories are left as they are.
# (GNU tar 1.35 refuses --no-overwrite-dir beside --skip-old-files: then without it; the bundle's
# directories are 755, as /usr's are.)
extract() { tar -C .devrun/root -cf - . | tar -C / -xf - --skip-old-files "$@"; }
{ extract --no-overwrite-dir 2> /dev/null || extract; } && ldconfig
mpiexec --version | head -1
echo "kernel $(uname -r); $(ip -V 2>&1); congestion controls: $(cat /proc/sys/net/ipv4/tcp_available_congestion_control)"
steps=("$@")
# The 16-core machine's loopback profile (authenticated frames, to 128 MiB, concurrent kernels).
profile16=traces/calibration/loopback-tcp-4procs-16cores-128MiB.yaml
[ ${#steps[@]} -gt 0 ] || steps=(gpu)
for s in "${steps[@]}"; do
  case $s in
    gpu)
      step hw_cuda_gpu_test;  check 240 build/tests/hw/cuda/hw_cuda_gpu_test
      step live_gpu_test;     check 150 build/tests/hw/live/live_gpu_test
      step "calibrate test";  check 240 build/tests/hw/cuda/hw_gpu_tools_test "--test-case=calibrate --gpus 1*"
      step "mpirun test";     check 120 build/tests/hw/cuda/hw_gpu_tools_test "--test-case=mpirun -np 1*"
      step adaptsim-nccl;     check 150 build/hw/nccl/adaptsim-nccl --collective all -o "$O/nccl"
      step "calibrate --gpus 1"
      check 240 build/calibrate/calibrate --gpus 1 -o "$O/cal" --name gpu-1 ;;
    auth)
      step "bench-auth"
      check 200 bash scripts/bench-auth.sh --rounds "${AUTH_ROUNDS:-5}" --new build/hw/tcp/adaptsim-tcp \
        --base .devrun/base/adaptsim-tcp > "$O/auth.txt"
      cat "$O/auth.txt" ;;
    fig8)
      step "fig8 compare (16 cores)"
      check 420 build/sim/simctl/simctl compare scenarios/fig8-local.yaml \
        --calibration "$profile16" \
        --set live.compute=sleep -o "$O/fig8" ;;
    fig8v)
      prof=$profile16
      [ -f "$O/lb/loopback-tcp-4procs-16cores-128MiB.yaml" ] && prof="$O/lb/loopback-tcp-4procs-16cores-128MiB.yaml"
      step "fig8 compare, baseline and variance, profile $prof"
      check 300 build/sim/simctl/simctl compare scenarios/fig8-local.yaml --calibration "$prof" \
        --set live.compute=sleep -o "$O/fig8v" --set "sweep.workload.monitors=[[{name: throughput}], \
[{name: throughput}, {name: gradient-variance, interval: 1}], [{name: throughput}, {name: gradient-variance, interval: 2}], \
[{name: throughput}, {name: gradient-variance, interval: 4}], [{name: throughput}, {name: gradient-variance, interval: 8}], \
[{name: throughput}, {name: gradient-variance, interval: 16}]]" ;;
    timeline)
      tl=(--calibration "$profile16" --set live.compute=sleep
          --set "sweep.workload.monitors=[[{name: throughput}], [{name: throughput}, {name: gradient-variance, interval: 1}]]"
          --set workload.steps=8 --no-progress)
      step "timeline, simulated"
      check 120 build/sim/simctl/simctl run scenarios/fig8-local.yaml "${tl[@]}" \
        --timeline "$O/timeline/sim" -o "$O/timeline/sim-out"
      step "timeline, live"
      timecmd=(); [ -x /usr/bin/time ] && timecmd=(/usr/bin/time -v)
      check 200 "${timecmd[@]}" build/sim/simctl/simctl run --live scenarios/fig8-local.yaml "${tl[@]}" \
        --timeline "$O/timeline/live" -o "$O/timeline/live-out"
      tar czf "$O/timeline.tar.gz" -C "$O" timeline && rm -rf "$O/timeline" ;;  # one file: the device tool returns few
    loopback)
      step "calibrate --backend tcp --procs 4, 8B..${LOOPBACK_MAX:-128MiB}"
      check 300 build/calibrate/calibrate --backend tcp --procs 4 --strategy all --minbytes 8B \
        --maxbytes "${LOOPBACK_MAX:-128MiB}" --stepfactor 4 --iters 20 --warmup-iters 3 \
        --kernel-max-elements 32000000 -o "$O/lb" --name loopback-tcp-4procs-16cores-128MiB ;;
    hvdmpi)
      # Issue 17 item 1 where a rank has a core of its own: Horovod over the real Open MPI on a
      # testbed of namespaces (root, iproute2 and tc), simulated and live; the pure MPI_Allreduce
      # baseline at the same caps (scripts/testbed-mpi.sh, fixed decision only).
      command -v ip > /dev/null && command -v tc > /dev/null || echo "hvdmpi: no ip or tc here"
      # The baseline first (item 2's acceptance: 2-16 hosts), Open MPI on CUBIC as the control.
      step "testbed-mpi, fixed decision, ${MPI_HOSTS:-2 4 8 16} hosts, to ${MPI_MAXBYTES:-128MiB}"
      check "${MPI_SECONDS:-300}" env ADAPTSIM_BUILD="$R/.devrun/build" MPI_MODES=fixed \
        MPI_TCP_CONTROL=CLASSIC_RING MPI_FORCED_MAXBYTES=64MiB MPI_MAXBYTES="${MPI_MAXBYTES:-128MiB}" \
        bash scripts/testbed-mpi.sh "$O/mpi" 1Gbps "${MPI_HOSTS:-2 4 8 16}"
      tar czf "$O/mpi.tar.gz" -C "$O" mpi && rm -rf "$O/mpi"  # one file: the device tool returns few
      step "horovod-mpi-testbed compare (16 cores)"
      check 300 build/sim/simctl/simctl compare scenarios/horovod-mpi-testbed.yaml -o "$O/hvdmpi" ;;
    mpidiag)
      # Where mpirun puts the ranks on this machine's testbed (2 hosts, tiny sizes), with its
      # mapping shown: as configured, with a clean environment, and without MCA parameter files.
      env | grep -E '^(OMPI|PMIX|OPAL|ORTE|SLURM|PBS|LSB|HYDRA)' || echo "no MPI or scheduler variables"
      ls -la /etc/openmpi/ 2>&1; grep -hv '^#' /etc/openmpi/*.conf 2>/dev/null | grep . || true
      ldd "$(readlink -f "$(command -v mpirun)")" | grep -E 'open-|pal|rte|pmix'
      hostname; grep -v '^#' /etc/hosts
      ompi_info | grep -E 'Open MPI:|MCA plm|MCA ras|MCA rmaps'
      diag=(env ADAPTSIM_BUILD="$R/.devrun/build" MPI_MODES=fixed MPI_TCP_CONTROL= MPI_MAXBYTES=64KiB
            MPI_MPIRUN_ARGS="--display-map --mca plm_base_verbose 5 --mca ras_base_verbose 5")
      step "mpidiag: as configured"
      check 60 "${diag[@]}" bash scripts/testbed-mpi.sh "$O/diag-a" 1Gbps 2; cat "$O/diag-a/placement_2r.txt"
      step "mpidiag: clean environment"
      check 60 env -i PATH="$PATH" LD_LIBRARY_PATH="$LD_LIBRARY_PATH" HOME=/root "${diag[@]}" \
        bash scripts/testbed-mpi.sh "$O/diag-b" 1Gbps 2; cat "$O/diag-b/placement_2r.txt"
      step "mpidiag: no MCA parameter files"
      check 60 env OMPI_MCA_mca_base_param_files=/dev/null "${diag[@]}" \
        bash scripts/testbed-mpi.sh "$O/diag-c" 1Gbps 2; cat "$O/diag-c/placement_2r.txt" ;;
    spread)
      # How much one transfer's time varies on the testbed: two pairs at once, 30 repetitions per
      # size (scripts/testbed-transfer-spread.py; issue 17 item 2's trigger).
      step "testbed transfer spread"
      check 200 python3 scripts/testbed-transfer-spread.py "$O/spread.csv" --build "$R/.devrun/build" \
        --sizes 65536,131072,262144,524288,1048576,2097152,4194304,16777216 --reps 30 ;;
    fuzz)
      step "fuzz_scenario, ${FUZZ_RUNS:-1000000} executions, fork mode"
      mkdir -p "$O/fuzz/artifacts" /tmp/fuzz-corpus && cp fuzz/corpus/scenario/* /tmp/fuzz-corpus/
      jobs=$(( $(nproc) > 3 ? $(nproc) - 2 : 1 ))
      ASAN_OPTIONS=abort_on_error=1:detect_stack_use_after_return=1 \
      UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
        check 300 .devrun/fuzz_scenario -fork="$jobs" -runs="${FUZZ_RUNS:-1000000}" -timeout=10 \
          -print_final_stats=1 -dict=fuzz/scenario.dict -artifact_prefix="$O/fuzz/artifacts/" \
          /tmp/fuzz-corpus > "$O/fuzz/log.txt" 2>&1
      grep -E '^#|INFO: (fuzzed|exiting)|SUMMARY|crash' "$O/fuzz/log.txt" | tail -5
      ls "$O/fuzz/artifacts" ;;
    *) echo "gpu-check.sh: unknown step '$s' (gpu, auth, fig8, fig8v, timeline, loopback, hvdmpi, mpidiag, spread, fuzz)"; failed=$((failed + 1)) ;;
  esac
done
step "done: $failed failed step(s)"
exit "$failed"
