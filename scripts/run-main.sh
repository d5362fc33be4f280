#!/usr/bin/env bash
# Sets up, builds, runs the main scenario and renders its figure.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
./scripts/build.sh
./build/sim/simctl/simctl run scenarios/allreduce.yaml
/usr/bin/python3 plots/allreduce.py out/allreduce/allreduce.csv
