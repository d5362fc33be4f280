#include "hw/cuda/kernel_cost.h"

#include <doctest/doctest.h>

#include <stdexcept>
#include <vector>

#include "hw/cuda/cpu_kernel_timing.h"

using namespace adaptsim::hw;

TEST_CASE("the weighted fit recovers an exact cost line") {
  // time = 5000 ns + 0.25 ns x n, for n = 1e5 .. 1e8.
  std::vector<KernelTimingRow> rows;
  for (std::size_t n : {100'000u, 1'000'000u, 10'000'000u, 100'000'000u}) {
    KernelTimingRow r;
    r.kernel = KernelKind::kSquaredNorm;
    r.n_elements = n;
    r.time_ns = 5000 + 0.25 * static_cast<double>(n);
    rows.push_back(r);
  }
  const KernelCostFit fit = fit_kernel_cost(KernelKind::kSquaredNorm, rows);
  CHECK(fit.overhead_ns == doctest::Approx(5000).epsilon(1e-9));
  CHECK(fit.ns_per_element == doctest::Approx(0.25).epsilon(1e-12));
  CHECK(fit.points == 4);
  CHECK_THROWS_AS(fit_kernel_cost(KernelKind::kSum, rows), std::invalid_argument);
}

TEST_CASE("a single size gives slope time/n and no intercept") {
  const KernelTimingRow row{KernelKind::kSum, 1000, 500.0, 0.5, 24.0};
  const KernelCostFit fit = fit_kernel_cost(KernelKind::kSum, std::span(&row, 1));
  CHECK(fit.overhead_ns == 0);
  CHECK(fit.ns_per_element == doctest::Approx(0.5));
}

TEST_CASE("kernel names round-trip and bytes per element follow the memory traffic") {
  for (KernelKind k : kAllKernelKinds)
    CHECK(parse_kernel_kind(kernel_kind_name(k)) == k);
  CHECK_FALSE(parse_kernel_kind("gemm").has_value());
  CHECK(kernel_bytes_per_element(KernelKind::kSum) == 12);         // read a, b; write out
  CHECK(kernel_bytes_per_element(KernelKind::kSquaredNorm) == 4);  // read x
  CHECK(kernel_bytes_per_element(KernelKind::kVariance) == 12);    // read 2; write var
}

TEST_CASE("CPU timing measures every kernel at every size and fits each kernel") {
  KernelTimingOptions options;
  options.sizes_elements = {1000, 100'000};
  options.warmup_iters = 1;
  options.iters = 3;
  const KernelTimingReport report = time_cpu_kernels(options);
  CHECK(report.device == "cpu");
  REQUIRE(report.rows.size() == 6);
  for (const auto& r : report.rows) {
    CHECK(r.time_ns > 0);
    CHECK(r.ns_per_element == doctest::Approx(r.time_ns / static_cast<double>(r.n_elements)));
    CHECK(r.bandwidth_GBps > 0);
  }
  CHECK(report.fits.size() == 3);
}
