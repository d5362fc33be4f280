#pragma once
// GEMM throughput probe (cuBLAS): the achievable FLOP rate of the dense layers that dominate a
// training step's compute, so that a calibration profile can turn a model's FLOPs into seconds.
// Square C = A x B (m = n = k), column-major, no transposes, alpha 1, beta 0, inputs
// pseudo-random in [-1, 1). Timed like the other probes: warm-up, then `iters` calls back to back
// between steady_clock reads around a stream synchronize.

#include <optional>
#include <string_view>
#include <vector>

namespace adaptsim::hw {

enum class GemmPrecision {
  kF32,   // fp32 in/out, fp32 math (CUBLAS_COMPUTE_32F: no tensor cores)
  kTF32,  // fp32 in/out, TF32 tensor cores (CUBLAS_COMPUTE_32F_FAST_TF32)
  kF16,   // fp16 in/out, fp32 accumulation
  kBF16,  // bf16 in/out, fp32 accumulation: mixed-precision training's usual choice
};

std::string_view gemm_precision_name(GemmPrecision p);  // "fp32", "tf32", "fp16", "bf16"
std::optional<GemmPrecision> parse_gemm_precision(std::string_view name);

struct GemmProbeOptions {
  std::vector<int> sizes = {1024, 2048, 4096, 8192};  // m = n = k
  GemmPrecision precision = GemmPrecision::kBF16;
  int warmup_iters = 3;
  int iters = 20;
  int device = 0;
};

struct GemmProbeRow {
  int m = 0, n = 0, k = 0;
  GemmPrecision precision = GemmPrecision::kBF16;
  double time_us = 0;  // per GEMM
  double tflops = 0;   // 2 m n k / time, 1 TFLOP/s = 1e12 FLOP/s
};

// Throws RuntimeFailure on CUDA or cuBLAS errors (the call named).
std::vector<GemmProbeRow> probe_gemm(const GemmProbeOptions& options);

}  // namespace adaptsim::hw
