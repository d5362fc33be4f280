#pragma once
// Live data-parallel training on real processes: each rank emulates a model's compute layer by
// layer and reduces REAL gradient buffers of the model's exact tensor sizes over the live TCP
// runtime with a system's mechanism (live_system.h), so a live run measures what the step
// simulator (sim/train/step_simulator.h) predicts, by the same definitions.
//
// Each rank, each step:
//   - forward: emulated compute of forward_s x jitter (compute_emulator.h: a wait on the CPU, the
//     CUDA emulation kernel on a GPU);
//   - backward, layer by layer in backward order: a wait of that layer's time x jitter; when it
//     ends, the layer's gradients go to the system at once (the layer loop never waits for
//     communication, which overlaps the rest of backward);
//   - the update starts when backward ended and every gradient holds the sum over ranks, and
//     lasts optimizer_s x jitter; the next step starts right away.
// Waits end at absolute deadlines from the step's start (step start + forward + layers so far),
// as the simulator schedules its layer events, so hand-over costs do not accumulate. The jitter is
// the simulator's: per (rank, step) Rng::derive(seed, rank * 1000003 + step), N(1, cv) clamped at
// 0.5, so a simulated and a live run with one seed emulate the same compute.
//
// Measurements per rank and step: duration, exposed time after backward with communication in
// flight (link) and with nothing in flight (wait), compute = duration - exposed. They are
// aggregated exactly like StepSimulator::summarize (step k's time = mean over ranks of their
// step-k durations; mean and sample standard deviation over measured steps; throughput per GPU =
// batch / mean with the first-order propagated deviation), via one all-reduce of the per-rank
// sums, so every rank returns the same result.
//
// After each step every reduced gradient is checked against the exact sum over ranks
// (gradient_buffers.h); a mismatch fails the run naming the tensor and the rank. Every wait has a
// timeout; a failure on one rank aborts the cluster (the peers fail at once, naming it).

#include <cstdint>
#include <string>
#include <vector>

#include "hw/cuda/compute_emulation.h"
#include "hw/live/compute_emulator.h"
#include "hw/tcp/runtime.h"
#include "sim/train/model_zoo.h"
#include "sim/train/step_simulator.h"
#include "sim/train/system.h"

namespace adaptsim::live {

struct LiveConfig {
  int batch_per_gpu = 32;  // samples per rank per step: only for the throughput
  // Forward, per-layer backward (backward order, one per model layer) and update seconds of one
  // rank without jitter; train::compute_profile computes it from a device profile.
  train::ComputeProfile compute;
  double step_time_cv = 0;  // the jitter's coefficient of variation (0: none)
  std::uint64_t seed = 1;
  int warmup_steps = 1;  // excluded from the statistics
  int measured_steps = 5;
  train::SystemConfig system;  // ideal, kungfu or horovod
  // Bytes per gradient element; the live buffers are float32, so only 4 is accepted.
  std::size_t gradient_element_bytes = 4;
  // Bounds every wait: each blocking runtime call, each step's wait for its gradients.
  TimeNs timeout_ns = 30 * kNsPerSecond;
  // TCP congestion control of the connections (tcp::TcpTransportOptions); empty: the system's.
  std::string congestion_control;
  // Where the compute runs (compute_emulator.h): the CPU by default, also on machines with GPUs.
  ComputeDevice compute_device = ComputeDevice::kCpu;
  // How the CPU waits (kCpu, and kAuto without a GPU). Sleep by default: several ranks share a few
  // cores, and spinning compute threads would steal them from the communication
  // (hw/cuda/compute_emulation.h).
  hw::CpuComputeMode compute_mode = hw::CpuComputeMode::kSleep;
  bool verify = true;  // check every reduced gradient after every step (not for ideal)
};

struct LiveResult {
  // Aggregated over ranks as StepSimulator::summarize does (`events` stays 0).
  train::TrainingResult training;
  int n_ranks = 0;
  // Per rank: mean of its own measured step durations (the spread shows stragglers).
  std::vector<double> rank_step_mean_s;
  std::uint64_t gradient_bytes = 0;  // per rank per step (one copy of every gradient)
  int verified_steps = 0;            // steps whose gradients were checked on every rank
  double wall_s = 0;                 // this rank: first step's start to last step's end
  // What ran this rank's compute (ComputeEmulator::description): "sleep", "gpu 0 (NVIDIA ...)".
  std::string compute_device;
};

// Checks a configuration against a model; throws InputError naming the field.
void validate_live_config(const train::Model& model, const LiveConfig& config);

// Runs on every rank of a connected runtime (one thread per rank; the calling thread is the
// compute thread). Returns the aggregated result on every rank; throws RuntimeFailure on a
// failure (a lost peer, a timeout, a wrong gradient, compute_device kGpu without a GPU) and
// InputError on a bad configuration. With kAuto and no GPU, the first rank of each host says on
// stderr that the compute falls back to the CPU. The GPU is the rank's index among its host's
// ranks (tcp::Runtime::host_of_rank) modulo the visible devices.
LiveResult run_live_training(tcp::Runtime& runtime, const train::Model& model,
                             const LiveConfig& config);

// The simulator's per-(worker, step) jitter factor.
double step_jitter(std::uint64_t seed, double cv, int worker, int step);

}  // namespace adaptsim::live
