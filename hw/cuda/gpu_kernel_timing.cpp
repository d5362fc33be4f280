#include "hw/cuda/gpu_kernel_timing.h"

#include <algorithm>
#include <chrono>
#include <stdexcept>

#include "hw/cuda/cuda_check.h"
#include "hw/cuda/cuda_device.h"
#include "hw/cuda/cuda_kernels.h"
#include "hw/cuda/kernel_launch.h"

namespace adaptsim::hw {
namespace {

using Clock = std::chrono::steady_clock;

double elapsed_ns(Clock::time_point start, Clock::time_point stop) {
  return std::chrono::duration<double, std::nano>(stop - start).count();
}

// Launches `call` `iters` times back to back and returns the mean time per call in ns.
template <class Call>
double time_back_to_back(Call&& call, int warmup_iters, int iters, cudaStream_t stream) {
  for (int i = 0; i < warmup_iters; ++i)
    call();
  ADAPTSIM_CUDA_CHECK(cudaStreamSynchronize(stream));
  const auto start = Clock::now();
  for (int i = 0; i < iters; ++i)
    call();
  ADAPTSIM_CUDA_CHECK(cudaStreamSynchronize(stream));
  return elapsed_ns(start, Clock::now()) / iters;
}

}  // namespace

KernelTimingReport time_gpu_kernels(const KernelTimingOptions& options) {
  if (options.iters < 1 || options.warmup_iters < 0) {
    throw std::invalid_argument("time_gpu_kernels: need iters >= 1 and warmup_iters >= 0");
  }
  CudaDeviceGuard guard(options.device);
  KernelTimingReport report;
  report.device = cuda_device_info(options.device).name;

  std::size_t max_n = 0;
  for (std::size_t n : options.sizes_elements)
    max_n = std::max(max_n, n);
  DeviceBuffer<float> a(max_n), b(max_n), out(max_n);
  CudaStream stream;
  check_cuda(launch::fill_uniform(a.data(), max_n, 0, 1, stream.get()), "fill_uniform kernel",
             __FILE__, __LINE__);
  check_cuda(launch::fill_uniform(b.data(), max_n, 0, 2, stream.get()), "fill_uniform kernel",
             __FILE__, __LINE__);
  ReductionWorkspace workspace;

  // Launch cost: 1000 empty kernels back to back, and 100 launch + synchronize round trips.
  report.launch_overhead_ns =
      time_back_to_back([&] { gpu_empty_kernel(stream.get()); }, 10, 1000, stream.get());
  {
    const int round_trips = 100;
    const auto start = Clock::now();
    for (int i = 0; i < round_trips; ++i) {
      gpu_empty_kernel(stream.get());
      stream.synchronize();
    }
    report.launch_latency_ns = elapsed_ns(start, Clock::now()) / round_trips;
  }

  for (KernelKind kernel : options.kernels) {
    for (std::size_t n : options.sizes_elements) {
      if (n == 0) continue;
      const DeviceSpan<const float> sa = a.span().subspan(0, n);
      const DeviceSpan<const float> sb = b.span().subspan(0, n);
      const DeviceSpan<float> so = out.span().subspan(0, n);
      auto call = [&] {
        switch (kernel) {
          case KernelKind::kSum:
            gpu_sum(so, sa, sb, stream.get());
            break;
          case KernelKind::kSquaredNorm:
            gpu_squared_l2_norm_async(sa, workspace, stream.get());
            break;
          case KernelKind::kVariance:
            gpu_gradient_variance_from_moments_async(so, sa, sb, workspace, stream.get());
            break;
        }
      };
      KernelTimingRow row;
      row.kernel = kernel;
      row.n_elements = n;
      row.time_ns = time_back_to_back(call, options.warmup_iters, options.iters, stream.get());
      row.ns_per_element = row.time_ns / static_cast<double>(n);
      row.bandwidth_GBps =
          static_cast<double>(kernel_bytes_per_element(kernel) * n) / row.time_ns;  // B/ns = GB/s
      report.rows.push_back(row);
    }
  }
  return report;
}

ComputeEmulationTiming measure_compute_emulation(double seconds, int repeats, int device) {
  if (repeats < 1) throw std::invalid_argument("measure_compute_emulation: repeats must be >= 1");
  CudaDeviceGuard guard(device);
  CudaStream stream;
  gpu_emulate_compute(0, {}, stream.get());  // first launch loads the module: not timed
  stream.synchronize();
  double total_ns = 0;
  for (int i = 0; i < repeats; ++i) {
    const auto start = Clock::now();
    gpu_emulate_compute(seconds, {}, stream.get());
    stream.synchronize();
    total_ns += elapsed_ns(start, Clock::now());
  }
  return ComputeEmulationTiming{seconds, total_ns / repeats * 1e-9};
}

}  // namespace adaptsim::hw
