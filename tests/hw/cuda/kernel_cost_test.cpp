#include "hw/cuda/kernel_cost.h"

#include <doctest/doctest.h>

#include <stdexcept>
#include <vector>

#include "hw/cuda/cpu_kernel_timing.h"

using namespace adaptsim::hw;

TEST_CASE("kernel names round-trip and bytes per element follow the memory traffic") {
  for (KernelKind k : kAllKernelKinds)
    CHECK(parse_kernel_kind(kernel_kind_name(k)) == k);
  CHECK_FALSE(parse_kernel_kind("gemm").has_value());
  CHECK(kernel_bytes_per_element(KernelKind::kSum) == 12);         // read a, b; write out
  CHECK(kernel_bytes_per_element(KernelKind::kSquaredNorm) == 4);  // read x
  CHECK(kernel_bytes_per_element(KernelKind::kVariance) == 12);    // read 2; write var
}

TEST_CASE("CPU timing measures every kernel at every size") {
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
}

TEST_CASE("CPU timing on several threads at once keeps one row per kernel and size") {
  KernelTimingOptions options;
  options.sizes_elements = {1000, 100'000};
  options.warmup_iters = 1;
  options.iters = 3;
  options.threads = 3;
  const KernelTimingReport report = time_cpu_kernels(options);
  CHECK(report.threads == 3);
  REQUIRE(report.rows.size() == 6);
  for (const auto& r : report.rows) {
    CHECK(r.time_ns > 0);
    CHECK(r.ns_per_element == doctest::Approx(r.time_ns / static_cast<double>(r.n_elements)));
  }
  options.threads = 0;
  CHECK_THROWS_WITH_AS(time_cpu_kernels(options),
                       "time_cpu_kernels: need iters >= 1, warmup_iters >= 0 and threads >= 1",
                       std::invalid_argument);
}
