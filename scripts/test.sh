#!/usr/bin/env bash
# Sets up a fresh Debian machine, builds, and runs the whole test suite through CTest; then the
# whole suite once more under AddressSanitizer + UBSan (build-asan/; docs/reliability.md,
# "Sanitizers"; the two wall-clock and address-space cases it cannot run are left out there).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
./scripts/build.sh
ctest --test-dir build --output-on-failure -j"$(nproc)" --timeout 600
./scripts/test-sanitizers.sh asan
