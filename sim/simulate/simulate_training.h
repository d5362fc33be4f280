#pragma once
// Simulates data-parallel training of one model on every GPU of a topology: the one training
// runtime (sim/runtime/trainer.h, the system, the seam) over the simulated environment
// (sim_env.h), run to completion on the event engine.

#include <cstdint>
#include <optional>
#include <vector>

#include "sim/fabric/sim_fabric.h"
#include "sim/io/background.h"
#include "sim/net/flow_network.h"
#include "sim/runtime/failure.h"
#include "sim/runtime/policy.h"
#include "sim/runtime/system.h"
#include "sim/runtime/timeline.h"
#include "sim/runtime/training_result.h"
#include "sim/simulate/sim_env.h"
#include "sim/topo/topology.h"
#include "sim/train/compute_profile.h"
#include "sim/train/device_profile.h"
#include "sim/train/model_zoo.h"
#include "sim/train/nccl_model.h"

namespace adaptsim::simulate {

struct TrainingOptions {
  train::ComputeOptions compute;  // batch per GPU, precision, optimizer traffic, compute scale
  int warmup_steps = 1;           // excluded from the statistics
  int measured_steps = 5;
  std::size_t gradient_element_bytes = 4;  // float32 gradients
  std::uint64_t seed = 1;
  fabric::SimTransportOptions host_transport;  // endpoint is forced to kHost
  net::Sharing sharing = net::Sharing::kMaxMin;
  // With Sharing::kTcp: dispersion of the connections' shares of a contended buffer
  // (net::Network::set_share_dispersion), seeded by `seed`.
  double share_cv = 0;
  // With Sharing::kTcp: each connection's congestion window (net::TcpWindowOptions).
  net::TcpWindowOptions tcp_windows;
  runtime::SeamSpec seam;  // policy and monitors; empty: none
  // A worker set that changes while the job runs (the `elastic:` map); unset: fixed.
  std::optional<runtime::ElasticSpec> elastic;
  std::vector<runtime::Straggler> stragglers;    // slower workers or NICs from a step on
  std::vector<runtime::WorkerFailure> failures;  // workers that die at a step (elastic runs)
  // The monitors' kernels (norms, squares, variance). Unset: the device-profile overload takes
  // them memory-bound at the profile's memory bandwidth; the explicit-compute overload, free.
  std::optional<MonitorKernels> monitor_kernels;
  // Background traffic beside the job (the topology must hold the extra hosts it names).
  io::BackgroundSpec background;
  // The model that learns live, its learning simulated by a training-dynamics model (SimEnv).
  std::optional<SimLearning> learning;
  // The cores a server's workers compute on together (SimEnvOptions::compute_cores); 0: a
  // device each.
  int compute_cores = 0;
  // Record every worker's phases (SimulatedTraining::timeline).
  bool record_timeline = false;
  // Record what every link carried, in bins of this width (SimulatedTraining::links; the host
  // messages too, for the traffic matrix); 0: none. With record_timeline, the timeline's link
  // utilization counters use these bins (kTimelineLinkBinNs when 0).
  TimeNs link_stats_bin_ns = 0;
  static constexpr TimeNs kTimelineLinkBinNs = 10 * kNsPerMs;
};

struct SimulatedTraining {
  runtime::TrainingResult result;
  std::uint64_t events = 0;  // engine events run
  // The host connections' messages, warm-up included (TrainingOptions::host_transport's
  // record_transmissions; empty otherwise).
  std::vector<fabric::Transmission> transmissions;
  // Every worker's phases, warm-up included (TrainingOptions::record_timeline; empty otherwise).
  runtime::Timeline timeline;
  // Every resource's use over the whole run, warm-up included (TrainingOptions::link_stats_bin_ns;
  // empty otherwise).
  std::vector<net::LinkUse> links;
};

SimulatedTraining simulate_training(const topo::Topology& topology, const train::Model& model,
                                    const train::DeviceProfile& device,
                                    const runtime::SystemConfig& system,
                                    const TrainingOptions& options);

// The same with an explicit compute split (tests, toy models), whose forward and backward a batch
// change scales linearly: `step_time_cv` is the jitter's coefficient of variation, `arch` the GPUs'
// generation for NCCL's constants.
SimulatedTraining simulate_training(const topo::Topology& topology, const train::Model& model,
                                    const train::ComputeProfile& compute, double step_time_cv,
                                    train::GpuArch arch, const runtime::SystemConfig& system,
                                    const TrainingOptions& options);

}  // namespace adaptsim::simulate
