#!/usr/bin/env bash
# Builds the libFuzzer targets of fuzz/ in build-fuzz/ (clang, ASan + UBSan) and runs them
# (docs/reliability.md, "Fuzzing"):
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]   each target (default: all) for SECONDS (default 60)
#   scripts/fuzz.sh --smoke [TARGET...]     each target for 8 s (CI's run: about 40 s in all)
#   scripts/fuzz.sh --runs N [TARGET...]    each target for N executions instead of a time
#   scripts/fuzz.sh --merge ...             afterwards, add the inputs that found new coverage to
#                                           the checked-in corpus, fuzz/corpus/TARGET/
#   scripts/fuzz.sh --list                  the targets
#   scripts/fuzz.sh --build-only            configure and build, run nothing (the folder also
#                                           holds the tests: test-sanitizers.sh asan --fuzz-build)
#
# Each run starts from the checked-in seeds (fuzz/corpus/TARGET/) and the inputs of every crash
# found and fixed (fuzz/regressions/TARGET/), which libFuzzer runs first; new inputs go to a
# scratch corpus, build-fuzz/fuzz-work/TARGET/corpus/, kept between runs. An input that takes
# over 10 s is a hang. Prints per target the executions, the seconds and the result; exits 1 on
# any crash, hang, leak, out-of-memory or sanitizer report, naming the reproducer (the input
# that caused it) and the command that replays it. The targets run side by side, one per core
# (ADAPTSIM_FUZZ_JOBS sets how many at a time).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
build=${ADAPTSIM_FUZZ_BUILD_DIR:-build-fuzz}
[[ $build == /* ]] || build=$root/$build

usage() {
  sed -n '2,/^set -euo/p' "$0" | sed '$d;s/^# \{0,1\}//' >&2
  exit 2
}

seconds=60
runs=0
merge=0
list=0
build_only=0
targets=()
while [[ $# -gt 0 ]]; do
  case $1 in
    --smoke) seconds=8 ;;
    --runs)
      [[ $# -ge 2 && $2 =~ ^[0-9]+$ ]] || usage
      runs=$2
      shift
      ;;
    --merge) merge=1 ;;
    --list) list=1 ;;
    --build-only) build_only=1 ;;
    -h | --help) usage ;;
    -*) usage ;;
    *)
      if [[ $1 =~ ^[0-9]+$ && ${#targets[@]} -eq 0 ]]; then seconds=$1; else targets+=("$1"); fi
      ;;
  esac
  shift
done

# Configure once, build every time (a no-op when nothing changed); a lock keeps two runs of this
# script from building at once.
if ! command -v clang++ > /dev/null; then
  echo "fuzz.sh: clang++ not found (libFuzzer comes with clang: apt-get install clang)" >&2
  exit 2
fi
mkdir -p "$build"
(
  flock 9
  # A folder configured before the tests were part of it (ADAPTSIM_BUILD_TESTS=OFF) is
  # configured again.
  if [[ ! -f $build/CMakeCache.txt ]] || grep -q '^ADAPTSIM_BUILD_TESTS:BOOL=OFF' "$build/CMakeCache.txt"; then
    launcher=()
    if command -v ccache > /dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
    # -O1 -g1 as the sanitizer builds (scripts/test-sanitizers.sh): line tables are all a
    # sanitizer's stack trace needs; from nothing on the 2-core machine 236 s against 290 s at
    # RelWithDebInfo's -O2 -g (2026-12-06, one build each).
    cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" \
      -DCMAKE_CXX_COMPILER=clang++ \
      -DCMAKE_C_COMPILER=clang -DADAPTSIM_FUZZ=ON -DADAPTSIM_BUILD_TESTS=ON \
      -DADAPTSIM_BUILD_BENCHMARKS=OFF -DADAPTSIM_CUDA=OFF "${launcher[@]}" > /dev/null
  fi
  cmake --build "$build" -j"$(nproc)" --target fuzz
) 9> "$build/.fuzz-build.lock"

[[ $build_only -eq 0 ]] || exit 0

mapfile -t all < "$build/fuzz/targets.txt"
if [[ $list -eq 1 ]]; then
  printf '%s\n' "${all[@]}"
  exit 0
fi
[[ ${#targets[@]} -gt 0 ]] || targets=("${all[@]}")
for t in "${targets[@]}"; do
  if [[ ! " ${all[*]} " =~ " $t " ]]; then
    echo "fuzz.sh: unknown target '$t' (targets: ${all[*]})" >&2
    exit 2
  fi
done

# A sanitizer report aborts the process, so that libFuzzer saves the input; leaks are checked at
# the end of each input (libFuzzer's -detect_leaks, on by default).
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_stack_use_after_return=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

# One target's run: its log in $work/log.txt, its summary line in $work/result.txt, what to show
# on failure in $work/report.txt. Exits 1 if it found something.
fuzz_one() {
  local t=$1
  local exe=$build/fuzz/fuzz_$t
  local work=$build/fuzz-work/$t
  mkdir -p "$work/corpus" "$work/artifacts"
  rm -f "$work"/artifacts/* "$work/report.txt"
  local corpora=("$work/corpus" "fuzz/corpus/$t")
  [[ -d fuzz/regressions/$t ]] && corpora+=("fuzz/regressions/$t")
  local flags=(-timeout=10 -print_final_stats=1 "-artifact_prefix=$work/artifacts/")
  [[ -f fuzz/$t.dict ]] && flags+=("-dict=fuzz/$t.dict")
  if [[ $runs -gt 0 ]]; then
    flags+=("-runs=$runs")
  else
    flags+=("-max_total_time=$seconds")
  fi
  local start_ns rc=0 elapsed_ms elapsed execs artifact result kind what kept
  start_ns=$(date +%s%N)
  "$exe" "${flags[@]}" "${corpora[@]}" > "$work/log.txt" 2>&1 || rc=$?
  elapsed_ms=$((($(date +%s%N) - start_ns) / 1000000))
  elapsed=$(printf '%d.%d' $((elapsed_ms / 1000)) $((elapsed_ms % 1000 / 100)))
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/log.txt" | tail -1)
  execs=${execs:-?}
  artifact=$(find "$work/artifacts" -type f | head -1)
  if [[ $rc -eq 0 && -z $artifact ]]; then
    result=ok
  else
    # libFuzzer's or the sanitizer's one-line summary ("libFuzzer: timeout", "AddressSanitizer:
    # heap-buffer-overflow ..."), and the message of an exception that escaped, if one did.
    kind=$(sed -n 's/^SUMMARY: //p' "$work/log.txt" | head -1)
    what=$(grep -m1 -A1 '^terminate called after throwing' "$work/log.txt" | sed -n 's/^ *what(): *//p' || true)
    result="FAILED (${kind:-exit code $rc}${what:+: uncaught exception: $what})"
    tail -n 40 "$work/log.txt" > "$work/report.txt"
    if [[ -n $artifact ]]; then
      # Keep the reproducer where the next run's cleanup does not reach.
      mkdir -p "$build/fuzz-findings/$t"
      cp "$artifact" "$build/fuzz-findings/$t/"
      kept=$build/fuzz-findings/$t/$(basename "$artifact")
      echo "fuzz.sh: $t: reproducer $kept; replay: $exe $kept" >> "$work/report.txt"
      result+=" reproducer $kept"
    fi
  fi
  if [[ $merge -eq 1 && $result == ok ]]; then
    "$exe" -merge=1 "fuzz/corpus/$t" "$work/corpus" > "$work/merge.txt" 2>&1
    result+="; merged: $(grep -m1 -oE 'added [0-9]+ new units' "$work/merge.txt" || echo 'see merge.txt')"
  fi
  printf '%-22s %12s execs %8s s  %s\n' "$t" "$execs" "$elapsed" "$result" > "$work/result.txt"
  [[ $result != FAILED* ]]
}

# The targets run side by side, as many at a time as there are cores (each libFuzzer run is one
# thread); their results are printed in the targets' order as each finishes.
jobs_max=${ADAPTSIM_FUZZ_JOBS:-$(nproc)}
if ! [[ $jobs_max =~ ^[1-9][0-9]*$ ]]; then
  echo "fuzz.sh: ADAPTSIM_FUZZ_JOBS='$jobs_max': expected a whole number of at least 1" >&2
  exit 2
fi
if [[ $runs -gt 0 ]]; then each="$runs executions"; else each="$seconds s"; fi
echo "== ${#targets[@]} targets, $each each, $jobs_max at a time (logs: $build/fuzz-work/TARGET/log.txt)"
pids=()
for i in "${!targets[@]}"; do
  while [[ $(jobs -rp | wc -l) -ge $jobs_max ]]; do wait -n || true; done
  fuzz_one "${targets[$i]}" &
  pids[i]=$!
done
failed=0
summary=()
for i in "${!targets[@]}"; do
  t=${targets[$i]}
  wait "${pids[$i]}" || failed=1
  work=$build/fuzz-work/$t
  [[ -s $work/report.txt ]] && cat "$work/report.txt" >&2
  line=$(cat "$work/result.txt" 2> /dev/null || echo "$t: no result (the run was killed)")
  echo "$line"
  summary+=("$line")
done

echo "== summary"
printf '%s\n' "${summary[@]}"
exit $failed
