#pragma once
// Times the CPU reference kernels (reference_kernels.h): the live kernel cost on machines without
// a GPU, and the baseline the GPU numbers are compared with.
//
// Method, per kernel and size, as nccl-tests times collectives: `warmup_iters` untimed calls, then
// `iters` calls back to back between two std::chrono::steady_clock reads; time per call = elapsed /
// iters. Inputs are pseudo-random floats in [-1, 1) (fixed seed), allocated once at the largest
// size and reused, so page faults are not timed. With `threads` > 1 every thread does the same on
// its own arrays, the threads meet at a barrier before the warm-up and before the timed calls of
// each (kernel, size), and the row keeps the slowest thread's time: the cost when a machine's
// ranks run a monitor's kernels at the same step, as a job's do.

#include <cstddef>

#include "hw/cuda/kernel_cost.h"

namespace adaptsim::hw {

// Times every (kernel, size) of `options` and fits the cost line of each kernel.
// report.device = "cpu"; launch_overhead_ns and launch_latency_ns are 0 (a function call).
KernelTimingReport time_cpu_kernels(const KernelTimingOptions& options);

}  // namespace adaptsim::hw
