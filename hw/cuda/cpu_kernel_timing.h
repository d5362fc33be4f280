#pragma once
// Times the CPU reference kernels (reference_kernels.h), single-threaded: the live kernel cost on
// machines without a GPU, and the baseline the GPU numbers are compared with.
//
// Method, per kernel and size, as nccl-tests times collectives: `warmup_iters` untimed calls, then
// `iters` calls back to back between two std::chrono::steady_clock reads; time per call = elapsed /
// iters. Inputs are pseudo-random floats in [-1, 1) (fixed seed), allocated once at the largest
// size and reused, so page faults are not timed.

#include <cstddef>

#include "hw/cuda/kernel_cost.h"

namespace adaptsim::hw {

// Times every (kernel, size) of `options` and fits the cost line of each kernel.
// report.device = "cpu"; launch_overhead_ns and launch_latency_ns are 0 (a function call).
KernelTimingReport time_cpu_kernels(const KernelTimingOptions& options);

}  // namespace adaptsim::hw
