#!/usr/bin/env bash
# Sets up a fresh Debian machine, builds, and runs the whole test suite through CTest; then the
# parts that take untrusted input -- the live transport (bytes off the network) and the file
# readers -- once more under AddressSanitizer + UBSan, in the fuzz build (build-fuzz/, clang:
# its libraries are compiled once for the fuzz targets and these tests); the live transport's
# event loop and tag threads, the sweep's thread pool and hw/live's in-process training (a rank's
# loop and compute threads) under ThreadSanitizer (build-tsan/);
# then every libFuzzer target for 8 s from its seeds and regression inputs. docs/reliability.md,
# "Sanitizers": the whole suite under ASan is scripts/test-sanitizers.sh asan (566 tests clean)
# and the `threaded` label under TSan scripts/test-sanitizers.sh tsan (193 tests clean), but
# their builds and runs take 21 and 10 min of the 2-core machine on top of this script's: past
# CI's half-hour. Each part's wall time is printed at its end ("== test.sh: ...").
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
phase() {
  local t0=$SECONDS
  "$@"
  echo "== test.sh: $* took $((SECONDS - t0)) s (total $((SECONDS - start)) s)"
}
phase ./scripts/setup.sh fuzz
phase ./scripts/build.sh
phase ctest --test-dir build --output-on-failure -j"$(nproc)" --timeout 600
phase ./scripts/test-sanitizers.sh asan --fuzz-build --only tcp_test io_test
phase ./scripts/test-sanitizers.sh tsan --only tcp_test thread_pool_test live_training_test
phase ./scripts/fuzz.sh --smoke
