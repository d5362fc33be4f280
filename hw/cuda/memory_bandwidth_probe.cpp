#include "hw/cuda/memory_bandwidth_probe.h"

#include <algorithm>
#include <chrono>
#include <stdexcept>

#include "hw/cuda/cuda_device.h"
#include "hw/cuda/cuda_kernels.h"

namespace adaptsim::hw {

std::vector<MemoryBandwidthRow> probe_memory_bandwidth(const MemoryBandwidthOptions& options) {
  if (options.iters < 1 || options.warmup_iters < 0) {
    throw std::invalid_argument("probe_memory_bandwidth: need iters >= 1 and warmup_iters >= 0");
  }
  std::uint64_t max_bytes = 0;
  for (std::uint64_t s : options.sizes_bytes)
    max_bytes = std::max(max_bytes, s);
  CudaDeviceGuard guard(options.device);
  const std::size_t max_n = max_bytes / sizeof(float);
  DeviceBuffer<float> src(max_n), dst(max_n);
  CudaStream stream;
  gpu_copy(src.span(), dst.span(), stream.get());  // touches both buffers once before timing

  std::vector<MemoryBandwidthRow> rows;
  for (std::uint64_t size : options.sizes_bytes) {
    const std::size_t n = size / sizeof(float);
    if (n == 0) continue;
    auto copy = [&] { gpu_copy(dst.span().subspan(0, n), src.span().subspan(0, n), stream.get()); };
    for (int i = 0; i < options.warmup_iters; ++i)
      copy();
    stream.synchronize();
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < options.iters; ++i)
      copy();
    stream.synchronize();
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() /
        options.iters;
    MemoryBandwidthRow row;
    row.size_bytes = n * sizeof(float);
    row.time_us = seconds * 1e6;
    row.bandwidth_GBps = 2.0 * static_cast<double>(row.size_bytes) / seconds * 1e-9;
    rows.push_back(row);
  }
  return rows;
}

}  // namespace adaptsim::hw
