#pragma once
// Many training jobs on one cluster: a job trace replayed under a cluster scheduler
// (runtime/job_scheduler.h). Every job is the one training runtime (trainer.h, KungFu's system)
// over its own SimEnv, and every SimEnv sits on one shared SimCluster: one event engine, one flow
// model, one simulated transport, so the jobs' traffic contends on the same links. A job ends once
// it has trained on its samples (TrainerOptions::stop_after_samples) at whatever sizes it ran.
//
// The scheduler runs when a job arrives, when one ends and when a GPU a shrinking job gave up is
// free (its worker's process stopped). A job it starts gets GPUs placed near each other (below);
// a running job it resizes is told through its config store (SimEnv::propose_cluster): the job
// resizes at its next step boundary by KungFu's protocol, paying what that costs (the store's
// reads and consensus, the runners, process start-up, new connections, the model state's
// broadcast), so an elastic policy's growth is neither free nor instant. GPUs a job is growing
// into are its own from the proposal on; GPUs it leaves are free once their workers stopped.
//
// A job's first processes start before its step 0 as a resize's new ones do: the process's
// start-up and the framework's (ElasticSpec::process_start_ns, framework_init_ns), all at once;
// its GPUs are its own from then on, and its completion time counts them.
//
// Placement: a job's new GPUs are free GPUs of the servers it already runs on first, then of the
// servers with the most free GPUs (ties by server id), each server's in rank order: a job
// spreads over as few servers as the free GPUs allow.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "sim/io/job_trace.h"
#include "sim/runtime/elastic.h"
#include "sim/runtime/job_scheduler.h"
#include "sim/runtime/system.h"
#include "sim/simulate/sim_env.h"
#include "sim/topo/topology.h"
#include "sim/train/compute_profile.h"
#include "sim/train/model_zoo.h"

namespace adaptsim::simulate {

struct JobsOptions {
  // The cluster's: sharing, share_cv, seed, the host transport, NCCL's constants (arch), the
  // gradients' element size. Its `elastic` is ignored: the resize costs are `elastic` below.
  SimEnvOptions cluster;
  runtime::ElasticSpec elastic;  // every job's resize costs (mechanism kungfu)
  runtime::SystemConfig system;  // every job's system (kungfu)
  int batch_per_gpu = 32;        // every job's
  // A trace's model by name (the zoo's), and its compute split at a batch per GPU (a device
  // profile's, train::compute_profile), with the jitter's coefficient of variation.
  std::function<const train::Model&(const std::string& name)> model = train::model;
  std::function<train::ComputeProfile(const train::Model& model, int batch)> compute;
  double step_time_cv = 0;
};

struct JobOutcome {
  std::string id;
  std::string model;
  int requested = 0;
  TimeNs submit = 0, start = 0, end = 0;
  double samples = 0;  // trained (the last step may pass the trace's)
  int steps = 0;
  int min_gpus = 0, max_gpus = 0;  // over its steps
  int resizes = 0;                 // the scheduler's changes of its size
  double step_mean_s = 0;          // over its steps
};

// The cluster after a scheduling change: GPUs held by jobs, jobs running and queued.
struct ClusterSample {
  TimeNs at = 0;
  int allocated_gpus = 0;
  int running = 0;
  int queued = 0;
};

struct SimulatedJobs {
  std::vector<JobOutcome> jobs;  // in the trace's order
  std::vector<ClusterSample> samples;
  std::uint64_t events = 0;
};

// Throws RuntimeFailure when a job never finished (a scheduler that starves it).
SimulatedJobs simulate_jobs(const topo::Topology& topology, const std::vector<io::TraceJob>& trace,
                            const runtime::JobScheduler& scheduler, const JobsOptions& options);

}  // namespace adaptsim::simulate
