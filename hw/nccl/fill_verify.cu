// Fill and verify kernels of the NCCL sweep; see fill_verify.h.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>

#include "hw/nccl/fill_verify.h"

namespace adaptsim::hw::nccl_data {
namespace {

constexpr int kThreads = 256;
constexpr int kMaxBlocks = 8192;

int blocks_for(std::size_t n) {
  const std::size_t b = (n + kThreads - 1) / kThreads;
  return static_cast<int>(std::max<std::size_t>(1, std::min<std::size_t>(b, kMaxBlocks)));
}

__device__ double value(int rank, unsigned long long j, int round, bool min_max_pattern) {
  if (min_max_pattern) return static_cast<double>((j + 2ull * rank + round) % 5ull);
  return static_cast<double>((j + static_cast<unsigned long long>(rank) + round) % 3ull);
}

template <class T>
__device__ T from_double(double v) {
  return static_cast<T>(v);
}
template <>
__device__ __half from_double<__half>(double v) {
  return __float2half_rn(static_cast<float>(v));
}
template <>
__device__ __nv_bfloat16 from_double<__nv_bfloat16>(double v) {
  return __float2bfloat16_rn(static_cast<float>(v));
}

template <class T>
__device__ double to_double(T v) {
  return static_cast<double>(v);
}
template <>
__device__ double to_double<__half>(__half v) {
  return __half2float(v);
}
template <>
__device__ double to_double<__nv_bfloat16>(__nv_bfloat16 v) {
  return __bfloat162float(v);
}

template <class T>
__global__ void fill_kernel(T* buf, std::size_t n, int rank, int round, bool min_max_pattern) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    buf[i] = from_double<T>(value(rank, i, round, min_max_pattern));
  }
}

__device__ double expected(std::size_t i, const VerifySpec& s) {
  const bool min_max = s.op != coll::ReduceOp::kSum;
  switch (s.expect) {
    case Expect::kReduced: {
      const unsigned long long j = s.index_offset + i;
      double acc = value(0, j, s.round, min_max);
      for (int q = 1; q < s.n_ranks; ++q) {
        const double v = value(q, j, s.round, min_max);
        if (s.op == coll::ReduceOp::kSum) acc += v;
        if (s.op == coll::ReduceOp::kMin) acc = fmin(acc, v);
        if (s.op == coll::ReduceOp::kMax) acc = fmax(acc, v);
      }
      return acc;
    }
    case Expect::kGathered:
      return value(static_cast<int>(i / s.piece_count), i % s.piece_count, s.round, false);
    case Expect::kFromRank:
      return value(s.source_rank, i, s.round, false);
  }
  return -1;
}

template <class T>
__global__ void count_wrong_kernel(const T* buf, std::size_t n, VerifySpec spec,
                                   unsigned long long* wrong) {
  unsigned long long local = 0;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    // `!(a == b)`, not `a != b`: a NaN poison value is wrong either way, stated explicitly.
    if (!(to_double(buf[i]) == expected(i, spec))) ++local;
  }
  // One atomic per warp, not per element: a fully wrong 1 GiB buffer stays fast to count.
  for (int offset = 16; offset > 0; offset >>= 1) {
    local += __shfl_down_sync(0xffffffffu, local, offset);
  }
  if ((threadIdx.x & 31) == 0 && local > 0) atomicAdd(wrong, local);
}

template <class T>
cudaError_t fill_typed(void* buf, std::size_t n, coll::ReduceOp op, int rank, int round,
                       cudaStream_t stream) {
  fill_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(static_cast<T*>(buf), n, rank, round,
                                                         op != coll::ReduceOp::kSum);
  return cudaGetLastError();
}

template <class T>
cudaError_t count_wrong_typed(const void* buf, std::size_t n, const VerifySpec& spec,
                              unsigned long long* wrong, cudaStream_t stream) {
  count_wrong_kernel<T>
      <<<blocks_for(n), kThreads, 0, stream>>>(static_cast<const T*>(buf), n, spec, wrong);
  return cudaGetLastError();
}

}  // namespace

cudaError_t fill(void* buf, std::size_t count, coll::DType dtype, coll::ReduceOp op, int rank,
                 int round, cudaStream_t stream) {
  if (count == 0) return cudaSuccess;
  switch (dtype) {
    case coll::DType::kF32:
      return fill_typed<float>(buf, count, op, rank, round, stream);
    case coll::DType::kF64:
      return fill_typed<double>(buf, count, op, rank, round, stream);
    case coll::DType::kF16:
      return fill_typed<__half>(buf, count, op, rank, round, stream);
    case coll::DType::kBF16:
      return fill_typed<__nv_bfloat16>(buf, count, op, rank, round, stream);
    case coll::DType::kI32:
      return fill_typed<int>(buf, count, op, rank, round, stream);
    case coll::DType::kI64:
      return fill_typed<long long>(buf, count, op, rank, round, stream);
    case coll::DType::kU8:
      return fill_typed<unsigned char>(buf, count, op, rank, round, stream);
  }
  return cudaErrorInvalidValue;
}

cudaError_t count_wrong(const void* buf, std::size_t count, coll::DType dtype,
                        const VerifySpec& spec, unsigned long long* d_wrong, cudaStream_t stream) {
  if (count == 0) return cudaSuccess;
  switch (dtype) {
    case coll::DType::kF32:
      return count_wrong_typed<float>(buf, count, spec, d_wrong, stream);
    case coll::DType::kF64:
      return count_wrong_typed<double>(buf, count, spec, d_wrong, stream);
    case coll::DType::kF16:
      return count_wrong_typed<__half>(buf, count, spec, d_wrong, stream);
    case coll::DType::kBF16:
      return count_wrong_typed<__nv_bfloat16>(buf, count, spec, d_wrong, stream);
    case coll::DType::kI32:
      return count_wrong_typed<int>(buf, count, spec, d_wrong, stream);
    case coll::DType::kI64:
      return count_wrong_typed<long long>(buf, count, spec, d_wrong, stream);
    case coll::DType::kU8:
      return count_wrong_typed<unsigned char>(buf, count, spec, d_wrong, stream);
  }
  return cudaErrorInvalidValue;
}

}  // namespace adaptsim::hw::nccl_data
