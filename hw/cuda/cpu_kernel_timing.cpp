#include "hw/cuda/cpu_kernel_timing.h"

#include <algorithm>
#include <chrono>
#include <span>
#include <stdexcept>
#include <vector>

#include "hw/cuda/hash_fill.h"
#include "hw/cuda/reference_kernels.h"

namespace adaptsim::hw {

KernelTimingReport time_cpu_kernels(const KernelTimingOptions& options) {
  if (options.iters < 1 || options.warmup_iters < 0) {
    throw std::invalid_argument("time_cpu_kernels: need iters >= 1 and warmup_iters >= 0");
  }
  std::size_t max_n = 0;
  for (std::size_t n : options.sizes_elements)
    max_n = std::max(max_n, n);

  KernelTimingReport report;
  report.device = "cpu";
  std::vector<float> a(max_n), b(max_n), out(max_n);
  fill_uniform_from_hash(a, 1);
  fill_uniform_from_hash(b, 2);
  // The variance kernel reads (mean_sq, mean); mean_sq >= mean^2 is not needed for timing.
  volatile double sink = 0;  // keeps the norms from being optimised away

  for (KernelKind kernel : options.kernels) {
    for (std::size_t n : options.sizes_elements) {
      if (n == 0) continue;
      std::span<const float> sa(a.data(), n), sb(b.data(), n);
      std::span<float> so(out.data(), n);
      auto call = [&] {
        switch (kernel) {
          case KernelKind::kSum:
            sum_arrays(so, sa, sb);
            break;
          case KernelKind::kSquaredNorm:
            sink = sink + squared_l2_norm(sa);
            break;
          case KernelKind::kVariance:
            sink = sink + gradient_variance_from_moments(so, sa, sb);
            break;
        }
      };
      for (int i = 0; i < options.warmup_iters; ++i)
        call();
      const auto start = std::chrono::steady_clock::now();
      for (int i = 0; i < options.iters; ++i)
        call();
      const auto stop = std::chrono::steady_clock::now();

      KernelTimingRow row;
      row.kernel = kernel;
      row.n_elements = n;
      row.time_ns = std::chrono::duration<double, std::nano>(stop - start).count() / options.iters;
      row.ns_per_element = row.time_ns / static_cast<double>(n);
      row.bandwidth_GBps =
          static_cast<double>(kernel_bytes_per_element(kernel) * n) / row.time_ns;  // B/ns = GB/s
      report.rows.push_back(row);
    }
  }
  return report;
}

}  // namespace adaptsim::hw
