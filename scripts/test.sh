#!/usr/bin/env bash
# Sets up a fresh Debian machine, builds, and runs the whole test suite through CTest; then the
# parts that take untrusted input -- the live transport (bytes off the network) and the file
# readers -- once more under AddressSanitizer + UBSan (build-asan/; docs/reliability.md,
# "Sanitizers": the whole suite is scripts/test-sanitizers.sh asan, longer than CI allows).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
./scripts/build.sh
ctest --test-dir build --output-on-failure -j"$(nproc)" --timeout 600
./scripts/test-sanitizers.sh asan --only tcp_test io_test
