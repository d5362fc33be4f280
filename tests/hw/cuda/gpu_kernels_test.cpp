// Each CUDA kernel against its CPU reference on pseudo-random data (hash_fill.h, uniform in
// [-1, 1)). Tolerances, from the precision contract in reference_kernels.h:
//   - float sums: bit-exact (same IEEE additions in the same order; nvcc does not flush denormals
//     without --use_fast_math);
//   - double-accumulated norms: relative 1e-10, the worst case n 2^-53 for n ~ 1e6 summed in a
//     different order (tree on the GPU, sequential on the CPU);
//   - variance from moments: element-wise bit-exact (the double product of two floats is exact,
//     so fused multiply-add changes nothing); variance from workers: relative 1e-6 (mean^2 of a
//     double mean may round differently with FMA, then to float).
#include <doctest/doctest.h>

#include <cmath>
#include <stdexcept>
#include <vector>

#include "hw/cuda/cuda_device.h"
#include "hw/cuda/cuda_kernels.h"
#include "hw/cuda/gemm_probe.h"
#include "hw/cuda/gpu_kernel_timing.h"
#include "hw/cuda/hash_fill.h"
#include "hw/cuda/memory_bandwidth_probe.h"
#include "hw/cuda/reference_kernels.h"

using namespace adaptsim::hw;

namespace {

constexpr double kNormRelTol = 1e-10;
// Odd, so the vectorised kernels also run their scalar tails.
constexpr std::size_t kN = 1'000'003;

std::vector<float> random_vector(std::size_t n, std::uint64_t seed) {
  std::vector<float> v(n);
  fill_uniform_from_hash(v, seed);
  return v;
}

}  // namespace

TEST_CASE("device info is sane") {
  const CudaDeviceInfo info = cuda_device_info(0);
  CHECK(info.sm_count > 0);
  CHECK(info.sm_clock_kHz > 0);
  CHECK(info.total_memory_bytes > 0);
  CHECK(info.peak_memory_bandwidth_Bps > 1e11);  // > 100 GB/s on any data-centre GPU
}

TEST_CASE("gpu sum of two arrays equals the CPU sum bit for bit") {
  const auto a = random_vector(kN, 1), b = random_vector(kN, 2);
  std::vector<float> cpu(kN), gpu(kN);
  sum_arrays(cpu, a, b);
  gpu_sum_host(gpu, a, b);
  CHECK(gpu == cpu);
}

TEST_CASE("gpu sum of 70 arrays (two launches of at most 64) equals the CPU chain") {
  const std::size_t n = 10'001;
  std::vector<std::vector<float>> data;
  std::vector<std::span<const float>> inputs;
  for (int w = 0; w < 70; ++w)
    data.push_back(random_vector(n, 100 + w));
  for (const auto& d : data)
    inputs.emplace_back(d);
  std::vector<float> cpu(n), gpu(n);
  sum_arrays(cpu, inputs);
  gpu_sum_host(gpu, inputs);
  CHECK(gpu == cpu);
}

TEST_CASE("gpu squared norm matches the CPU within the double-summation bound") {
  const auto x = random_vector(kN, 3);
  CHECK(gpu_squared_l2_norm_host(x) == doctest::Approx(squared_l2_norm(x)).epsilon(kNormRelTol));
  // Closed form on the GPU too: sum of i^2 for i = 1..n is n(n+1)(2n+1)/6, exact in double.
  std::vector<float> seq(100000);
  for (std::size_t i = 0; i < seq.size(); ++i)
    seq[i] = static_cast<float>(i + 1);
  CHECK(gpu_squared_l2_norm_host(seq) == 100000.0 * 100001.0 * 200001.0 / 6);
  CHECK(gpu_squared_l2_norm_host(std::span<const float>()) == 0.0);
}

TEST_CASE("gpu variance from moments matches the CPU element for element") {
  const auto mean = random_vector(kN, 4);
  auto mean_sq = random_vector(kN, 5);
  for (std::size_t i = 0; i < kN; ++i)
    mean_sq[i] = mean[i] * mean[i] + std::fabs(mean_sq[i]);
  std::vector<float> cpu(kN), gpu(kN);
  const double cpu_norm = gradient_variance_from_moments(cpu, mean_sq, mean);
  const double gpu_norm = gpu_gradient_variance_from_moments_host(gpu, mean_sq, mean);
  CHECK(gpu == cpu);
  CHECK(gpu_norm == doctest::Approx(cpu_norm).epsilon(kNormRelTol));
}

TEST_CASE("gpu variance across workers matches the CPU") {
  const std::size_t n = 100'003;
  std::vector<std::vector<float>> grads;
  std::vector<std::span<const float>> spans;
  for (int w = 0; w < 8; ++w)
    grads.push_back(random_vector(n, 200 + w));
  for (const auto& g : grads)
    spans.emplace_back(g);
  std::vector<float> cpu(n), gpu(n);
  const double cpu_norm = gradient_variance(cpu, spans);
  const double gpu_norm = gpu_gradient_variance_host(gpu, spans);
  for (std::size_t i = 0; i < n; ++i)
    CHECK(gpu[i] == doctest::Approx(cpu[i]).epsilon(1e-6));
  CHECK(gpu_norm == doctest::Approx(cpu_norm).epsilon(1e-6));
}

TEST_CASE("device-pointer kernels on unaligned views take the scalar path and agree") {
  // Views starting one float in: not 16-byte aligned, so no float4 loads.
  const auto a = random_vector(kN, 6), b = random_vector(kN, 7);
  DeviceBuffer<float> da(kN), db(kN), dout(kN);
  da.copy_from_host(a);
  db.copy_from_host(b);
  const std::size_t n = kN - 1;
  CudaStream stream;
  gpu_sum(dout.span().subspan(1, n), da.span().subspan(1, n), db.span().subspan(1, n),
          stream.get());
  ReductionWorkspace workspace;
  const double norm = gpu_squared_l2_norm(da.span().subspan(1, n), workspace, stream.get());
  std::vector<float> gpu(kN);
  dout.copy_to_host(gpu);
  std::vector<float> cpu(n);
  sum_arrays(cpu, std::span(a).subspan(1), std::span(b).subspan(1));
  CHECK(std::vector<float>(gpu.begin() + 1, gpu.end()) == cpu);
  CHECK(norm == doctest::Approx(squared_l2_norm(std::span(a).subspan(1))).epsilon(kNormRelTol));
}

TEST_CASE("size mismatches are rejected before any launch") {
  std::vector<float> a(3), b(4), out(3);
  CHECK_THROWS_AS(gpu_sum_host(out, a, b), std::invalid_argument);
}

TEST_CASE("emulated compute lasts about the requested time") {
  // At least the request minus 5% (the peak-clock conversion; SMs may boost above the reported
  // rate on some parts), at most 3x (a throttled clock, launch latency).
  const ComputeEmulationTiming t = measure_compute_emulation(0.05, 3, 0);
  MESSAGE("requested 50 ms, measured " << t.measured_s * 1e3 << " ms");
  CHECK(t.measured_s >= 0.05 * 0.95);
  CHECK(t.measured_s < 0.05 * 3);
}

TEST_CASE("kernel timing fills every row") {
  KernelTimingOptions options;
  options.sizes_elements = {100'000, 1'000'000, 10'000'000};
  options.iters = 5;
  const KernelTimingReport report = time_gpu_kernels(options);
  CHECK(report.rows.size() == 9);
  CHECK(report.launch_overhead_ns > 0);
  CHECK(report.launch_latency_ns >= report.launch_overhead_ns * 0.5);
  for (const auto& r : report.rows) {
    MESSAGE(kernel_kind_name(r.kernel)
            << " n=" << r.n_elements << " " << r.time_ns << " ns, " << r.bandwidth_GBps << " GB/s");
    CHECK(r.time_ns > 0);
  }
}

TEST_CASE("memory bandwidth and GEMM probes return positive rates") {
  MemoryBandwidthOptions mem;
  mem.sizes_bytes = {1 << 20, 1 << 26};
  mem.iters = 5;
  for (const auto& r : probe_memory_bandwidth(mem)) {
    MESSAGE("copy " << r.size_bytes << " B: " << r.bandwidth_GBps << " GB/s");
    CHECK(r.bandwidth_GBps > 0);
  }
  for (GemmPrecision p :
       {GemmPrecision::kF32, GemmPrecision::kTF32, GemmPrecision::kF16, GemmPrecision::kBF16}) {
    GemmProbeOptions gemm;
    gemm.sizes = {512, 2048};
    gemm.precision = p;
    gemm.iters = 5;
    for (const auto& r : probe_gemm(gemm)) {
      MESSAGE(gemm_precision_name(p) << " " << r.m << "^3: " << r.tflops << " TFLOP/s");
      CHECK(r.tflops > 0);
    }
  }
}
