#!/usr/bin/env bash
# Sets up, builds, runs the main scenario (Figure 9 with the shipped defaults) and draws it.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
./scripts/build.sh
./build/sim/simctl/simctl run scenarios/fig9.yaml
/usr/bin/python3 plots/fig9.py out/fig9/fig9.csv
