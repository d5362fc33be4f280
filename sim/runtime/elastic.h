#pragma once
// A worker set that changes while the job runs (KUNGFU.md 4), in both modes: what a scenario asks
// of it, the cluster as the config store holds it, and the order KungFu adds workers in. The
// protocol itself is the step loop's (trainer.h, "Worker-set changes"); the environment provides
// the config store, the runners that start and stop processes, connection resets and checkpoints
// (env.h).

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "sim/core/time.h"

namespace adaptsim::io {
class MapReader;
}

namespace adaptsim::runtime {

// The cluster as the config store holds it (KungFu's plan.Cluster with its version): a put makes
// the next version, so two reads of the same version hold the same workers. Workers are the
// environment's worker ids, in rank order.
struct ClusterConfig {
  int version = 0;
  std::vector<int> workers;
  bool operator==(const ClusterConfig&) const = default;
};

// What every host's runner is told of a new cluster (TrainingEnv::notify_runners), and what a
// process it starts for a new worker is handed (TrainingEnv::on_worker_started): the cluster,
// whether every worker restarts, the step the change follows, when the first worker told the
// runners (the new process's start is timed from there; the monotonic clock, which every process of
// a machine shares), and the job's agreed history so far (Trainer::agreed_state: a new process
// joins with the same observations and decisions as the running workers; empty where the new worker
// shares the step loop with them, as in a simulation).
struct RunnerNotice {
  ClusterConfig cluster;
  bool restart = false;
  int step = 0;
  TimeNs notified_at = 0;
  // When rank 0's step boundary began the change (0: unknown to the notifier), for the new
  // processes' `resize.total` reading.
  TimeNs resize_begin = 0;
  std::string agreed_state;
};

enum class ResizeMechanism {
  // KungFu's elastic scaling: staying workers keep running, new processes join and receive the
  // model state by broadcast (KUNGFU.md 4).
  kKungFu,
  // The baseline: every worker stops after rank 0 has written a checkpoint; the new cluster's
  // processes all start, read it and meet.
  kRestart,
};

// The `elastic:` map of a training workload.
struct ElasticSpec {
  ResizeMechanism mechanism = ResizeMechanism::kKungFu;
  // The cluster's size at the start (0: every worker of the topology).
  int initial_workers = 0;
  // KungFu's consensus retry: workers that read different clusters from the store wait and read
  // again (peer.go, ResizeClusterFromURL's consistency loop: time.Sleep(50 * time.Millisecond)).
  TimeNs retry_ns = 50 * kNsPerMs;
  // The model state a new worker receives (or a checkpoint holds): the parameters and this many
  // optimizer slots per parameter (SGD 0, momentum 1, Adam 2). Default 0: the plain SGD optimizer
  // of tf_cnn_benchmarks' default (--optimizer=sgd), which KungFu's benchmarks use.
  int optimizer_slots = 0;
  // A worker whose step has made no progress for this long looks for failed workers: those whose
  // lease in the config store has lapsed (a lease lives this long after its process last ran).
  // The scenario's choice; it must exceed the longest step and resize.
  TimeNs failure_timeout_ns = 10 * kNsPerSecond;
  // Emulated framework start-up per new process, on top of the process's own start (TensorFlow
  // graph construction and session creation in KungFu's workers; a scenario states its source).
  // Reported apart from the process start.
  TimeNs framework_init_ns = 0;
  // Simulated costs. The config store's read and write service times: etcd v2.1.0's published
  // single-client benchmark (etcd.io/docs/v3.3/benchmarks/etcd-2-1-0-alpha-benchmarks: 3 members
  // on GCE n1-highcpu-2 with local SSDs) reads 1534 keys/s and writes 60 keys/s, so one request
  // takes 1/1534 s = 652 us and 1/60 s = 16.7 ms, the network round trip included.
  TimeNs store_read_ns = 652 * kNsPerUs;
  TimeNs store_write_ns = 16667 * kNsPerUs;
  // A new worker process's start until it can connect: fork, exec, the dynamic loader and the
  // runtime's set-up. [M] `adaptsim-live --help` run 30 times by Python's subprocess.run on the
  // 2-core development machine: median 22.8 ms (min 21.0) from the call to the exit.
  TimeNs process_start_ns = 23 * kNsPerMs;
  // The CPU cores of a server that its new processes' start-ups share (0: each start-up has a core
  // of its own). A start-up is CPU work: [M] `adaptsim-live r50.yaml --measure-start 10
  // --concurrent K` (docs/figures.md, Figure 7) on the 2-core development machine: one ResNet-50
  // worker's start-up took 192.1 ms of wall time and 191.2 ms of its process's CPU time (medians);
  // two at once each 194.9 ms (a core each); three at once 315.9 ms (min 204.7, max 427.7; three on
  // two cores by processor sharing: 3 x 192 / 2 = 288 ms).
  int server_cores = 0;
  // A stopped worker's process exit as its runner sees it (its model state and buffers freed, the
  // process reaped). The restart baseline's runner starts the new processes only once the old ones
  // on its server have exited, as adaptsim-live's launcher waits for them. Exits at once overlap
  // (measured: `adaptsim-live CONFIG --measure-start N [--concurrent K]` prints the probes' exit,
  // from the last set-up done to all reaped; on the 2-core machine 3 at once took no longer than
  // one). 0: instant (a scenario states its source).
  TimeNs process_exit_ns = 0;
  // Checkpoint writes and reads (the restart baseline): a local SSD's sequential throughput. [U]
  // Samsung 860 EVO's datasheet: 520 MB/s read, 500 MB/s write (SATA 6 Gbit/s).
  double disk_write_Bps = 500e6;
  double disk_read_Bps = 520e6;
  // The page cache (unset, 0: none, every checkpoint transfer at the disk's rates): a checkpoint is
  // written into memory at cache_write_Bps (the kernel writes it back to the disk behind the
  // writer, as it does while the dirty data stays under vm.dirty_ratio) and read on the server
  // that wrote it at cache_read_Bps; both are memory copies, CPU work that shares the server's
  // cores (server_cores). Readers on other servers read their disk. A scenario states its source
  // (`adaptsim-live CONFIG --measure-checkpoint N` measures both on a machine).
  double cache_write_Bps = 0;
  double cache_read_Bps = 0;
  // The first cluster's workers, in rank order, where something outside the job chose them (a
  // cluster scheduler placing a job, sim/simulate/simulate_jobs.h); empty: the first
  // initial_workers of the growth order. Not a scenario key.
  std::vector<int> initial_cluster;
  bool operator==(const ElasticSpec&) const = default;
};

// Reads the `elastic:` map (file:line:key on bad input). `capacity` is the topology's workers:
// initial_workers must lie in 1..capacity.
ElasticSpec read_elastic(io::MapReader& r, int capacity);

// KungFu's growOne (plan/cluster.go, Cluster.Resize): a new worker goes to the host with the
// fewest workers (the lowest host id among equals), on its next free GPU. The order in which the
// environment's workers join a cluster grown from nothing: the first cluster of n workers is its
// first n; later sizes come from resize_cluster (below).
std::vector<int> growth_order(const std::vector<int>& host_of_worker);

// The order in which a run's workers join (the Trainer's, the simulated store's): the spec's
// initial_cluster first, then the rest of growth_order; growth_order without one.
std::vector<int> join_order(const ElasticSpec& spec, const std::vector<int>& host_of_worker);
// The first cluster's size: initial_cluster's, initial_workers, or every worker (`workers`).
int initial_size(const ElasticSpec& spec, int workers);

// The cluster of the first `size` workers of `order`, at `version`.
ClusterConfig cluster_of(const std::vector<int>& order, int size, int version);
// KungFu's Cluster.Resize(size) of `current`, as the next version: its first `size` workers, or
// all of them and then the workers of `order` it lacks, in that order (growOne), so staying workers
// keep their ranks and rank 0 stays (KungFu cannot hand the state over in a full update).
ClusterConfig resize_cluster(const ClusterConfig& current, const std::vector<int>& order, int size);

// A runner's part of a notice (both modes' runners act by it): the workers of `notice.cluster` on
// its host (`on_host`) that get a new process, in the cluster's order: every one with a restart
// (the old processes have stopped), else each that has no running process that stays in the
// cluster (`has_process`).
std::vector<int> workers_to_start(const RunnerNotice& notice,
                                  const std::function<bool(int)>& on_host,
                                  const std::function<bool(int)>& has_process);

}  // namespace adaptsim::runtime
