#pragma once
// The cost model of the gradient kernels as the calibration tool fits it, and the records of the
// measurements behind it. The kernels stream memory (0.5 FLOP per byte for a norm: FACTS §3.4), so
//   time(n) = overhead + n * per_element,
// where per_element is bytes per element over the achieved bandwidth and overhead is the launch
// and fixed cost of one call. Rows come from cpu_kernel_timing.h (always built) or
// gpu_kernel_timing.h (with CUDA); both fill the same KernelTimingReport. This layer measures;
// the calibration tool fits the line (calibrate/profile_builder.h, kernel_cost_entries).

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace adaptsim::hw {

enum class KernelKind {
  kSum,          // out = a + b (one all-reduce reduction step)
  kSquaredNorm,  // sum x^2 in double (the GNS input)
  kVariance,     // var = E[g^2] - E[g]^2 from moments, plus ||var||_2 (KungFu's variance monitor)
};
inline constexpr KernelKind kAllKernelKinds[] = {KernelKind::kSum, KernelKind::kSquaredNorm,
                                                 KernelKind::kVariance};

std::string_view kernel_kind_name(KernelKind kind);  // "sum", "sq_norm", "variance"
std::optional<KernelKind> parse_kernel_kind(std::string_view name);

// fp32 bytes the kernel moves per element: sum reads a, b and writes out (12); sq_norm reads x
// (4); variance reads mean_sq, mean and writes var (12).
std::size_t kernel_bytes_per_element(KernelKind kind);

struct KernelTimingOptions {
  // 1e5..1e8 elements: from cache-resident to far beyond any cache (1e8 fp32 = 400 MB per array;
  // the largest size needs 1.2 GB of host or device memory).
  std::vector<std::size_t> sizes_elements = {100'000, 1'000'000, 10'000'000, 100'000'000};
  std::vector<KernelKind> kernels = {KernelKind::kSum, KernelKind::kSquaredNorm,
                                     KernelKind::kVariance};
  int warmup_iters = 3;  // untimed calls before each size
  int iters = 10;        // timed back-to-back calls per size
  int device = 0;        // CUDA device index; ignored by the CPU timing
  // CPU timing only: this many threads run each (kernel, size) at once, each on its own arrays,
  // started together; a row's time is the slowest thread's. What the kernels cost when every
  // rank of a job on one machine runs them at the same step (they share the memory bandwidth
  // and the last-level cache). 1: the kernel alone.
  int threads = 1;
};

struct KernelTimingRow {
  KernelKind kernel = KernelKind::kSum;
  std::size_t n_elements = 0;
  double time_ns = 0;         // per call, averaged over `iters` back-to-back calls
  double ns_per_element = 0;  // time_ns / n_elements
  double bandwidth_GBps = 0;  // kernel_bytes_per_element * n / time, GB = 1e9 B
};

struct KernelTimingReport {
  std::string device;             // "cpu" or the GPU's name
  double launch_overhead_ns = 0;  // GPU: an empty kernel, launched back to back; CPU: 0
  double launch_latency_ns = 0;   // GPU: an empty kernel launch + synchronize round trip; CPU: 0
  int threads = 1;                // CPU: KernelTimingOptions::threads of the measurement
  std::vector<KernelTimingRow> rows;
};

}  // namespace adaptsim::hw
