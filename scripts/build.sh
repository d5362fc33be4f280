#!/usr/bin/env bash
# Configures and builds adaptsim in ./build (Release). CUDA/NCCL parts are built when nvcc and
# NCCL are found (ADAPTSIM_CUDA=AUTO), skipped otherwise. The libraries and tools compile as
# unity builds (CMake joins each target's sources into files of 8): from nothing on the 2-core
# machine 488 s against 668 s one file at a time (2026-12-06, ccache off), since each batch
# parses the standard and the project's headers once; the tests stay one file each
# (tests/CMakeLists.txt). Arguments go to CMake: -DCMAKE_UNITY_BUILD=OFF builds file by file.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DCMAKE_UNITY_BUILD=ON "$@"
cmake --build build -j"$(nproc)"
