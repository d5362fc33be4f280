#pragma once
// The simulated training environment: runtime::TrainingEnv over the event engine, the flow model
// (sim/net) and the simulated transport (sim/fabric). Every worker of the topology is local; time
// is the engine's. Gradients are size-only (they cost time, not memory); control messages with
// real bytes (Horovod's negotiation, the step agreement) carry them. Compute phases are engine
// events at their deadlines; copies between GPU and host are flows over the server's PCIe; GPU
// collectives are NCCL communicators whose collectives take NCCL's own predicted time.

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "sim/core/event_engine.h"
#include "sim/fabric/sim_fabric.h"
#include "sim/io/background.h"
#include "sim/net/network.h"
#include "sim/runtime/env.h"
#include "sim/runtime/straggler.h"
#include "sim/topo/topology.h"
#include "sim/train/dynamics.h"
#include "sim/train/model_zoo.h"

namespace adaptsim::simulate {

// One monitor kernel over a tensor of n elements: overhead + n x per_element (the model of
// hw/cuda/kernel_cost.h, which calibrate fits).
struct KernelCost {
  double overhead_ns = 0;
  double per_element_ns = 0;
};

// The monitors' kernels (TrainingEnv::gradient_norms, square_gradients, gradient_variance), each
// run once per gradient tensor as the live environment runs them.
struct MonitorKernels {
  KernelCost sq_norm;   // |x|^2 of a tensor; the norms run it twice (local and reduced)
  KernelCost square;    // x^2 of a tensor into its squares' buffer
  KernelCost variance;  // Var = E[g^2] - E[g]^2 of a tensor and ||Var||_2
  // >= 1: every kernel takes this many times longer (workers time-sharing a machine's cores).
  double time_sharing = 1;
  // Memory-bound kernels at `memory_Bps`, for elements of `element_bytes`: sq_norm reads each
  // element once, square reads and writes it (2 x), variance reads two and writes one (3 x).
  static MonitorKernels memory_bound(double memory_Bps, std::size_t element_bytes);
};

// A model that learns for real in live runs, simulated (issue 16): its training dynamics
// (sim/train/dynamics.h) give the gradients' squared norms the monitors read, as their
// expectations, and the readings a live learner writes (samples, progress, wall time, test
// accuracy at the evaluation points, which are the live run's).
struct SimLearning {
  std::shared_ptr<const train::TrainingDynamics> dynamics;
  int eval_every = 0;   // train::LearnSpec::eval_every: an evaluation every N steps; 0: last only
  int total_steps = 0;  // warm-up and measured: the last step is an evaluation point
};

struct SimEnvOptions {
  fabric::SimTransportOptions host_transport;  // endpoint is forced to kHost
  net::Sharing sharing = net::Sharing::kMaxMin;
  // With Sharing::kTcp: dispersion of the connections' shares of a contended buffer
  // (net::Network::set_share_dispersion), seeded by `seed`.
  double share_cv = 0;
  // With Sharing::kTcp: each connection's congestion window (net::TcpWindowOptions).
  net::TcpWindowOptions tcp_windows;
  std::uint64_t seed = 1;
  train::GpuArch arch = train::GpuArch::kVolta;  // NCCL's constants
  std::size_t gradient_element_bytes = 4;
  // The monitors' kernels' cost (simulate_training: the device's memory bandwidth, or a
  // calibration profile's measured kernels; free with an explicit compute split unless given).
  MonitorKernels kernels;
  // Background traffic: every connection a flow between the hosts' first CPUs, capped at its
  // share of the flow's rate, started and stopped at rank 0's step starts or at times since
  // rank 0 started step 0. The topology holds the extra hosts the flows name.
  io::BackgroundSpec background;
  // A worker set that changes (runtime/elastic.h): the config store, the runners, connection
  // resets and checkpoints, at the spec's costs (SimEnv, "Elastic").
  std::optional<runtime::ElasticSpec> elastic;
  // Stragglers whose server's NIC changes rate when rank 0 starts their step (their compute is
  // the step loop's).
  std::vector<runtime::Straggler> stragglers;
  // Simulated learning (the model that learns live); unset: gradients are sizes only, their
  // norms NaN, and no learn.* readings.
  std::optional<SimLearning> learning;
  // The CPU cores of a server that its workers' compute shares (0: each worker computes on a
  // device of its own, a GPU). Set for CPU devices with more worker processes than cores (live
  // runs on local processes): each compute phase is its exclusive time of CPU work, and the work
  // in progress on a server shares its cores by processor sharing (SimEnv::share), with the
  // elastic start-ups (ElasticSpec::server_cores must then be the same number or 0). Where the
  // transport threads are modelled (host_transport.one_transport_thread), the compute runs
  // instead as flows on the host's CPU resource beside them (SimFabric::host_cpu; the start-ups
  // keep their processor sharing apart).
  int compute_cores = 0;
};

// The engine, the flow model and the simulated transport of a cluster: one run's own, or shared
// by the jobs of a cluster trace (simulate_jobs.h), whose traffic then contends on one network.
// Built from the cluster-wide options (sharing, share_cv, seed, host_transport, compute_cores).
struct SimCluster {
  SimCluster(const topo::Topology& topology, const SimEnvOptions& options);
  EventEngine engine;
  net::Network network;
  fabric::SimFabric fabric;
};

class SimEnv final : public runtime::TrainingEnv {
 public:
  // A run with a cluster of its own.
  SimEnv(const topo::Topology& topology, const train::Model& model, const SimEnvOptions& options);
  // A job on a shared cluster (built over the same topology, which outlives both): its workers
  // are the topology's ranks (the cluster's GPUs), of which its config store's cluster
  // (options.elastic, required) says which run it. Nothing else may run on the job's GPUs while
  // they are in its cluster.
  SimEnv(SimCluster& cluster, const topo::Topology& topology, const train::Model& model,
         const SimEnvOptions& options);
  ~SimEnv() override;

  // What outside the job (a cluster scheduler) writes into its config store: the next version,
  // of these workers, visible when the write completes (ElasticSpec::store_write_ns). The job
  // resizes to it at a step boundary, by the run's resize mechanism.
  void propose_cluster(std::vector<int> workers);
  // The cluster the config store holds (the last write that completed).
  const runtime::ClusterConfig& stored_cluster() const { return store_; }
  // Called when a worker's process stops (it left the cluster).
  void on_worker_stopped(std::function<void(int worker)> stopped) { stopped_ = std::move(stopped); }

  EventEngine& engine() { return engine_; }
  const fabric::SimFabric& fabric() const { return fabric_; }
  net::Network& network() { return network_; }

  TimeNs now() const override { return engine_.now(); }
  void at(TimeNs when, runtime::Callback task) override;
  int workers() const override { return topology_.rank_count(); }
  const std::vector<int>& host_of_worker() const override { return host_of_; }
  const std::vector<int>& local_workers() const override { return all_; }
  // With compute_cores set, the phases' exclusive times are run one after the other as CPU work
  // shared with the server's other work; otherwise each phase ends at its deadline.
  void compute(int worker, const runtime::ComputeSchedule& schedule,
               std::function<void(std::size_t)> phase_done) override;
  void compute_until(int worker, TimeNs end_ns, runtime::Callback done) override;
  void copy_to_host(int worker, std::uint64_t bytes, runtime::Callback done) override;
  void copy_to_device(int worker, std::uint64_t bytes, runtime::Callback done) override;
  coll::Transport& transport(int worker) override { return fabric_.transport(worker); }
  coll::Workspace gradient(int worker, std::size_t tensor) override;
  coll::Workspace fuse(int worker, const std::vector<std::size_t>& tensors,
                       const std::string& name) override;
  void unfuse(int, const std::vector<std::size_t>&) override {}
  std::unique_ptr<runtime::GpuCollectives> gpu_collectives(const std::vector<int>& members,
                                                           const train::NcclNet& net) override;
  void gradient_norms(int worker,
                      std::function<void(double local_sq, double reduced_sq)> done) override;
  void square_gradients(int worker, runtime::Callback done) override;
  coll::Workspace squared_gradient(int worker, std::size_t tensor) override;
  void gradient_variance(int worker, std::function<void(double)> done) override;
  void between_steps(int, int, runtime::Callback done) override { done(); }
  void step_started(int worker, int step) override;
  // With SimEnvOptions::learning: learn.samples, learn.progress, learn.wall_s and, at the
  // evaluation points, learn.test_accuracy (the dynamics' accuracy at the progress made).
  void readings(int worker, int step, std::map<std::string, double>& out) override;

  // Elastic: the config store is an object beside rank 0's host whose reads take
  // ElasticSpec::store_read_ns (reading the cluster as it is halfway) and writes store_write_ns
  // (visible when they complete). A runner per server acts on a notice one way after it is sent
  // (half the round trip between the two hosts; the notifier waits for the farthest runner's
  // reply); it starts a process per new worker, which runs process_start_ns later (its start-up is
  // CPU work: with server_cores set, the start-ups in progress on a server share its cores).
  // Resetting
  // connections takes the longest round trip to the cluster's other hosts (the dials run at once;
  // a TCP handshake is one round trip). A checkpoint is written and read at the spec's disk
  // bandwidths, by one disk per server, shared equally by the transfers in progress on it; with a
  // page cache (ElasticSpec::cache_write_Bps), written into memory and read from it on the server
  // that wrote it, as CPU work on its cores.
  void store_get(int worker, std::function<void(const runtime::ClusterConfig&)> done) override;
  void store_put(int worker, const runtime::ClusterConfig& cluster,
                 runtime::Callback done) override;
  void notify_runners(int worker, const runtime::RunnerNotice& notice,
                      runtime::Callback done) override;
  void on_worker_started(
      std::function<void(int worker, const runtime::RunnerNotice&)> started) override {
    started_ = std::move(started);
  }
  // The notices are in the store from the first notifier's write (store_write_ns after its
  // notify_runners), read as the cluster is.
  void store_notice(int worker, int version,
                    std::function<void(const std::optional<runtime::RunnerNotice>&)> done) override;
  void stop_worker(int worker) override;
  // Its process is held (it keeps its place with the runner) but renews no lease meanwhile.
  void pause_worker(int worker, TimeNs duration, runtime::Callback resumed) override;
  // Once after a pause of at least failure_timeout_ns (the store then saw its lease lapse).
  bool lease_lapsed(int worker) override { return lapsed_.erase(worker) != 0; }
  // A lease lives while the worker's process runs and failure_timeout_ns after it stopped or
  // paused; reads and swaps take the store's read and write times.
  void store_leases(int worker, std::function<void(const std::vector<int>&)> done) override;
  void store_swap(int worker, int expected_version, const runtime::ClusterConfig& cluster,
                  std::function<void(bool)> done) override;
  void reset_connections(int worker, const runtime::ClusterConfig& cluster,
                         runtime::Callback done) override;
  void write_checkpoint(int worker, std::uint64_t bytes, runtime::Callback done) override;
  void read_checkpoint(int worker, std::uint64_t bytes, runtime::Callback done) override;

 private:
  // One of the two above: a cluster of its own (`own`) or a shared one.
  SimEnv(std::unique_ptr<SimCluster> own, SimCluster* shared, const topo::Topology& topology,
         const train::Model& model, const SimEnvOptions& options);
  // What a server's work shares: its disk (one), its CPU cores (the start-ups).
  enum class Resource { disk, cpu };
  struct Shared;
  // `seconds` of the resource's exclusive work for `worker`'s server, then `done`.
  void share(Resource resource, int worker, double seconds, runtime::Callback done);
  // The units a server's resource has: one disk; compute_cores or the elastic start-ups' cores.
  int units(Resource resource) const;
  // Phase `phase` and the ones after it of a compute on shared cores (compute_cores).
  struct SharedCompute;
  void compute_phase(const std::shared_ptr<SharedCompute>& c, std::size_t phase);
  void advance(Shared& r);
  void schedule(Resource resource, int server);
  // `kernel` run `times` times over every gradient tensor.
  TimeNs kernel_ns(const KernelCost& kernel, int times) const;

  const topo::Topology& topology_;
  const train::Model& model_;
  SimEnvOptions options_;
  train::ModelTotals totals_;        // what the monitors' kernels run over
  std::unique_ptr<SimCluster> own_;  // null on a shared cluster
  EventEngine& engine_;
  net::Network& network_;
  fabric::SimFabric& fabric_;
  std::function<void(int)> stopped_;
  std::vector<int> host_of_, all_;
  // Per background flow, its connections' flows while it runs.
  std::vector<std::vector<net::Network::FlowId>> background_flows_;
  void start_background(std::size_t flow);
  const runtime::ElasticSpec& elastic() const;
  // A read of the store: `at_store` runs halfway through the read time, its value reaches `done`
  // at the end.
  template <typename T>
  void store_read(std::function<T()> at_store, std::function<void(const T&)> done);
  TimeNs round_trip_ns(int worker_a, int worker_b) const;
  runtime::ClusterConfig store_;
  std::set<int> running_;                  // workers whose process runs
  std::map<int, TimeNs> stopped_at_;       // workers whose process stopped, and when
  std::map<int, TimeNs> paused_since_;     // workers whose running process is paused, since
  std::set<int> lapsed_;                   // paused past their lease, not yet asked (lease_lapsed)
  std::map<int, std::set<int>> notified_;  // version -> servers whose runner acted on it
  // version -> its first notice, and when its write is in the store
  std::map<int, std::pair<TimeNs, runtime::RunnerNotice>> notices_;
  // Per server: processes still exiting (ElasticSpec::process_exit_ns), and what waits for them
  // (a restart's start of the new processes).
  std::map<int, int> exiting_;
  std::map<int, std::vector<runtime::Callback>> after_exits_;
  // A server's resource shared by processor sharing among the work in progress on it (each of n
  // jobs progresses at min(1, units / n) of its exclusive rate): the work's remaining exclusive
  // time, when that was last brought up to date, and the next completion's event. units 0: every
  // job its own.
  struct Shared {
    struct Job {
      double remaining_s = 0;
      runtime::Callback done;
    };
    int units = 1;
    std::vector<Job> active;
    TimeNs updated = 0;
    EventEngine::EventId next;
  };
  std::map<std::pair<Resource, int>, Shared> shared_;
  int checkpoint_server_ = -1;  // the server that wrote the checkpoint last (its page cache)
  std::function<void(int, const runtime::RunnerNotice&)> started_;
  void stop_background(std::size_t flow);

  // Simulated learning (SimEnvOptions::learning). Each worker's step and batch (from
  // step_started and compute); per step, the workers that started it and, once the first worker
  // has its readings, the progress and the samples after it. Every worker reads a step before any
  // reads the next (the step's all-reduce joins them), so the step before is always done.
  struct LearnStep {
    std::set<int> workers;
    double progress = 0, samples = 0;  // after the step
    bool done = false;
  };
  std::vector<LearnStep> learn_steps_;
  std::vector<int> step_of_, batch_of_;
  TimeNs learn_start_ = -1;
  LearnStep& learn_step(int step);
  double progress_before(int step);
};

}  // namespace adaptsim::simulate
