#pragma once
// Kernel costs on a GPU for the calibration tool: each gradient kernel of cuda_kernels.h timed over
// a range of sizes, the cost line (launch overhead + ns/element) fitted per kernel, the launch
// overhead of an empty kernel, and the real duration of the emulated-compute kernel.
//
// Method (nccl-tests style, FACTS §1.2): per (kernel, size), `warmup_iters` untimed launches and a
// stream synchronize, then `iters` launches back to back on one stream between two
// std::chrono::steady_clock reads, the second after cudaStreamSynchronize; time per call =
// elapsed / iters. Back-to-back launches overlap each launch's CPU cost with the previous
// kernel, so small sizes measure the launch throughput, as a training step's chain of kernels sees
// it; launch_latency_ns gives the round trip of a single launch + synchronize. The norm kernels are
// timed in their asynchronous form (result left on the device), without the 8-byte read-back.

#include "hw/cuda/kernel_cost.h"

namespace adaptsim::hw {

// Runs on options.device. Needs 3 x max(sizes) x 4 bytes of device memory (1.2 GB at 1e8).
// Throws RuntimeFailure on CUDA errors (including no device).
KernelTimingReport time_gpu_kernels(const KernelTimingOptions& options);

struct ComputeEmulationTiming {
  double requested_s = 0;
  double measured_s = 0;  // host clock around launch + synchronize, mean over the repeats
};

// Runs gpu_emulate_compute(seconds) `repeats` times on `device` and reports the measured duration
// (differs from the request by launch latency, and by peak/actual SM clock when throttled).
ComputeEmulationTiming measure_compute_emulation(double seconds, int repeats = 3, int device = 0);

}  // namespace adaptsim::hw
