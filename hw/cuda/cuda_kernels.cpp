#include "hw/cuda/cuda_kernels.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "hw/cuda/cuda_check.h"
#include "hw/cuda/kernel_launch.h"

namespace adaptsim::hw {
namespace {

void require_same_size(std::size_t expected, std::size_t got, const char* what) {
  if (expected != got) {
    throw std::invalid_argument(std::string(what) + ": size " + std::to_string(got) +
                                " differs from the output size " + std::to_string(expected));
  }
}

launch::PointerList pointer_list(std::span<const DeviceSpan<const float>> inputs) {
  launch::PointerList list{};
  list.count = static_cast<int>(inputs.size());
  for (std::size_t i = 0; i < inputs.size(); ++i)
    list.ptrs[i] = inputs[i].data();
  return list;
}

// Host arrays copied to fresh device buffers, with the DeviceSpans the device API takes.
struct DeviceCopies {
  explicit DeviceCopies(std::span<const std::span<const float>> host) {
    buffers.reserve(host.size());
    for (const auto& h : host) {
      buffers.emplace_back(h.size());
      buffers.back().copy_from_host(h);
      spans.push_back(buffers.back().span());
    }
  }
  std::vector<DeviceBuffer<float>> buffers;
  std::vector<DeviceSpan<const float>> spans;
};

}  // namespace

std::size_t ReductionWorkspace::partials_count() {
  return launch::kReductionBlocks;
}

ReductionWorkspace::ReductionWorkspace() : memory_(partials_count() + 1) {}

double ReductionWorkspace::read_result(cudaStream_t stream) const {
  double result = 0;
  ADAPTSIM_CUDA_CHECK(
      cudaMemcpyAsync(&result, device_result(), sizeof result, cudaMemcpyDeviceToHost, stream));
  ADAPTSIM_CUDA_CHECK(cudaStreamSynchronize(stream));
  return result;
}

void gpu_sum(DeviceSpan<float> out, DeviceSpan<const float> a, DeviceSpan<const float> b,
             cudaStream_t stream) {
  require_same_size(out.size(), a.size(), "gpu_sum input a");
  require_same_size(out.size(), b.size(), "gpu_sum input b");
  check_cuda(launch::sum2(out.data(), a.data(), b.data(), out.size(), stream), "sum2 kernel",
             __FILE__, __LINE__);
}

void gpu_sum(DeviceSpan<float> out, std::span<const DeviceSpan<const float>> inputs,
             cudaStream_t stream) {
  if (inputs.empty()) throw std::invalid_argument("gpu_sum: no input arrays");
  for (const auto& in : inputs)
    require_same_size(out.size(), in.size(), "gpu_sum input");
  // Chunks of up to 64 inputs; every chunk after the first continues the float chain in out.
  for (std::size_t first = 0; first < inputs.size(); first += launch::kMaxPointerInputs) {
    const std::size_t count =
        std::min<std::size_t>(launch::kMaxPointerInputs, inputs.size() - first);
    check_cuda(launch::sum_list(out.data(), pointer_list(inputs.subspan(first, count)), first > 0,
                                out.size(), stream),
               "sum_list kernel", __FILE__, __LINE__);
  }
}

void gpu_squared_l2_norm_async(DeviceSpan<const float> x, ReductionWorkspace& workspace,
                               cudaStream_t stream) {
  check_cuda(launch::squared_norm(x.data(), x.size(), workspace.device_partials(),
                                  workspace.device_result(), stream),
             "squared_norm kernels", __FILE__, __LINE__);
}

double gpu_squared_l2_norm(DeviceSpan<const float> x, ReductionWorkspace& workspace,
                           cudaStream_t stream) {
  gpu_squared_l2_norm_async(x, workspace, stream);
  return workspace.read_result(stream);
}

void gpu_gradient_variance_from_moments_async(DeviceSpan<float> var_out,
                                              DeviceSpan<const float> mean_sq,
                                              DeviceSpan<const float> mean,
                                              ReductionWorkspace& workspace, cudaStream_t stream) {
  require_same_size(var_out.size(), mean_sq.size(), "gpu_gradient_variance_from_moments mean_sq");
  require_same_size(var_out.size(), mean.size(), "gpu_gradient_variance_from_moments mean");
  check_cuda(
      launch::variance_from_moments(var_out.data(), mean_sq.data(), mean.data(), var_out.size(),
                                    workspace.device_partials(), workspace.device_result(), stream),
      "variance_from_moments kernels", __FILE__, __LINE__);
}

double gpu_gradient_variance_from_moments(DeviceSpan<float> var_out,
                                          DeviceSpan<const float> mean_sq,
                                          DeviceSpan<const float> mean,
                                          ReductionWorkspace& workspace, cudaStream_t stream) {
  gpu_gradient_variance_from_moments_async(var_out, mean_sq, mean, workspace, stream);
  return std::sqrt(workspace.read_result(stream));
}

double gpu_gradient_variance(DeviceSpan<float> var_out,
                             std::span<const DeviceSpan<const float>> worker_grads,
                             ReductionWorkspace& workspace, cudaStream_t stream) {
  if (worker_grads.empty() ||
      worker_grads.size() > static_cast<std::size_t>(launch::kMaxPointerInputs)) {
    throw std::invalid_argument("gpu_gradient_variance: needs 1.." +
                                std::to_string(launch::kMaxPointerInputs) +
                                " worker gradients, got " + std::to_string(worker_grads.size()));
  }
  for (const auto& g : worker_grads) {
    require_same_size(var_out.size(), g.size(), "gpu_gradient_variance worker gradient");
  }
  check_cuda(
      launch::variance_from_workers(var_out.data(), pointer_list(worker_grads), var_out.size(),
                                    workspace.device_partials(), workspace.device_result(), stream),
      "variance_from_workers kernels", __FILE__, __LINE__);
  return std::sqrt(workspace.read_result(stream));
}

void gpu_copy(DeviceSpan<float> dst, DeviceSpan<const float> src, cudaStream_t stream) {
  require_same_size(dst.size(), src.size(), "gpu_copy source");
  check_cuda(launch::copy(dst.data(), src.data(), dst.size(), stream), "copy kernel", __FILE__,
             __LINE__);
}

void gpu_empty_kernel(cudaStream_t stream) {
  check_cuda(launch::empty(stream), "empty kernel", __FILE__, __LINE__);
}

void gpu_emulate_compute(double seconds, const GpuComputeOptions& options, cudaStream_t stream) {
  if (!(seconds >= 0) || !std::isfinite(seconds)) {
    throw std::invalid_argument("gpu_emulate_compute: duration must be finite and >= 0 s, got " +
                                std::to_string(seconds));
  }
  int device = 0;
  ADAPTSIM_CUDA_CHECK(cudaGetDevice(&device));
  int clock_kHz = 0;
  ADAPTSIM_CUDA_CHECK(cudaDeviceGetAttribute(&clock_kHz, cudaDevAttrClockRate, device));
  int blocks = options.blocks;
  if (blocks <= 0) {
    ADAPTSIM_CUDA_CHECK(cudaDeviceGetAttribute(&blocks, cudaDevAttrMultiProcessorCount, device));
  }
  // kHz x 1e3 = cycles per second. llround: at 2 GHz one cycle is 0.5 ns.
  const long long cycles = std::llround(seconds * clock_kHz * 1e3);
  check_cuda(launch::spin(cycles, blocks, options.threads_per_block, stream), "spin kernel",
             __FILE__, __LINE__);
}

void gpu_sum_host(std::span<float> out, std::span<const float> a, std::span<const float> b) {
  require_same_size(out.size(), a.size(), "gpu_sum_host input a");
  require_same_size(out.size(), b.size(), "gpu_sum_host input b");
  const std::span<const float> host[] = {a, b};
  DeviceCopies in(host);
  DeviceBuffer<float> d_out(out.size());
  gpu_sum(d_out.span(), in.spans[0], in.spans[1]);
  d_out.copy_to_host(out);  // cudaMemcpy waits for the kernel on the default stream
}

void gpu_sum_host(std::span<float> out, std::span<const std::span<const float>> inputs) {
  DeviceCopies in(inputs);
  DeviceBuffer<float> d_out(out.size());
  gpu_sum(d_out.span(), in.spans);
  d_out.copy_to_host(out);
}

double gpu_squared_l2_norm_host(std::span<const float> x) {
  DeviceBuffer<float> d_x(x.size());
  d_x.copy_from_host(x);
  ReductionWorkspace workspace;
  return gpu_squared_l2_norm(d_x.span(), workspace);
}

double gpu_gradient_variance_from_moments_host(std::span<float> var_out,
                                               std::span<const float> mean_sq,
                                               std::span<const float> mean) {
  require_same_size(var_out.size(), mean_sq.size(), "gpu_gradient_variance_from_moments_host");
  require_same_size(var_out.size(), mean.size(), "gpu_gradient_variance_from_moments_host");
  const std::span<const float> host[] = {mean_sq, mean};
  DeviceCopies in(host);
  DeviceBuffer<float> d_var(var_out.size());
  ReductionWorkspace workspace;
  const double norm =
      gpu_gradient_variance_from_moments(d_var.span(), in.spans[0], in.spans[1], workspace);
  d_var.copy_to_host(var_out);
  return norm;
}

double gpu_gradient_variance_host(std::span<float> var_out,
                                  std::span<const std::span<const float>> worker_grads) {
  DeviceCopies in(worker_grads);
  DeviceBuffer<float> d_var(var_out.size());
  ReductionWorkspace workspace;
  const double norm = gpu_gradient_variance(d_var.span(), in.spans, workspace);
  d_var.copy_to_host(var_out);
  return norm;
}

}  // namespace adaptsim::hw
