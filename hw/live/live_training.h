#pragma once
// Live data-parallel training on real processes: each rank runs the one training runtime
// (sim/runtime/trainer.h, the system, the policy) over its live environment (live_env.h): the
// model's compute emulated layer by layer, REAL gradient buffers of the model's exact tensor
// sizes reduced over the live TCP runtime, every reduced gradient checked against the exact sum
// after every step. A live run therefore measures what the simulator predicts, by the same code.
//
// At the end one all-reduce of every rank's sums (Trainer::local_sums) gives every rank the same
// result, summarized as the simulator summarizes. Every wait has a timeout: the run fails when no
// step ends for `timeout_ns`, naming what is still missing and from which peer; a failure on one
// rank aborts the cluster (the peers fail at once, naming it).

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "hw/cuda/compute_emulation.h"
#include "hw/live/compute_emulator.h"
#include "hw/live/live_env.h"
#include "hw/tcp/runtime.h"
#include "sim/learn/dataset.h"
#include "sim/learn/mlp.h"
#include "sim/runtime/elastic.h"
#include "sim/runtime/failure.h"
#include "sim/runtime/policy.h"
#include "sim/runtime/straggler.h"
#include "sim/runtime/system.h"
#include "sim/runtime/training_result.h"
#include "sim/train/compute_profile.h"
#include "sim/train/learn_spec.h"
#include "sim/train/model_zoo.h"

namespace adaptsim::live {

struct LiveConfig {
  int batch_per_gpu = 32;  // samples per rank per step (a policy may change it)
  // The compute split of one rank at a batch size, without jitter (train::compute_profile from a
  // device profile, or an explicit split scaled by batch).
  std::function<train::ComputeProfile(int batch_per_gpu)> compute;
  double step_time_cv = 0;  // the jitter's coefficient of variation (0: none)
  std::uint64_t seed = 1;
  int warmup_steps = 1;  // excluded from the statistics
  int measured_steps = 5;
  runtime::SystemConfig system;                // ideal, kungfu or horovod
  runtime::SeamSpec seam;                      // policy and monitors
  std::vector<runtime::Straggler> stragglers;  // workers whose compute is slower from a step on
  // Bytes per gradient element; the live buffers are float32, so only 4 is accepted.
  std::size_t gradient_element_bytes = 4;
  // Bounds every wait: connecting, each step, the final statistics.
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
  // Rank 0 publishes the step it starts here (its number and '\n', replaced by rename): the
  // clock of the scenario's background traffic (adaptsim-traffic reads it). Empty: none.
  std::filesystem::path progress_file;
  // Each rank writes its timeline (sim/runtime/timeline.h; pid = its rank, times on the steady
  // clock) to DIR/rank<r>.trace.json here, with each message it sent (the runtime's transport
  // must record them: TcpTransportOptions::record_sends). Empty: none.
  std::filesystem::path timeline_dir;
  // Each rank writes what it sent each peer (dst_rank,messages,bytes: its data messages and their
  // payload bytes; the transport must record them, TcpTransportOptions::record_sends) to
  // DIR/rank<r>.messages.csv here: the live traffic matrix. Empty: none.
  std::filesystem::path messages_dir;
  // Learn for real (learner.h): the fashion-mlp model trained on `learn_data` by every rank, the
  // compute real instead of emulated (`compute` then only sizes the trainer's unused deadlines),
  // the parameters checked equal on every rank between steps (with `verify`, else at the
  // evaluations). Needs a system that all-reduces (not ideal) and a fixed batch.
  std::optional<train::LearnSpec> learn;
  std::shared_ptr<const learn::FashionMnist> learn_data;
  // An elastic run (run_live_elastic): the worker set changes by KungFu's protocol; the
  // topology's workers (`elastic_capacity`, the worker ids) and GPUs per host.
  std::optional<runtime::ElasticSpec> elastic;
  int elastic_capacity = 0;
  int elastic_ranks_per_host = 1;
  // Elastic runs (KungFu's mechanism): workers killed or hung at a step (failure.h).
  std::vector<runtime::WorkerFailure> failures;
};

struct LiveResult {
  runtime::TrainingResult training;  // the same on every rank
  int n_ranks = 0;
  std::uint64_t gradient_bytes = 0;  // per rank per step (one copy of every gradient)
  int verified_steps = 0;            // steps whose gradients were checked on this rank
  double wall_s = 0;                 // this rank: first step's start to the last step's end
  // What ran this rank's compute (ComputeEmulator::description): "sleep", "gpu 0 (NVIDIA ...)".
  std::string compute_device;
  // Learn mode: the samples trained on (every rank's), and rank 0's last test-set evaluation
  // (after the last step; nullopt on other ranks).
  std::uint64_t samples = 0;
  std::optional<learn::Evaluation> evaluation;
};

// Checks a configuration against a model; throws InputError naming the field.
void validate_live_config(const train::Model& model, const LiveConfig& config);

// Runs on every rank of a connected runtime (the calling thread waits; the runtime's loop thread
// runs the step loop, a compute thread the compute). Returns the aggregated result on every rank;
// throws RuntimeFailure on a failure (a lost peer, a timeout, a wrong gradient, compute_device
// kGpu without a GPU) and InputError on a bad configuration. With kAuto and no GPU, the first
// rank of each host says on stderr that the compute falls back to the CPU. The GPU is the rank's
// index among its host's ranks (tcp::Runtime::host_of_rank) modulo the visible devices.
LiveResult run_live_training(tcp::Runtime& runtime, const train::Model& model,
                             const LiveConfig& config);

// One process of an elastic run (live_env.h, "Elastic runs"): `runtime` is the process's own
// one-rank runtime (its loop, timeouts and failure path); the worker connects to its first
// cluster (or, started by the runner for a new worker, joins the notice's cluster), runs the step
// loop until it leaves the cluster or the run ends, closes its connections and writes what it
// measured to the store (FileStore::write_record), from which the launcher merges the run's
// result. The returned result holds this process's record only, summarized where it ran a step.
LiveResult run_live_elastic(tcp::Runtime& runtime, const train::Model& model,
                            const LiveConfig& config, ElasticProcess process);

// Fails the runtime's transport with `reason` (so every peer fails at once with this root cause
// instead of waiting for a timeout); no-op when it already failed. Never throws.
void abort_cluster(tcp::Runtime& runtime, const std::string& reason);

}  // namespace adaptsim::live
