#pragma once
// Emulated compute: a worker's forward/backward pass replaced by a wait of a set duration, so that
// live runs (testbed, calibration) reproduce a training step's timing without a model. The GPU
// version is gpu_emulate_compute (cuda_kernels.h); this is the CPU one.
//
// Two modes, because they answer different questions:
//   kSpin  (default) busy-waits on std::chrono::steady_clock until the deadline. The thread keeps
//          its core, as a real compute step keeps the device busy, so communication threads
//          compete for cores as they would with real work. Reading the clock is the loop body, so
//          no calibration of an iteration count is needed and the overshoot is one clock read
//          (~20-50 ns).
//   kSleep sleeps until the deadline. Frees the core: use it when more emulated workers than
//          cores share a host. Linux overshoots by the timer slack (50 us default) plus wake-up
//          latency, so it is inexact below ~1 ms.

namespace adaptsim::hw {

enum class CpuComputeMode { kSpin, kSleep };

struct CpuComputeOptions {
  CpuComputeMode mode = CpuComputeMode::kSpin;
};

// Blocks the calling thread for `seconds` (>= 0, finite) of wall-clock time; returns the measured
// duration in seconds (>= `seconds`).
double emulate_compute_cpu(double seconds, const CpuComputeOptions& options = {});

}  // namespace adaptsim::hw
