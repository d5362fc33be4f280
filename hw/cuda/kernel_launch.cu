// Kernels and their launchers; see kernel_launch.h. Memory-bound kernels use grid-stride loops
// over a grid capped at kMaxElementwiseBlocks: enough resident threads to saturate HBM on every
// supported GPU (A100: 108 SMs x 2048 threads = 221k; the cap gives 2M), few enough blocks that
// the per-block start-up cost stays negligible.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "hw/cuda/kernel_launch.h"

namespace adaptsim::hw::launch {
namespace {

constexpr int kMaxElementwiseBlocks = 8192;
constexpr int kFinalizeThreads = 1024;  // pass 2 of a reduction: one thread per pass-1 block
static_assert(kReductionBlocks <= kFinalizeThreads, "pass 2 reads one partial per thread");

int elementwise_blocks(std::size_t work_items) {
  const std::size_t blocks = (work_items + kThreadsPerBlock - 1) / kThreadsPerBlock;
  return static_cast<int>(
      std::max<std::size_t>(1, std::min<std::size_t>(blocks, kMaxElementwiseBlocks)));
}

int reduction_blocks(std::size_t n) {
  // ~4 elements per thread at least, so small inputs use few blocks (and pass 2 has little to do).
  const std::size_t per_block = static_cast<std::size_t>(kThreadsPerBlock) * 4;
  const std::size_t blocks = (n + per_block - 1) / per_block;
  return static_cast<int>(
      std::max<std::size_t>(1, std::min<std::size_t>(blocks, kReductionBlocks)));
}

bool aligned16(const void* p) {
  return reinterpret_cast<std::uintptr_t>(p) % 16 == 0;
}

// Sum over the block in a fixed order: shuffle tree within each warp, then the warp sums in warp
// order by warp 0. The result is valid in thread 0. Called at most once per kernel (the shared
// array is not re-synchronised for reuse).
__device__ double block_sum(double v) {
  __shared__ double warp_sums[32];
  for (int offset = 16; offset > 0; offset >>= 1)
    v += __shfl_down_sync(0xffffffffu, v, offset);
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  if (lane == 0) warp_sums[warp] = v;
  __syncthreads();
  if (warp == 0) {
    const int warps = (blockDim.x + 31) / 32;
    v = lane < warps ? warp_sums[lane] : 0.0;
    for (int offset = 16; offset > 0; offset >>= 1)
      v += __shfl_down_sync(0xffffffffu, v, offset);
  }
  return v;
}

__global__ void sum2_vec4_kernel(float4* out, const float4* a, const float4* b, std::size_t n4) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n4;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const float4 x = a[i];
    const float4 y = b[i];
    out[i] = make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
  }
}

__global__ void sum2_kernel(float* out, const float* a, const float* b, std::size_t n) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    out[i] = a[i] + b[i];
  }
}

__global__ void sum_list_kernel(float* out, PointerList inputs, bool accumulate, std::size_t n) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    float acc = accumulate ? out[i] : inputs.ptrs[0][i];
    for (int w = accumulate ? 0 : 1; w < inputs.count; ++w)
      acc += inputs.ptrs[w][i];
    out[i] = acc;
  }
}

// Pass 1 of the squared norm: each block writes the double sum of its threads' squares.
__global__ void squared_norm_partials_kernel(const float* x, std::size_t n, bool vec4,
                                             double* partials) {
  const std::size_t tid = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  double acc = 0;
  std::size_t tail_start = 0;
  if (vec4) {
    const std::size_t n4 = n / 4;
    const float4* x4 = reinterpret_cast<const float4*>(x);
    for (std::size_t i = tid; i < n4; i += stride) {
      const float4 v = x4[i];
      acc += static_cast<double>(v.x) * v.x;
      acc += static_cast<double>(v.y) * v.y;
      acc += static_cast<double>(v.z) * v.z;
      acc += static_cast<double>(v.w) * v.w;
    }
    tail_start = n4 * 4;
  }
  for (std::size_t i = tail_start + tid; i < n; i += stride) {
    acc += static_cast<double>(x[i]) * x[i];
  }
  acc = block_sum(acc);
  if (threadIdx.x == 0) partials[blockIdx.x] = acc;
}

// Pass 2 of every reduction: one block adds the pass-1 partials (count <= blockDim.x).
__global__ void finalize_kernel(const double* partials, int count, double* result) {
  double v = threadIdx.x < count ? partials[threadIdx.x] : 0.0;
  v = block_sum(v);
  if (threadIdx.x == 0) *result = v;
}

__global__ void variance_from_moments_kernel(float* var, const float* mean_sq, const float* mean,
                                             std::size_t n, double* partials) {
  double acc = 0;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const double m = mean[i];
    const float v = static_cast<float>(static_cast<double>(mean_sq[i]) - m * m);
    var[i] = v;
    acc += static_cast<double>(v) * v;
  }
  acc = block_sum(acc);
  if (threadIdx.x == 0) partials[blockIdx.x] = acc;
}

__global__ void variance_from_workers_kernel(float* var, PointerList grads, std::size_t n,
                                             double* partials) {
  const double k = grads.count;
  double acc = 0;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    double sum = 0;
    double sum_sq = 0;
    for (int w = 0; w < grads.count; ++w) {
      const double g = grads.ptrs[w][i];
      sum += g;
      sum_sq += g * g;
    }
    const double mean = sum / k;
    const float v = static_cast<float>(sum_sq / k - mean * mean);
    var[i] = v;
    acc += static_cast<double>(v) * v;
  }
  acc = block_sum(acc);
  if (threadIdx.x == 0) partials[blockIdx.x] = acc;
}

__global__ void spin_kernel(long long cycles) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
}

__global__ void copy_vec4_kernel(float4* dst, const float4* src, std::size_t n4) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n4;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    dst[i] = src[i];
  }
}

__global__ void copy_kernel(float* dst, const float* src, std::size_t n) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    dst[i] = src[i];
  }
}

__global__ void empty_kernel() {}

// SplitMix64 finaliser, as adaptsim::mix64 (sim/core/rng.cpp); duplicated because device code
// cannot call the host function.
__device__ std::uint64_t mix64_device(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

__device__ float uniform_from_hash(std::uint64_t seed, std::size_t i) {
  const std::uint64_t h = mix64_device(seed ^ (i * 0x9E3779B97F4A7C15ull));
  return static_cast<float>(static_cast<double>(h >> 40) / static_cast<double>(1ull << 24)) * 2.0f -
         1.0f;
}

__global__ void fill_uniform_kernel(void* x, std::size_t n, int kind, std::uint64_t seed) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const float v = uniform_from_hash(seed, i);
    if (kind == 0) {
      static_cast<float*>(x)[i] = v;
    } else if (kind == 1) {
      static_cast<__half*>(x)[i] = __float2half_rn(v);
    } else {
      static_cast<__nv_bfloat16*>(x)[i] = __float2bfloat16_rn(v);
    }
  }
}

}  // namespace

cudaError_t sum2(float* out, const float* a, const float* b, std::size_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  if (aligned16(out) && aligned16(a) && aligned16(b)) {
    const std::size_t n4 = n / 4;
    if (n4 > 0) {
      sum2_vec4_kernel<<<elementwise_blocks(n4), kThreadsPerBlock, 0, stream>>>(
          reinterpret_cast<float4*>(out), reinterpret_cast<const float4*>(a),
          reinterpret_cast<const float4*>(b), n4);
    }
    const std::size_t done = n4 * 4;
    if (done < n) {
      sum2_kernel<<<1, kThreadsPerBlock, 0, stream>>>(out + done, a + done, b + done, n - done);
    }
  } else {
    sum2_kernel<<<elementwise_blocks(n), kThreadsPerBlock, 0, stream>>>(out, a, b, n);
  }
  return cudaGetLastError();
}

cudaError_t sum_list(float* out, const PointerList& inputs, bool accumulate, std::size_t n,
                     cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  sum_list_kernel<<<elementwise_blocks(n), kThreadsPerBlock, 0, stream>>>(out, inputs, accumulate,
                                                                          n);
  return cudaGetLastError();
}

cudaError_t squared_norm(const float* x, std::size_t n, double* partials, double* result,
                         cudaStream_t stream) {
  const int blocks = reduction_blocks(n);
  squared_norm_partials_kernel<<<blocks, kThreadsPerBlock, 0, stream>>>(x, n, aligned16(x),
                                                                        partials);
  cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) return err;
  finalize_kernel<<<1, kFinalizeThreads, 0, stream>>>(partials, blocks, result);
  return cudaGetLastError();
}

cudaError_t variance_from_moments(float* var, const float* mean_sq, const float* mean,
                                  std::size_t n, double* partials, double* norm_sq,
                                  cudaStream_t stream) {
  const int blocks = reduction_blocks(n);
  variance_from_moments_kernel<<<blocks, kThreadsPerBlock, 0, stream>>>(var, mean_sq, mean, n,
                                                                        partials);
  cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) return err;
  finalize_kernel<<<1, kFinalizeThreads, 0, stream>>>(partials, blocks, norm_sq);
  return cudaGetLastError();
}

cudaError_t variance_from_workers(float* var, const PointerList& grads, std::size_t n,
                                  double* partials, double* norm_sq, cudaStream_t stream) {
  const int blocks = reduction_blocks(n);
  variance_from_workers_kernel<<<blocks, kThreadsPerBlock, 0, stream>>>(var, grads, n, partials);
  cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) return err;
  finalize_kernel<<<1, kFinalizeThreads, 0, stream>>>(partials, blocks, norm_sq);
  return cudaGetLastError();
}

cudaError_t spin(long long cycles, int blocks, int threads_per_block, cudaStream_t stream) {
  spin_kernel<<<blocks, threads_per_block, 0, stream>>>(cycles);
  return cudaGetLastError();
}

cudaError_t copy(float* dst, const float* src, std::size_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  if (aligned16(dst) && aligned16(src)) {
    const std::size_t n4 = n / 4;
    if (n4 > 0) {
      copy_vec4_kernel<<<elementwise_blocks(n4), kThreadsPerBlock, 0, stream>>>(
          reinterpret_cast<float4*>(dst), reinterpret_cast<const float4*>(src), n4);
    }
    const std::size_t done = n4 * 4;
    if (done < n) copy_kernel<<<1, kThreadsPerBlock, 0, stream>>>(dst + done, src + done, n - done);
  } else {
    copy_kernel<<<elementwise_blocks(n), kThreadsPerBlock, 0, stream>>>(dst, src, n);
  }
  return cudaGetLastError();
}

cudaError_t empty(cudaStream_t stream) {
  empty_kernel<<<1, 1, 0, stream>>>();
  return cudaGetLastError();
}

cudaError_t fill_uniform(void* x, std::size_t n, int kind, std::uint64_t seed,
                         cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  fill_uniform_kernel<<<elementwise_blocks(n), kThreadsPerBlock, 0, stream>>>(x, n, kind, seed);
  return cudaGetLastError();
}

}  // namespace adaptsim::hw::launch
