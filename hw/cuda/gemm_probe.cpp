#include "hw/cuda/gemm_probe.h"

#include <cublas_v2.h>

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <string>

#include "hw/cuda/cuda_check.h"
#include "hw/cuda/cuda_device.h"
#include "hw/cuda/kernel_launch.h"
#include "sim/core/error.h"

namespace adaptsim::hw {
namespace {

void check_cublas(cublasStatus_t status, const char* call) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  throw RuntimeFailure(std::string(call) + " failed: " + cublasGetStatusString(status) + " (" +
                       cublasGetStatusName(status) + ")");
}

// Owns a cuBLAS handle bound to one stream.
class CublasHandle {
 public:
  explicit CublasHandle(cudaStream_t stream) {
    check_cublas(cublasCreate(&handle_), "cublasCreate");
    check_cublas(cublasSetStream(handle_, stream), "cublasSetStream");
  }
  ~CublasHandle() { cublasDestroy(handle_); }
  CublasHandle(const CublasHandle&) = delete;
  CublasHandle& operator=(const CublasHandle&) = delete;
  cublasHandle_t get() const { return handle_; }

 private:
  cublasHandle_t handle_ = nullptr;
};

struct GemmTypes {
  cudaDataType_t data;  // A, B and C
  cublasComputeType_t compute;
  std::size_t element_bytes;
  int fill_kind;  // launch::fill_uniform kind: 0 fp32, 1 fp16, 2 bf16
};

GemmTypes gemm_types(GemmPrecision p) {
  switch (p) {
    case GemmPrecision::kF32:
      return {CUDA_R_32F, CUBLAS_COMPUTE_32F, 4, 0};
    case GemmPrecision::kTF32:
      return {CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, 4, 0};
    case GemmPrecision::kF16:
      return {CUDA_R_16F, CUBLAS_COMPUTE_32F, 2, 1};
    case GemmPrecision::kBF16:
      return {CUDA_R_16BF, CUBLAS_COMPUTE_32F, 2, 2};
  }
  throw std::invalid_argument("unknown GEMM precision");
}

}  // namespace

std::string_view gemm_precision_name(GemmPrecision p) {
  switch (p) {
    case GemmPrecision::kF32:
      return "fp32";
    case GemmPrecision::kTF32:
      return "tf32";
    case GemmPrecision::kF16:
      return "fp16";
    case GemmPrecision::kBF16:
      return "bf16";
  }
  return "?";
}

std::optional<GemmPrecision> parse_gemm_precision(std::string_view name) {
  for (GemmPrecision p :
       {GemmPrecision::kF32, GemmPrecision::kTF32, GemmPrecision::kF16, GemmPrecision::kBF16}) {
    if (gemm_precision_name(p) == name) return p;
  }
  return std::nullopt;
}

std::vector<GemmProbeRow> probe_gemm(const GemmProbeOptions& options) {
  if (options.iters < 1 || options.warmup_iters < 0) {
    throw std::invalid_argument("probe_gemm: need iters >= 1 and warmup_iters >= 0");
  }
  int max_dim = 0;
  for (int s : options.sizes) {
    if (s <= 0) throw std::invalid_argument("probe_gemm: sizes must be > 0");
    max_dim = std::max(max_dim, s);
  }
  CudaDeviceGuard guard(options.device);
  const GemmTypes types = gemm_types(options.precision);
  const std::size_t max_elements = static_cast<std::size_t>(max_dim) * max_dim;
  DeviceAllocation a(max_elements * types.element_bytes), b(max_elements * types.element_bytes),
      c(max_elements * types.element_bytes);
  CudaStream stream;
  check_cuda(launch::fill_uniform(a.data(), max_elements, types.fill_kind, 11, stream.get()),
             "fill_uniform kernel", __FILE__, __LINE__);
  check_cuda(launch::fill_uniform(b.data(), max_elements, types.fill_kind, 12, stream.get()),
             "fill_uniform kernel", __FILE__, __LINE__);
  CublasHandle handle(stream.get());
  const float alpha = 1.0f;  // compute type 32F: scalars are float
  const float beta = 0.0f;

  std::vector<GemmProbeRow> rows;
  for (int s : options.sizes) {
    auto gemm = [&] {
      check_cublas(cublasGemmEx(handle.get(), CUBLAS_OP_N, CUBLAS_OP_N, s, s, s, &alpha, a.data(),
                                types.data, s, b.data(), types.data, s, &beta, c.data(), types.data,
                                s, types.compute, CUBLAS_GEMM_DEFAULT),
                   "cublasGemmEx");
    };
    for (int i = 0; i < options.warmup_iters; ++i)
      gemm();
    stream.synchronize();
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < options.iters; ++i)
      gemm();
    stream.synchronize();
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() /
        options.iters;
    GemmProbeRow row;
    row.m = row.n = row.k = s;
    row.precision = options.precision;
    row.time_us = seconds * 1e6;
    row.tflops = 2.0 * s * static_cast<double>(s) * s / seconds * 1e-12;
    rows.push_back(row);
  }
  return rows;
}

}  // namespace adaptsim::hw
