#!/usr/bin/env bash
# Sets up a fresh Debian machine, builds, and runs the whole test suite through CTest.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
./scripts/build.sh
ctest --test-dir build --output-on-failure -j"$(nproc)" --timeout 600
