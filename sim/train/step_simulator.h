#pragma once
// Simulates data-parallel training steps of one model on every GPU of a topology.
//
// Each worker, each step: forward (compute), then backward layer by layer in backward order; when
// a layer finishes, its gradient tensors are handed to the system, which overlaps their
// communication with the rest of backward. The step ends when backward has finished, every
// gradient is reduced, and the optimizer update has run; the next step starts right away.
// Compute times come from the device profile (a measured single-GPU step time), split over forward,
// backward layers and the update; each worker's step is scaled by a seeded jitter factor.

#include <cstdint>
#include <vector>

#include "sim/topo/topology.h"
#include "sim/train/device_profile.h"
#include "sim/train/model_zoo.h"
#include "sim/train/system.h"

namespace adaptsim::train {

struct TrainingOptions {
  int batch_per_gpu = 32;
  Precision precision = Precision::kFp32;
  int warmup_steps = 1;  // excluded from the statistics
  int measured_steps = 5;
  std::size_t gradient_element_bytes = 4;  // float32 gradients
  std::uint64_t seed = 1;
  // Optimizer update traffic per parameter: SGD with momentum reads the gradient and reads and
  // writes weight and momentum (5 x 4 B, float32); memory-bound at the device's bandwidth.
  double optimizer_bytes_per_param = 20;
  // Multiplies every compute time (forward, backward, update): shorter runs for live validation,
  // applied identically to simulated and live runs.
  double compute_scale = 1.0;
  fabric::SimTransportOptions host_transport;  // endpoint is forced to kHost
  net::Sharing sharing = net::Sharing::kMaxMin;
  // With Sharing::kTcp: dispersion of the connections' shares of a contended buffer
  // (net::Network::set_share_dispersion), seeded by `seed`.
  double share_cv = 0;
};

// Per-worker per-step quantities, averaged over workers and measured steps.
struct TrainingResult {
  std::vector<double> step_s;  // per measured step: mean over workers of that step's duration
  double step_mean_s = 0;
  double step_std_s = 0;
  double compute_s = 0;       // forward + backward + update, average per worker-step
  double exposed_link_s = 0;  // after backward, with some communication in flight
  double exposed_wait_s = 0;  // after backward, with nothing in flight (negotiation, ordering)
  double samples_per_s_per_gpu = 0;      // batch / mean step time
  double samples_per_s_per_gpu_std = 0;  // propagated from the step-time spread
  double samples_per_s_total = 0;
  std::uint64_t events = 0;
  // The host connections' messages, warm-up included (TrainingOptions::host_transport's
  // record_transmissions; empty otherwise).
  std::vector<fabric::Transmission> transmissions;
};

// Step compute split for a model on a device: forward and per-layer backward seconds (in backward
// order) and the optimizer update, for one worker without jitter.
struct ComputeProfile {
  double forward_s = 0;
  std::vector<double> backward_layer_s;
  double optimizer_s = 0;
  double total_s() const;
};
ComputeProfile compute_profile(const Model& model, const DeviceProfile& device,
                               const TrainingOptions& options);

TrainingResult simulate_training(const topo::Topology& topology, const Model& model,
                                 const DeviceProfile& device, const SystemConfig& system,
                                 const TrainingOptions& options);

// The same with an explicit compute split (tests, toy models): `step_time_cv` is the jitter's
// coefficient of variation, `arch` the GPUs' generation for NCCL's constants.
TrainingResult simulate_training(const topo::Topology& topology, const Model& model,
                                 const ComputeProfile& compute, double step_time_cv, GpuArch arch,
                                 const SystemConfig& system, const TrainingOptions& options);

// The GPU generation named by a topology's or profile's GPU model ("V100-SXM2" -> Volta).
GpuArch gpu_arch_of(std::string_view gpu_model);

}  // namespace adaptsim::train
