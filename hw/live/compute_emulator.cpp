#include "hw/live/compute_emulator.h"

#include <vector>

#include "hw/tcp/event_loop.h"
#include "sim/core/error.h"

#if ADAPTSIM_LIVE_HAVE_CUDA
#include "hw/cuda/cuda_device.h"
#endif

namespace adaptsim::live {
namespace {

class CpuComputeEmulator final : public ComputeEmulator {
 public:
  explicit CpuComputeEmulator(hw::CpuComputeMode mode) : options_{.mode = mode} {}

  void begin_step(TimeNs /*start_ns*/, std::span<const TimeNs> phase_end_ns) override {
    phase_end_ns_.assign(phase_end_ns.begin(), phase_end_ns.end());
  }
  void wait_phase(std::size_t i) override { run_until(phase_end_ns_.at(i)); }
  void run_until(TimeNs deadline_ns) override {
    const TimeNs left = deadline_ns - tcp::EventLoop::now_ns();
    if (left > 0) hw::emulate_compute_cpu(to_seconds(left), options_);
  }
  std::string description() const override {
    return options_.mode == hw::CpuComputeMode::kSleep ? "sleep" : "spin";
  }

 private:
  hw::CpuComputeOptions options_;
  std::vector<TimeNs> phase_end_ns_;
};

}  // namespace

bool gpu_compute_available_in_build() {
  return ADAPTSIM_LIVE_HAVE_CUDA != 0;
}

std::unique_ptr<ComputeEmulator> make_compute_emulator(const ComputeEmulatorOptions& options,
                                                       std::string* fallback_note) {
  if (fallback_note != nullptr) fallback_note->clear();
  if (options.device == ComputeDevice::kCpu) {
    return std::make_unique<CpuComputeEmulator>(options.cpu_mode);
  }
#if ADAPTSIM_LIVE_HAVE_CUDA
  const hw::CudaAvailability cuda = hw::probe_cuda();
  std::string why;
  if (cuda.device_count > 0 &&
      (options.device == ComputeDevice::kGpu || options.host_ranks <= cuda.device_count)) {
    return make_gpu_compute_emulator(options.local_rank % cuda.device_count);
  }
  if (cuda.device_count > 0) {
    why = std::to_string(options.host_ranks) + " ranks on this host would share " +
          std::to_string(cuda.device_count) +
          " GPU(s), time-sharing their emulation kernels (compute_mode gpu shares them anyway)";
  } else {
    why = "no CUDA device is visible (" + cuda.reason + ")";
  }
#else
  const std::string why = "this build has no CUDA (CMake's ADAPTSIM_HAVE_CUDA is off)";
#endif
  if (options.device == ComputeDevice::kGpu) {
    throw RuntimeFailure("compute_mode gpu: " + why +
                         "; use compute_mode sleep, spin or auto on this machine");
  }
  auto cpu = std::make_unique<CpuComputeEmulator>(options.cpu_mode);
  if (fallback_note != nullptr) {
    *fallback_note =
        "compute_mode auto: " + why + "; emulating compute on the CPU (" + cpu->description() + ")";
  }
  return cpu;
}

}  // namespace adaptsim::live
