#pragma once
// The kernels' launchers: the only code nvcc compiles in hw/cuda (kernel_launch.cu). Raw device
// pointers, asynchronous on `stream`; each returns the launch status (cudaGetLastError) so that the
// caller (cuda_kernels.cpp) can throw with the kernel's name. The public, checked API is
// cuda_kernels.h; this header stays C++17 because nvcc compiles .cu files as C++17
// (CMAKE_CUDA_STANDARD in cmake/Dependencies.cmake).

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace adaptsim::hw::launch {

inline constexpr int kThreadsPerBlock = 256;
// Pass-1 blocks of every reduction are at most this many, independent of the GPU, so the
// summation tree (and thus the result's last bits) depends only on n. Sizes the partials buffer.
inline constexpr int kReductionBlocks = 1024;
// Inputs of a many-array kernel travel by value in the kernel's parameters (64 pointers = 512 B,
// well under the 4 KiB parameter limit); longer lists are processed in chunks by the caller.
inline constexpr int kMaxPointerInputs = 64;

struct PointerList {
  const float* ptrs[kMaxPointerInputs];
  int count;
};

// out[i] = a[i] + b[i].
cudaError_t sum2(float* out, const float* a, const float* b, std::size_t n, cudaStream_t stream);
// A chain of float additions in list order: out[i] = ((inputs[0][i] + inputs[1][i]) + ...), or,
// with accumulate, out[i] = ((out[i] + inputs[0][i]) + ...), which continues a longer chain.
cudaError_t sum_list(float* out, const PointerList& inputs, bool accumulate, std::size_t n,
                     cudaStream_t stream);
// *result = sum x[i]^2 in double. partials: kReductionBlocks doubles of scratch.
cudaError_t squared_norm(const float* x, std::size_t n, double* partials, double* result,
                         cudaStream_t stream);
// var[i] = float(double(mean_sq[i]) - double(mean[i])^2); *norm_sq = sum var[i]^2 in double.
cudaError_t variance_from_moments(float* var, const float* mean_sq, const float* mean,
                                  std::size_t n, double* partials, double* norm_sq,
                                  cudaStream_t stream);
// var[i] = population variance over the listed gradients, in double; *norm_sq as above.
cudaError_t variance_from_workers(float* var, const PointerList& grads, std::size_t n,
                                  double* partials, double* norm_sq, cudaStream_t stream);
// Every thread spins until clock64() has advanced by `cycles` SM cycles.
cudaError_t spin(long long cycles, int blocks, int threads_per_block, cudaStream_t stream);
// dst[i] = src[i] (float4 loads/stores when both are 16-byte aligned).
cudaError_t copy(float* dst, const float* src, std::size_t n, cudaStream_t stream);
// A kernel that does nothing: measures launch overhead.
cudaError_t empty(cudaStream_t stream);
// x[i] = uniform in [-1, 1) from a hash of (seed, i): the same values as
// fill_uniform_from_hash (hash_fill.h). kind: 0 float32, 1 float16, 2 bfloat16 (x is then an
// array of 16-bit values).
cudaError_t fill_uniform(void* x, std::size_t n, int kind, std::uint64_t seed, cudaStream_t stream);

}  // namespace adaptsim::hw::launch
