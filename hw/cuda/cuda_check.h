#pragma once
// CUDA status codes turned into adaptsim::RuntimeFailure, with the failing call named:
//   ADAPTSIM_CUDA_CHECK(cudaMalloc(&p, bytes));
//   -> "cudaMalloc(&p, bytes) failed: out of memory (cudaErrorMemoryAllocation) at
//      hw/cuda/cuda_device.cpp:42"
// Kernel launches report through launch::* return values and are checked by name the same way.

#include <cuda_runtime_api.h>

namespace adaptsim::hw {

// Throws RuntimeFailure unless status == cudaSuccess. `call` names the call (its source text or a
// kernel's name); `file` and `line` locate it.
void check_cuda(cudaError_t status, const char* call, const char* file, int line);

}  // namespace adaptsim::hw

#define ADAPTSIM_CUDA_CHECK(call) ::adaptsim::hw::check_cuda((call), #call, __FILE__, __LINE__)
