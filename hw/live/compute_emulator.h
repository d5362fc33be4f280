#pragma once
// Where a live rank's emulated compute runs: on the CPU (the compute thread waits, hw/cuda's
// emulate_compute_cpu) or on a GPU (hw/cuda's emulation kernel, one per layer).
//
// A step is phases: forward, then each backward layer (model order), each ending at an absolute
// deadline from the step's start (live_training.h); then the update. The two devices keep those
// deadlines the way their real counterparts run a step:
//   CPU: wait_phase(i) waits until phase i's deadline (a sleep or a spin), so hand-over costs do
//        not accumulate over the layers.
//   GPU: begin_step queues the step's kernels at once on one stream, one per phase lasting the
//        gap between consecutive deadlines, with an event after each, as a framework queues a
//        step's kernels ahead of the GPU; wait_phase(i) waits for phase i's event, the point at
//        which a framework's gradient-ready event fires (Horovod's ReadyEvent). The kernels run
//        back to back, so launch latency is paid once per step, not once per layer.

#include <memory>
#include <span>
#include <string>

#include "hw/cuda/compute_emulation.h"
#include "sim/core/time.h"

namespace adaptsim::live {

// kAuto: kGpu when this build has CUDA and a device is visible, else kCpu (saying so).
enum class ComputeDevice { kCpu, kGpu, kAuto };

class ComputeEmulator {
 public:
  virtual ~ComputeEmulator() = default;
  // Starts a step at start_ns (tcp::EventLoop::now_ns's clock) whose phases end at phase_end_ns
  // (non-decreasing, every one >= start_ns).
  virtual void begin_step(TimeNs start_ns, std::span<const TimeNs> phase_end_ns) = 0;
  // Returns once phase i of the current step has completed.
  virtual void wait_phase(std::size_t i) = 0;
  // The update: emulated compute from now until deadline_ns; returns when it has completed.
  virtual void run_until(TimeNs deadline_ns) = 0;
  // What runs the compute, for the result: "sleep", "spin", "gpu 0 (NVIDIA H100 80GB HBM3)".
  virtual std::string description() const = 0;
};

struct ComputeEmulatorOptions {
  ComputeDevice device = ComputeDevice::kCpu;
  hw::CpuComputeMode cpu_mode = hw::CpuComputeMode::kSleep;  // kCpu, and kAuto's fallback
  int local_rank = 0;  // the rank's index among its host's ranks: selects the GPU
  int host_ranks = 1;  // ranks on this host: kAuto uses the GPUs only when each rank has its own
};

// Whether this build has the GPU emulator (CMake's ADAPTSIM_HAVE_CUDA).
bool gpu_compute_available_in_build();

// The emulator for the calling thread (the GPU one makes its device current on this thread for
// its lifetime). kGpu throws RuntimeFailure naming the cause when the build has no CUDA or no
// device is visible; kAuto then returns the CPU emulator and sets *fallback_note to one line
// saying why (empty otherwise); kAuto also takes the CPU, with a note, when the host has more
// ranks than visible GPUs: ranks sharing a GPU time-share their emulation kernels (four ranks on
// one H200 stepped 838 ms where 631 ms were asked), which no longer emulates their own GPUs.
// kGpu keeps the GPUs then (device local_rank mod the visible devices).
std::unique_ptr<ComputeEmulator> make_compute_emulator(const ComputeEmulatorOptions& options,
                                                       std::string* fallback_note);

#if ADAPTSIM_LIVE_HAVE_CUDA
// The GPU emulator on `device` (gpu_compute.cpp); throws RuntimeFailure on CUDA errors.
std::unique_ptr<ComputeEmulator> make_gpu_compute_emulator(int device);
#endif

}  // namespace adaptsim::live
