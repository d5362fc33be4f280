#include "hw/cuda/compute_emulation.h"

#include <chrono>
#include <cmath>
#include <stdexcept>
#include <string>
#include <thread>

namespace adaptsim::hw {

double emulate_compute_cpu(double seconds, const CpuComputeOptions& options) {
  if (!(seconds >= 0) || !std::isfinite(seconds)) {
    throw std::invalid_argument("emulate_compute_cpu: duration must be finite and >= 0 s, got " +
                                std::to_string(seconds));
  }
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  const auto deadline =
      start + std::chrono::ceil<Clock::duration>(std::chrono::duration<double>(seconds));
  if (options.mode == CpuComputeMode::kSleep) {
    std::this_thread::sleep_until(deadline);
  }
  // Also the tail of kSleep: sleep_until may return early on some platforms.
  while (Clock::now() < deadline) {
  }
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace adaptsim::hw
