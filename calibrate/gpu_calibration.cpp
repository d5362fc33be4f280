#include "calibrate/gpu_calibration.h"

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstdio>

#include "calibrate/nccl_tests_import.h"
#include "calibrate/profile_builder.h"
#include "hw/cuda/cuda_device.h"
#include "hw/cuda/gpu_kernel_timing.h"
#include "sim/core/error.h"

namespace adaptsim::calibrate {

void require_gpus(int gpus) {
  const hw::CudaAvailability cuda = hw::probe_cuda();
  const std::string why =
      cuda.device_count == 0 && !cuda.reason.empty() ? " (" + cuda.reason + ")" : "";
  if (cuda.device_count == 0) {
    throw InputError("--gpus " + std::to_string(gpus > 0 ? gpus : 1) +
                     " requested but no CUDA device is visible" + why);
  }
  if (gpus > cuda.device_count) {
    throw InputError("--gpus " + std::to_string(gpus) + " requested but only " +
                     std::to_string(cuda.device_count) + " CUDA device(s) are visible");
  }
}

GpuCalibrationResult run_gpu_calibration(const GpuCalibrationOptions& o) {
  require_gpus(o.nccl.gpus);
  auto print = [&](const std::string& line) {
    if (o.print) o.print(line);
  };
  GpuCalibrationResult result;

  int nccl_code = 0;
  if (ncclGetVersion(&nccl_code) == ncclSuccess) {
    result.nccl_version = nccl_version_from_code(nccl_code);
  }
  int cuda_code = 0;
  if (cudaRuntimeGetVersion(&cuda_code) == cudaSuccess) {
    result.cuda_version =
        std::to_string(cuda_code / 1000) + "." + std::to_string(cuda_code % 1000 / 10);
  }

  hw::SweepCallbacks callbacks;
  callbacks.on_note = [&](const std::string& text) { print("# note: " + text); };
  callbacks.on_start = [&](int n_ranks, const std::vector<std::string>& devices) {
    print("# NCCL " + result.nccl_version + ", " + std::to_string(n_ranks) + " ranks");
    for (const auto& d : devices)
      print("#  device " + d);
  };
  callbacks.on_row = [&](const coll::SweepRow& r) {
    char buf[200];
    std::snprintf(buf, sizeof buf, "  %14llu %13llu %9s %15s %10.2f %8.2f %8.2f %7llu",
                  static_cast<unsigned long long>(r.size_bytes),
                  static_cast<unsigned long long>(r.count), r.type.c_str(),
                  std::string(coll::collective_name(r.collective)).c_str(), r.time_us, r.algbw_GBps,
                  r.busbw_GBps, static_cast<unsigned long long>(r.wrong));
    print(buf);
  };
  for (coll::SweepRow& r : hw::run_nccl_sweep(o.nccl, callbacks)) {
    r.link_class = "nccl_intra";
    result.n_ranks = r.n_ranks;
    result.rows.push_back(std::move(r));
  }

  const hw::CudaDeviceInfo info = hw::cuda_device_info(o.kernels.device);
  result.gpu.name = info.name;
  result.gpu.count = result.n_ranks;

  print("# GPU kernels on device " + std::to_string(o.kernels.device));
  hw::KernelTimingReport kernels = hw::time_gpu_kernels(o.kernels);
  result.gpu.launch_overhead_us = kernels.launch_overhead_ns / 1e3;
  result.gpu.launch_latency_us = kernels.launch_latency_ns / 1e3;
  result.gpu.kernels = kernel_cost_entries(kernels);
  result.gpu.reduce_bandwidth_Bps = sum_reduce_bandwidth_Bps(kernels);
  for (const hw::KernelTimingRow& r : kernels.rows) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "  %-9s %11zu elements %12.1f ns %8.2f GB/s",
                  std::string(hw::kernel_kind_name(r.kernel)).c_str(), r.n_elements, r.time_ns,
                  r.bandwidth_GBps);
    print(buf);
  }

  if (o.run_gemm) {
    print("# GEMM (" + std::string(hw::gemm_precision_name(o.gemm.precision)) + ")");
    io::GemmRate best;
    best.precision = std::string(hw::gemm_precision_name(o.gemm.precision));
    for (const hw::GemmProbeRow& r : hw::probe_gemm(o.gemm)) {
      char buf[120];
      std::snprintf(buf, sizeof buf, "  %6d^3 %10.1f us %8.1f TFLOP/s", r.m, r.time_us, r.tflops);
      print(buf);
      if (r.tflops * 1e12 > best.flops_per_s) {
        best.flops_per_s = r.tflops * 1e12;
        best.size = r.m;
      }
    }
    if (best.flops_per_s > 0) result.gpu.gemm = best;
  }
  if (o.run_memory) {
    print("# device memory copy");
    std::uint64_t largest = 0;
    for (const hw::MemoryBandwidthRow& r : hw::probe_memory_bandwidth(o.memory)) {
      char buf[120];
      std::snprintf(buf, sizeof buf, "  %12llu B %10.1f us %8.1f GB/s",
                    static_cast<unsigned long long>(r.size_bytes), r.time_us, r.bandwidth_GBps);
      print(buf);
      // The largest size streams from HBM; the smaller ones may run from L2.
      if (r.size_bytes >= largest) {
        largest = r.size_bytes;
        result.gpu.memory_bandwidth_Bps = r.bandwidth_GBps * 1e9;
      }
    }
  }
  return result;
}

}  // namespace adaptsim::calibrate
