#include "hw/cuda/cpu_kernel_timing.h"

#include <algorithm>
#include <barrier>
#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <thread>
#include <vector>

#include "hw/cuda/hash_fill.h"
#include "hw/cuda/reference_kernels.h"

namespace adaptsim::hw {

namespace {

// One thread's arrays: the largest size of every input, filled once (pages touched before timing).
struct Arrays {
  explicit Arrays(std::size_t n, std::uint64_t seed) : a(n), b(n), out(n) {
    fill_uniform_from_hash(a, seed);
    fill_uniform_from_hash(b, seed + 1);
  }
  std::vector<float> a, b, out;
};

// `iters` calls of `kernel` over the first n elements; nanoseconds per call.
double time_calls(KernelKind kernel, std::size_t n, Arrays& x, int warmup_iters, int iters,
                  std::barrier<>* sync) {
  std::span<const float> sa(x.a.data(), n), sb(x.b.data(), n);
  std::span<float> so(x.out.data(), n);
  // The variance kernel reads (mean_sq, mean); mean_sq >= mean^2 is not needed for timing.
  volatile double sink = 0;  // keeps the norms from being optimised away
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
  if (sync) sync->arrive_and_wait();
  for (int i = 0; i < warmup_iters; ++i)
    call();
  if (sync) sync->arrive_and_wait();
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < iters; ++i)
    call();
  const auto stop = std::chrono::steady_clock::now();
  return std::chrono::duration<double, std::nano>(stop - start).count() / iters;
}

}  // namespace

KernelTimingReport time_cpu_kernels(const KernelTimingOptions& options) {
  if (options.iters < 1 || options.warmup_iters < 0 || options.threads < 1) {
    throw std::invalid_argument(
        "time_cpu_kernels: need iters >= 1, warmup_iters >= 0 and threads >= 1");
  }
  std::size_t max_n = 0;
  for (std::size_t n : options.sizes_elements)
    max_n = std::max(max_n, n);

  KernelTimingReport report;
  report.device = "cpu";
  report.threads = options.threads;
  const auto threads = static_cast<std::size_t>(options.threads);
  std::vector<std::unique_ptr<Arrays>> arrays(threads);
  // Every thread fills its own arrays, so that their pages sit where it first touched them.
  std::vector<std::vector<double>> times(threads);
  auto run = [&](std::size_t t, std::barrier<>* sync) {
    arrays[t] = std::make_unique<Arrays>(max_n, 1 + 2 * t);
    for (KernelKind kernel : options.kernels)
      for (std::size_t n : options.sizes_elements)
        if (n > 0)
          times[t].push_back(
              time_calls(kernel, n, *arrays[t], options.warmup_iters, options.iters, sync));
  };
  if (threads == 1) {
    run(0, nullptr);
  } else {
    std::barrier<> sync(static_cast<std::ptrdiff_t>(threads));
    std::vector<std::thread> pool;
    for (std::size_t t = 0; t < threads; ++t)
      pool.emplace_back(run, t, &sync);
    for (std::thread& th : pool)
      th.join();
  }

  std::size_t i = 0;
  for (KernelKind kernel : options.kernels) {
    for (std::size_t n : options.sizes_elements) {
      if (n == 0) continue;
      KernelTimingRow row;
      row.kernel = kernel;
      row.n_elements = n;
      for (std::size_t t = 0; t < threads; ++t)
        row.time_ns = std::max(row.time_ns, times[t][i]);
      ++i;
      row.ns_per_element = row.time_ns / static_cast<double>(n);
      row.bandwidth_GBps =
          static_cast<double>(kernel_bytes_per_element(kernel) * n) / row.time_ns;  // B/ns = GB/s
      report.rows.push_back(row);
    }
  }
  return report;
}

}  // namespace adaptsim::hw
