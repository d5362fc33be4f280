#!/usr/bin/env bash
# Sets up a fresh Debian machine, builds, and runs the whole test suite through CTest; then the
# parts that take untrusted input -- the live transport (bytes off the network) and the file
# readers -- once more under AddressSanitizer + UBSan (build-asan/; docs/reliability.md,
# "Sanitizers": the whole suite is scripts/test-sanitizers.sh asan, 566 tests clean, but its
# build and run take 21 min of an idle 2-core machine on top of this script's 12: past CI's
# half-hour); then every libFuzzer target for 8 s from its seeds and regression inputs
# (build-fuzz/, clang; docs/reliability.md, "Fuzzing").
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh fuzz
./scripts/build.sh
ctest --test-dir build --output-on-failure -j"$(nproc)" --timeout 600
./scripts/test-sanitizers.sh asan --only tcp_test io_test
./scripts/test-sanitizers.sh tsan --only tcp_test thread_pool_test
./scripts/fuzz.sh --smoke
