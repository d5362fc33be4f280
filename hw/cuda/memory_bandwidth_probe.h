#pragma once
// Device memory bandwidth probe: a copy kernel (float4 loads and stores, grid-stride) over a range
// of sizes. Bandwidth counts both directions, 2 x size / time, as STREAM's "copy" does; compare it
// with CudaDeviceInfo::peak_memory_bandwidth_Bps (HBM streaming reaches ~0.75-0.9 of peak for
// >= 10 MB: FACTS §3.4). Below the L2 size (40-50 MB on A100/H100) the copy runs from cache.

#include <cstdint>
#include <vector>

namespace adaptsim::hw {

struct MemoryBandwidthOptions {
  // 1 MiB .. 1 GiB, x4.
  std::vector<std::uint64_t> sizes_bytes = {1ull << 20, 1ull << 22, 1ull << 24,
                                            1ull << 26, 1ull << 28, 1ull << 30};
  int warmup_iters = 3;
  int iters = 20;
  int device = 0;
};

struct MemoryBandwidthRow {
  std::uint64_t size_bytes = 0;  // bytes copied (read once, written once)
  double time_us = 0;            // per copy
  double bandwidth_GBps = 0;     // 2 x size_bytes / time, GB = 1e9 B
};

// Needs 2 x max(sizes) of device memory. Sizes are rounded down to whole floats.
std::vector<MemoryBandwidthRow> probe_memory_bandwidth(const MemoryBandwidthOptions& options);

}  // namespace adaptsim::hw
