#pragma once
// `calibrate --gpus N` (built only with CUDA and NCCL): on one process driving N GPUs of this
// host,
//   1. the NCCL sweep of the requested collectives (hw/nccl/sweep.h), class nccl_intra;
//   2. the gradient kernels on GPU 0 (hw/cuda/gpu_kernel_timing.h): cost lines, launch costs and
//      the reduction bandwidth;
//   3. the GEMM throughput (hw/cuda/gemm_probe.h) and the device memory bandwidth
//      (hw/cuda/memory_bandwidth_probe.h) on GPU 0.
// Before anything runs, the GPU count is checked: fewer CUDA devices than asked (or none) is an
// InputError naming both numbers.

#include <functional>
#include <string>
#include <vector>

#include "calibrate/measurement.h"
#include "hw/cuda/gemm_probe.h"
#include "hw/cuda/kernel_cost.h"
#include "hw/cuda/memory_bandwidth_probe.h"
#include "hw/nccl/sweep.h"
#include "sim/io/calibration_profile.h"

namespace adaptsim::calibrate {

struct GpuCalibrationOptions {
  hw::SweepOptions nccl;  // gpus (0 = every visible GPU), collectives, sizes, iterations, check
  hw::KernelTimingOptions kernels;
  bool run_gemm = true;
  hw::GemmProbeOptions gemm;
  bool run_memory = true;
  hw::MemoryBandwidthOptions memory;
  std::function<void(const std::string&)> print;  // progress lines; null: silent
};

struct GpuCalibrationResult {
  std::vector<coll::SweepRow> rows;
  io::GpuCalibration gpu;
  int n_ranks = 0;
  std::string nccl_version;  // "2.28.9"
  std::string cuda_version;  // runtime, "13.0"
};

// InputError "--gpus 4 requested but only 1 CUDA device(s) are visible" (or "no CUDA device is
// visible (reason)") when the host has fewer GPUs than `gpus` (0: at least one).
void require_gpus(int gpus);

GpuCalibrationResult run_gpu_calibration(const GpuCalibrationOptions& options);

}  // namespace adaptsim::calibrate
