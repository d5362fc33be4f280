#!/usr/bin/env bash
# Builds adaptsim with sanitizers and runs its tests through CTest (docs/reliability.md,
# "Sanitizers"):
#
#   scripts/test-sanitizers.sh asan [ctest args...]          ASan + UBSan (build-asan): every test
#   scripts/test-sanitizers.sh tsan [--all] [ctest args...]  TSan (build-tsan): the tests labelled
#                                                            `threaded`; --all: every test
#   scripts/test-sanitizers.sh asan|tsan --only TARGET...    builds only these test executables
#                                                            (and what they need) and runs them
#                                                            directly: CI's short run
#   scripts/test-sanitizers.sh asan --fuzz-build [...]       the same in build-fuzz/ instead of
#                                                            build-asan/: clang, ASan + UBSan with
#                                                            libFuzzer's coverage hooks, as
#                                                            scripts/fuzz.sh builds it, so CI
#                                                            compiles the libraries once for both
#
# Every target is instrumented (-DADAPTSIM_SANITIZE, CMakeLists.txt), so the tools the tests run
# (simctl, calibrate, adaptsim-tcp, adaptsim-live, ...) are checked too. The sanitizers write
# their reports to files in build-*/sanitizer-reports/, not to stderr, and the run fails when any
# is there afterwards: a report from a child process whose failure a test expected (exit code 2
# on bad input, a killed worker) is not lost, nor one from output a test swallows.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

usage() {
  echo "usage: $0 asan|tsan [--all] [ctest args...] | asan|tsan --only TARGET..." \
    "| asan --fuzz-build [--only TARGET...]" >&2
  exit 2
}
[[ $# -ge 1 ]] || usage
mode=$1
shift
all=0
if [[ ${1:-} == --all ]]; then
  all=1
  shift
fi
fuzz_build=0
if [[ ${1:-} == --fuzz-build ]]; then
  [[ $mode == asan ]] || usage
  fuzz_build=1
  shift
fi
only=()
if [[ ${1:-} == --only ]]; then
  shift
  only=("$@")
  [[ ${#only[@]} -gt 0 ]] || usage
  set --
fi

case $mode in
  asan) sanitize=address,undefined ;;
  tsan) sanitize=thread ;;
  *) usage ;;
esac
build=$root/build-$mode
if [[ $fuzz_build -eq 1 ]]; then
  build=${ADAPTSIM_FUZZ_BUILD_DIR:-build-fuzz}
  [[ $build == /* ]] || build=$root/$build
fi
reports=$build/sanitizer-reports

# -O1 -g1: readable stacks (functions, files and lines) at a fraction of -O0's run time, and the
# line tables only, not full debug information (10-30 % less compile time: -g cost 12.7 s of CPU
# on sim/runtime/trainer.cpp where -g1 took 8.8). CUDA off: nvcc's code and the CUDA runtime are
# not instrumented, and the GPU tests skip without a device anyway.
if [[ $fuzz_build -eq 1 ]]; then
  # fuzz.sh configures the folder (its flags, the tests included) and builds the fuzz targets.
  ./scripts/fuzz.sh --build-only
else
  launcher=()
  if command -v ccache > /dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
  # Unity builds for the libraries and tools, as scripts/build.sh (the tests compile file by file).
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" \
    -DCMAKE_UNITY_BUILD=ON -DADAPTSIM_SANITIZE=$sanitize -DADAPTSIM_CUDA=OFF "${launcher[@]}"
fi
if [[ ${#only[@]} -gt 0 ]]; then
  cmake --build "$build" -j"$(nproc)" --target "${only[@]}"
else
  cmake --build "$build" -j"$(nproc)"
fi

rm -rf "$reports"
mkdir -p "$reports"
supp=$root/scripts/sanitizers
# Common to all: reports to files (above), with the executable's name in the file's name.
common="log_path=$reports/report:log_exe_name=1:print_summary=1"
export ASAN_OPTIONS="$common:detect_leaks=1:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1:check_initialization_order=1:strict_init_order=1"
export LSAN_OPTIONS="print_suppressions=0"
if [[ -f $supp/lsan-$mode.supp ]]; then LSAN_OPTIONS+=":suppressions=$supp/lsan-$mode.supp"; fi
export UBSAN_OPTIONS="$common:print_stacktrace=1:halt_on_error=1"
export TSAN_OPTIONS="$common:halt_on_error=1:second_deadlock_stack=1"
if [[ -f $supp/tsan.supp ]]; then TSAN_OPTIONS+=":suppressions=$supp/tsan.supp"; fi
# Ranks that mpirun starts (Open MPI's mca_base_env_list sets their environment) unwind every
# malloc fully: Open MPI is built without frame pointers, so the fast unwinder stops inside it and
# its leaks would not reach the libraries lsan-asan.supp names. Only there: it is slow.
export OMPI_MCA_mca_base_env_list="ASAN_OPTIONS=$ASAN_OPTIONS:fast_unwind_on_malloc=0"

# Tests that bound the processes they run (a hang must not pass) give them this many times longer
# (tests/support/time_scale.h): sanitized processes are slower, mpirun's ranks the most.
if [[ $mode == asan ]]; then export ADAPTSIM_TEST_TIME_SCALE=4; else export ADAPTSIM_TEST_TIME_SCALE=10; fi

# Left out under both: see docs/reliability.md, "Sanitizers".
#   memory_limit  runs under `ulimit -v`; the sanitizers' shadow memory alone is terabytes of
#                 address space, so the limit, not the program, fails it
#   timing        asserts on wall-clock times that sanitizer slowdown (2x ASan, 5-15x TSan) breaks
exclude='^(memory_limit|timing)$'
select=()
if [[ $mode == tsan && $all == 0 ]]; then select=(-L '^threaded$'); fi

status=0
if [[ ${#only[@]} -gt 0 ]]; then
  # Each executable's cases directly (doctest), less the same labels' cases: those are listed
  # by name in the executable's *_case_labels.cmake (tests/CMakeLists.txt, adaptsim_label_cases).
  for t in "${only[@]}"; do
    exe=$(find "$build/tests" -type f -name "$t" -perm -u+x | head -1)
    [[ -n $exe ]] || { echo "$mode: no test executable $t in $build/tests" >&2; exit 2; }
    skip=$(find "$build/tests" -name "${t}_case_labels.cmake" -exec \
      sed -n 's/^set_tests_properties(\[==\[\(.*\)\]==\] PROPERTIES LABELS ".*\(timing\|memory_limit\).*$/\1/p' {} + |
      sed 's/[],[]/?/g' | paste -sd, -)
    echo "== $exe${skip:+ (left out: $skip)}"
    (cd "$(dirname "$exe")" && "$exe" ${skip:+"--test-case-exclude=$skip"}) || status=$?
  done
else
  ctest --test-dir "$build" --output-on-failure -j"$(nproc)" --timeout 900 "${select[@]}" \
    -LE "$exclude" "$@" || status=$?
fi

shopt -s nullglob
found=("$reports"/*)
if [[ ${#found[@]} -gt 0 ]]; then
  for f in "${found[@]}"; do
    echo "==== $f"
    cat "$f"
  done
  echo "$mode: ${#found[@]} sanitizer report(s) in $reports" >&2
  exit 1
fi
if [[ $status -ne 0 ]]; then exit "$status"; fi
echo "$mode: no sanitizer reports"
