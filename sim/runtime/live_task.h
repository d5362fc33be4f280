#pragma once
// A training task for real processes, as the scenario runner hands it to the live side: what to
// train and how (the same system options and policy the simulation runs), and where the
// processes go. Nothing here depends on the simulator's network model.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sim/core/time.h"
#include "sim/io/background.h"
#include "sim/runtime/elastic.h"
#include "sim/runtime/failure.h"
#include "sim/runtime/policy.h"
#include "sim/runtime/straggler.h"
#include "sim/runtime/system.h"
#include "sim/runtime/training_result.h"
#include "sim/topo/cluster_spec.h"
#include "sim/train/learn_spec.h"

namespace adaptsim::runtime {

// How live runs are placed and scaled (the scenario's `live:` section).
struct LiveOptions {
  // local: processes on this machine; testbed: one network namespace per server with the
  // topology's NIC caps (root); hosts: rank r listens on hosts[r] (started from this machine, so
  // addresses of this machine: loopback or its interfaces).
  std::string placement = "local";
  TimeNs timeout_ns = 120 * kNsPerSecond;  // per run
  // TCP congestion control of the live connections ("cubic", "bbr", ...); empty: the system's.
  std::string congestion_control;
  // Testbed placement: names its namespaces and interfaces "<prefix>-h<i>", ... (letters and
  // digits, at most 12), so that concurrent testbeds with different prefixes do not collide.
  std::string prefix = "adaptsim";
  // Where each rank's per-layer compute runs (adaptsim-live's compute_mode): auto = the CUDA
  // emulation kernel on the rank's GPU where the build has CUDA and a GPU is visible, else a
  // sleep to the same deadlines; or sleep, spin (busy CPU), gpu (required).
  std::string compute = "auto";
  std::vector<std::string> hosts;  // hosts placement: "host:port" per rank, in rank order
  // Testbed placement: sysctls set in every host's namespace after it is built (live.host_sysctls:
  // {net.ipv4.tcp_slow_start_after_idle: 0}), for TCP behaviour under study.
  std::vector<std::pair<std::string, std::string>> host_sysctls;
  // Test hook (live.fault): rank fault_kill_rank SIGKILLs itself after fault_after_sends sent
  // messages; -1: none.
  // Elastic runs: the config store ("file": the run's folder; "etcd"), and the etcd to use
  // (host:port; empty: a private one started for the run).
  std::string config_store = "file";
  std::string etcd;
  // Every rank checks the reduced gradients (a run that learns: the parameters' hashes) after
  // every step: the tool's own check, not the modelled system's work; false: only where the run
  // needs it (a learning run's evaluations, an elastic run's state), for timings.
  bool verify = true;
  int fault_kill_rank = -1;
  std::uint64_t fault_after_sends = 0;
};

// One training task to run on real processes.
struct LiveTrainingTask {
  topo::ClusterSpec nominal;  // the topology as written (a testbed emulates it, uncalibrated)
  std::string model;
  int batch_per_gpu = 0;
  std::filesystem::path device;
  std::string precision;
  SystemConfig system;
  SeamSpec seam;                      // the policy and monitors, as the scenario wrote them
  std::vector<Straggler> stragglers;  // compute stragglers (the workload refuses NIC ones live)
  // Traffic beside the job, between the testbed's hosts (nominal holds its extra hosts).
  io::BackgroundSpec background;
  int warmup_steps = 0;
  int measured_steps = 0;
  std::uint64_t seed = 1;
  double compute_scale = 1.0;
  LiveOptions live;
  // Each rank records its timeline; the backend merges them into TrainingResult::timeline_json.
  bool record_timeline = false;
  // > 0: the backend samples the testbed's links every this many ns and collects the ranks'
  // messages (TrainingResult::measured_links, pair_traffic); needs live.placement: testbed.
  TimeNs link_stats_bin_ns = 0;
  // The model learns for real (fashion-mlp: the workload's `learn:` map, or its defaults).
  std::optional<train::LearnSpec> learn;
  // The worker set changes (the workload's `elastic:` map; local processes, KungFu's protocol).
  std::optional<ElasticSpec> elastic;
  std::vector<WorkerFailure> failures;  // with `elastic`
};

// Runs training tasks on real processes. The runner takes one as a parameter (sim/run's
// LoadOptions::backend); simctl makes it with make_live_backend.
class LiveBackend {
 public:
  virtual ~LiveBackend() = default;
  virtual TrainingResult run_training(const LiveTrainingTask& task) = 0;
};

// The live side's backend (real processes of adaptsim-live, placed locally, on listed hosts or in
// a testbed). Declared here, defined by the live side (hw/runner/live_backend.cpp), as LevelDB's
// Env::Default() is defined per platform: a program that runs live links adaptsim_live_runner,
// and nothing under sim/ includes hw/. Throws RuntimeFailure when the adaptsim-live tool is
// missing.
std::unique_ptr<LiveBackend> make_live_backend();

}  // namespace adaptsim::runtime
