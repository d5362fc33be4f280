// The GPU emulator of compute_emulator.h: hw/cuda's emulation kernel (gpu_emulate_compute), one
// launch per phase on a non-blocking stream, an event after each. Built only with CUDA
// (ADAPTSIM_LIVE_HAVE_CUDA); every call comes from the rank's compute thread.
#include <cuda_runtime_api.h>

#include <string>
#include <utility>
#include <vector>

#include "hw/cuda/cuda_check.h"
#include "hw/cuda/cuda_device.h"
#include "hw/cuda/cuda_kernels.h"
#include "hw/live/compute_emulator.h"
#include "hw/tcp/event_loop.h"
#include "sim/core/error.h"

namespace adaptsim::live {
namespace {

// An event without timing (cheaper to record) whose synchronize blocks the thread instead of
// spinning: the compute thread gives its core to the communication threads while the GPU
// computes, as the CPU emulator's sleep does.
class BlockingEvent {
 public:
  BlockingEvent() {
    ADAPTSIM_CUDA_CHECK(
        cudaEventCreateWithFlags(&event_, cudaEventDisableTiming | cudaEventBlockingSync));
  }
  ~BlockingEvent() {
    if (event_ != nullptr) cudaEventDestroy(event_);
  }
  BlockingEvent(BlockingEvent&& other) noexcept : event_(std::exchange(other.event_, nullptr)) {}
  BlockingEvent& operator=(BlockingEvent&&) = delete;
  BlockingEvent(const BlockingEvent&) = delete;
  BlockingEvent& operator=(const BlockingEvent&) = delete;

  void record(cudaStream_t stream) { ADAPTSIM_CUDA_CHECK(cudaEventRecord(event_, stream)); }
  void synchronize() { ADAPTSIM_CUDA_CHECK(cudaEventSynchronize(event_)); }

 private:
  cudaEvent_t event_ = nullptr;
};

class GpuComputeEmulator final : public ComputeEmulator {
 public:
  explicit GpuComputeEmulator(int device) : guard_(device), info_(hw::cuda_device_info(device)) {
    // The first launch loads the kernel's module (milliseconds): not inside a step.
    hw::gpu_emulate_compute(0, {}, stream_.get());
    stream_.synchronize();
  }

  void begin_step(TimeNs start_ns, std::span<const TimeNs> phase_end_ns) override {
    while (events_.size() < phase_end_ns.size())
      events_.emplace_back();
    TimeNs previous = start_ns;
    for (std::size_t i = 0; i < phase_end_ns.size(); ++i) {
      // The gaps between deadlines, so the kernels' durations add up to the CPU emulator's
      // deadlines (each rounded once, from the step's start).
      const TimeNs duration = phase_end_ns[i] - previous;
      previous = phase_end_ns[i];
      if (duration > 0) hw::gpu_emulate_compute(to_seconds(duration), {}, stream_.get());
      events_[i].record(stream_.get());
    }
  }

  void wait_phase(std::size_t i) override { events_.at(i).synchronize(); }

  void run_until(TimeNs deadline_ns) override {
    const TimeNs left = deadline_ns - tcp::EventLoop::now_ns();
    if (left > 0) hw::gpu_emulate_compute(to_seconds(left), {}, stream_.get());
    stream_.synchronize();
  }

  std::string description() const override {
    return "gpu " + std::to_string(info_.index) + " (" + info_.name + ")";
  }

 private:
  hw::CudaDeviceGuard guard_;  // first: the device is current for every member and call
  hw::CudaDeviceInfo info_;
  hw::CudaStream stream_;
  std::vector<BlockingEvent> events_;  // one per phase, reused every step
};

}  // namespace

std::unique_ptr<ComputeEmulator> make_gpu_compute_emulator(int device) {
  return std::make_unique<GpuComputeEmulator>(device);
}

}  // namespace adaptsim::live
