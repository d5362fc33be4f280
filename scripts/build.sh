#!/usr/bin/env bash
# Configures and builds adaptsim in ./build (Release). CUDA/NCCL parts are built when nvcc and
# NCCL are found (ADAPTSIM_CUDA=AUTO), skipped otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release "$@"
cmake --build build -j"$(nproc)"
