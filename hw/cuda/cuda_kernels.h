#pragma once
// The gradient kernels on a GPU: the same operations, with the same precision contract, as the CPU
// references in reference_kernels.h (the tests compare the two).
//
// Two flavours of every kernel, told apart by their argument types:
//   - DeviceSpan arguments: data already in device memory of the current device. Asynchronous on
//     `stream` (nullptr = the legacy default stream), except the functions that return a value,
//     which wait for it. This is what timing and live training use.
//   - std::span arguments and a `_host` suffix: data in host memory. The wrapper allocates device
//     buffers on the current device, copies in, runs, copies out and waits. For tests and one-off
//     use; the PCIe copies dwarf the kernel.
// Every CUDA error becomes adaptsim::RuntimeFailure naming the failed call or kernel; size
// mismatches are std::invalid_argument.

#include <cuda_runtime_api.h>

#include <cstddef>
#include <span>

#include "hw/cuda/cuda_device.h"
#include "hw/cuda/device_span.h"

namespace adaptsim::hw {

// Device scratch for the two-pass reductions (norms, variance norms): the pass-1 block partials
// and the final double. Allocated on the current device; a reduction must run on that device.
// One workspace serves one reduction at a time per stream.
class ReductionWorkspace {
 public:
  ReductionWorkspace();

  double* device_partials() const { return memory_.data(); }
  double* device_result() const { return memory_.data() + partials_count(); }
  // Waits for `stream`, then copies the last result to the host.
  double read_result(cudaStream_t stream = nullptr) const;

 private:
  static std::size_t partials_count();
  DeviceBuffer<double> memory_;
};

// ---- Device memory, asynchronous -------------------------------------------------------------

// out = a + b (same sizes; out may alias a or b).
void gpu_sum(DeviceSpan<float> out, DeviceSpan<const float> a, DeviceSpan<const float> b,
             cudaStream_t stream = nullptr);
// out = ((inputs[0] + inputs[1]) + ...) in float and input order: bit-identical to the CPU
// sum_arrays. Any number of inputs >= 1 (chunks of 64 per launch); out may alias inputs[0].
void gpu_sum(DeviceSpan<float> out, std::span<const DeviceSpan<const float>> inputs,
             cudaStream_t stream = nullptr);

// sum x^2 in double, left in workspace.device_result(); two kernels (multi-block partials, then
// one block over at most 1024 partials, in a fixed order: deterministic for a given size).
void gpu_squared_l2_norm_async(DeviceSpan<const float> x, ReductionWorkspace& workspace,
                               cudaStream_t stream = nullptr);
// The same, waiting for the result.
double gpu_squared_l2_norm(DeviceSpan<const float> x, ReductionWorkspace& workspace,
                           cudaStream_t stream = nullptr);

// var = E[g^2] - E[g]^2 from moments (as gradient_variance_from_moments); ||var||_2^2 is left in
// workspace.device_result() (squared: the square root is taken on the host).
void gpu_gradient_variance_from_moments_async(DeviceSpan<float> var_out,
                                              DeviceSpan<const float> mean_sq,
                                              DeviceSpan<const float> mean,
                                              ReductionWorkspace& workspace,
                                              cudaStream_t stream = nullptr);
// The same, waiting; returns ||var||_2.
double gpu_gradient_variance_from_moments(DeviceSpan<float> var_out,
                                          DeviceSpan<const float> mean_sq,
                                          DeviceSpan<const float> mean,
                                          ReductionWorkspace& workspace,
                                          cudaStream_t stream = nullptr);

// Element-wise variance across 1..64 worker gradients (as gradient_variance), waiting; returns
// ||var||_2.
double gpu_gradient_variance(DeviceSpan<float> var_out,
                             std::span<const DeviceSpan<const float>> worker_grads,
                             ReductionWorkspace& workspace, cudaStream_t stream = nullptr);

// dst = src: the memory-bandwidth probe's kernel (reads and writes n floats).
void gpu_copy(DeviceSpan<float> dst, DeviceSpan<const float> src, cudaStream_t stream = nullptr);

// An empty kernel: what a launch costs.
void gpu_empty_kernel(cudaStream_t stream = nullptr);

struct GpuComputeOptions {
  // 0: one block per SM, so every SM is busy, as during a real forward/backward pass (but each
  // SM only lightly, so kernels of other streams, e.g. NCCL's, can still be scheduled on it).
  int blocks = 0;
  int threads_per_block = 32;  // one warp
};

// Emulated compute on the current device: a kernel whose threads spin until clock64() has advanced
// by seconds x the peak SM clock (cudaDevAttrClockRate, kHz). Asynchronous. If the SMs run below
// the peak clock (power or thermal limits, lowered application clocks), the kernel lasts longer
// by peak/actual; gpu_kernel_timing.h's measure_compute_emulation reports the real duration.
void gpu_emulate_compute(double seconds, const GpuComputeOptions& options = {},
                         cudaStream_t stream = nullptr);

// ---- Host memory, synchronous (current device) -----------------------------------------------

void gpu_sum_host(std::span<float> out, std::span<const float> a, std::span<const float> b);
void gpu_sum_host(std::span<float> out, std::span<const std::span<const float>> inputs);
double gpu_squared_l2_norm_host(std::span<const float> x);
double gpu_gradient_variance_from_moments_host(std::span<float> var_out,
                                               std::span<const float> mean_sq,
                                               std::span<const float> mean);
double gpu_gradient_variance_host(std::span<float> var_out,
                                  std::span<const std::span<const float>> worker_grads);

}  // namespace adaptsim::hw
