// Entry point of the GPU tests. doctest cannot skip at run time, so the whole executable reports
// "skipped" to CTest instead: without a CUDA device it prints why and exits with kSkipExitCode,
// which tests/hw/cuda/CMakeLists.txt registers as the test's SKIP_RETURN_CODE.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>

#include "hw/cuda/cuda_device.h"

namespace {
constexpr int kSkipExitCode = 77;  // the automake convention for "skipped"
}

int main(int argc, char** argv) {
  const adaptsim::hw::CudaAvailability cuda = adaptsim::hw::probe_cuda();
  if (cuda.device_count == 0) {
    std::printf("SKIPPED: no CUDA device (%s)\n", cuda.reason.c_str());
    return kSkipExitCode;
  }
  const adaptsim::hw::CudaDeviceInfo info = adaptsim::hw::cuda_device_info(0);
  std::printf("%d CUDA device(s); device 0: %s, sm_%d%d, %d SMs\n", cuda.device_count,
              info.name.c_str(), info.compute_capability_major, info.compute_capability_minor,
              info.sm_count);
  doctest::Context context(argc, argv);
  return context.run();
}
