#pragma once
// The live training environment: runtime::TrainingEnv on one real rank. The step loop, the
// system and the seam run on the TCP runtime's event-loop thread (timers to the nanosecond,
// the rank's real TcpTransport); the model's compute runs on a compute thread of its own, as a
// framework's kernels run beside its communication:
//   - compute(): the compute thread starts the step's phases at their absolute deadlines
//     (ComputeEmulator: a sleep or spin on the CPU, the CUDA emulation kernel on a GPU) and posts
//     each reported phase's end to the loop;
//   - compute_until(): the update, likewise;
//   - gradient_norms(): the compute thread computes the squared L2 norms of the real gradients
//     (hw/cuda's CPU kernel), and the step waits for it, as for a GPU kernel;
//   - between_steps(): the compute thread checks every reduced gradient against the exact sum
//     (GradientBuffers) and poisons it, off the loop, so forwarding for other ranks goes on.
// With a Learner (set_learner: the run learns for real, learner.h) the compute is real instead of
// emulated and the deadlines are not used: compute() runs the MLP's forward and backward on the
// rank's shard, each layer reported once its gradient is in the gradient buffers; compute_until()
// applies SGD with the reduced sum / workers; between_steps() evaluates the test set on rank 0 at
// the evaluation points, then every rank all-reduces (MAX) its parameter hash and its negation
// over its transport and fails the run unless every rank holds the same parameters (a cheap,
// exact check: 8 doubles per step; at every step with `verify`, else at the evaluation points);
// readings() gives each step's samples seen, training wall time and the evaluation's test loss
// and accuracy.
// Gradients live in host memory already: copies to and from the "device" are immediate. A
// fused group is copied into a fusion buffer and back for real. There are no GPU collectives.
// A failure on the compute thread fails the rank's transport (every peer fails at once, naming
// it).
//
// Elastic runs (set_elastic, before the run): the process is one worker of a cluster that changes
// (sim/runtime/trainer.h, "Worker-set changes"), and the runtime given to the constructor is its
// own one-rank runtime, for the loop thread, the timeouts and the failure path only. The worker
// ids are the topology's GPUs; the config store, the runners' notices and the address rendezvous
// are the job's FileStore (elastic_store.h). Each cluster version has its own TcpTransport on the
// loop: reset_connections closes the previous version's gracefully, listens on a new port and
// publishes it for the version; in the background, once every member has published (the connect
// timeout bounds it), the full mesh connects with a key derived from the job's secret and the
// version (the version is the connection token: a connection of another version fails its
// handshake). transport(worker) routes by worker id to the current version's ranks; its sends and
// receives wait for the mesh, as KungFu opens connections on first use, so the resize's barrier
// (not the reset) waits for the new processes. The
// model state is real: every tensor's parameters (and optimizer slots) as float32 buffers that the
// workers of the first cluster fill with one known pattern and a new process with NaN; after a
// state broadcast, the next between_steps checks on the compute thread that every element is the
// pattern (the root's state), and fails the run naming the tensor and element otherwise. The
// gradients' exact sums follow the cluster's members. A store that cannot be read, or a cluster
// document that fails validation, leaves the worker at its cluster (said once on stderr; a
// proposal it could not write is written when the store answers again, a notice retried, a lease
// renewed, nobody found dead meanwhile). The
// restart baseline writes and reads the same state through a checkpoint file in the store.

#include <condition_variable>
#include <deque>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "hw/live/compute_emulator.h"
#include "hw/live/elastic_store.h"
#include "hw/live/etcd_store.h"
#include "hw/live/gradient_buffers.h"
#include "hw/live/learner.h"
#include "hw/tcp/runtime.h"
#include "sim/runtime/env.h"

namespace adaptsim::live {

// An elastic run's process (see the top).
struct ElasticProcess {
  std::filesystem::path store_dir;
  int worker = 0;                   // this process's worker id
  std::vector<int> host_of_worker;  // every worker id the topology holds
  std::string bind_host = "127.0.0.1";
  tcp::JobSecret secret;
  // Set when a runner started this process for a new worker (it joins this notice's cluster).
  std::optional<runtime::RunnerNotice> join;
  // The run has worker failures (failure.h): a lost peer is left to the step loop's failure
  // detector instead of failing this process; its lease lives this long.
  bool peers_may_fail = false;
  TimeNs lease_ns = 10 * kNsPerSecond;
  // The config store in etcd at this endpoint (etcd_store.h; job key: the folder's name), with
  // the bulk files in store_dir; none: the folder is the store.
  std::optional<tcp::SocketAddress> etcd;
  // Only measure the start-up (adaptsim-live --measure-start): the process sets up as a joining
  // worker does, then ends before it would connect.
  bool probe_start = false;
};

class LiveEnv final : public runtime::TrainingEnv {
 public:
  // `buffers` may be null (ideal: nothing is communicated or checked). `verify`: check every
  // reduced gradient between steps. The compute emulator is made on the compute thread (a GPU
  // one makes its device current there); its construction errors are thrown here.
  LiveEnv(tcp::Runtime& runtime, GradientBuffers* buffers, bool verify,
          const ComputeEmulatorOptions& compute, std::string* compute_note);
  ~LiveEnv() override;
  LiveEnv(const LiveEnv&) = delete;
  LiveEnv& operator=(const LiveEnv&) = delete;

  // What runs the compute ("sleep", "gpu 0 (NVIDIA ...)").
  std::string compute_description() const { return compute_description_; }
  int verified_steps() const { return verified_steps_; }
  // Stops and joins the compute thread, then makes sure no callback of this environment (a
  // timer, a posted phase end) runs any more on the loop thread: the step loop and system that
  // those callbacks call may then be destroyed. Idempotent; never throws.
  void stop();

  TimeNs now() const override;
  void at(TimeNs when, runtime::Callback task) override;
  int workers() const override {
    return elastic_ ? static_cast<int>(elastic_->host_of_worker.size()) : runtime_.size();
  }
  const std::vector<int>& host_of_worker() const override {
    return elastic_ ? elastic_->host_of_worker : runtime_.host_of_rank();
  }
  const std::vector<int>& local_workers() const override { return local_; }
  void compute(int worker, const runtime::ComputeSchedule& schedule,
               std::function<void(std::size_t)> phase_done) override;
  void compute_until(int worker, TimeNs end_ns, runtime::Callback done) override;
  void copy_to_host(int worker, std::uint64_t bytes, runtime::Callback done) override;
  void copy_to_device(int worker, std::uint64_t bytes, runtime::Callback done) override;
  coll::Transport& transport(int worker) override;
  coll::Workspace gradient(int worker, std::size_t tensor) override;
  coll::Workspace fuse(int worker, const std::vector<std::size_t>& tensors,
                       const std::string& name) override;
  void unfuse(int worker, const std::vector<std::size_t>& tensors) override;
  std::unique_ptr<runtime::GpuCollectives> gpu_collectives(const std::vector<int>& members,
                                                           const train::NcclNet& net) override;
  // With `library`: the MPI library this process runs under (mpi_library.h; MPI kept initialised
  // from an mpirun rendezvous, else InputError), each call bounded by set_mpi_timeout's timeout.
  std::unique_ptr<runtime::MpiCollectives> mpi_collectives(const coll::OmpiOptions& options,
                                                           bool library) override;
  void set_mpi_timeout(TimeNs timeout_ns) { mpi_timeout_ns_ = timeout_ns; }
  void gradient_norms(int worker,
                      std::function<void(double local_sq, double reduced_sq)> done) override;
  void square_gradients(int worker, runtime::Callback done) override;
  coll::Workspace squared_gradient(int worker, std::size_t tensor) override;
  void gradient_variance(int worker, std::function<void(double)> done) override;
  void between_steps(int worker, int step, runtime::Callback done) override;
  // Rank 0 publishes every step it starts to `file` (LiveConfig::progress_file).
  void step_started(int worker, int step) override;
  void readings(int worker, int step, std::map<std::string, double>& out) override;
  void set_progress_file(std::filesystem::path file) { progress_file_ = std::move(file); }
  // Learn mode (see the top), before the run starts: `learner` (outliving the run) replaces the
  // emulated compute; the buffers must be real ones in its layout; `total_steps` and
  // `eval_every` (0: after the last step only) place the evaluations (rank 0).
  void set_learner(Learner* learner, int total_steps, int eval_every);
  // Learn mode, after the run: rank 0's last evaluation (nullopt elsewhere or without one).
  std::optional<learn::Evaluation> last_evaluation() const { return last_eval_; }

  // Set by the caller on the loop thread before the run starts: the transport the rank uses.
  void set_transport(coll::Transport* transport) { transport_ = transport; }

  // Elastic runs, before the run (see the top). `model_elements` per backward-order tensor and
  // `copies` (1 + optimizer slots) size the model state; `first`: the cluster this process starts
  // in (the store's first one, or the notice's).
  void set_elastic(ElasticProcess process, const std::vector<std::uint64_t>& model_elements,
                   std::uint64_t copies, const runtime::ClusterConfig& first,
                   const tcp::TcpTransportOptions& transport_options);
  // Blocking, from the caller's thread: the first cluster's connections and a barrier over them
  // (a joining process connects in its join path instead). Throws RuntimeFailure on a timeout.
  void connect_first(const runtime::ClusterConfig& first, TimeNs timeout_ns);
  // Blocking, after the run: closes the current version's connections gracefully (every peer's
  // goodbye, or `timeout_ns`). Never throws.
  void close_connections(TimeNs timeout_ns);
  const FileStore* store() const { return store_.get(); }

  void store_get(int worker, std::function<void(const runtime::ClusterConfig&)> done) override;
  void store_put(int worker, const runtime::ClusterConfig& cluster,
                 runtime::Callback done) override;
  void notify_runners(int worker, const runtime::RunnerNotice& notice,
                      runtime::Callback done) override;
  void on_worker_started(
      std::function<void(int worker, const runtime::RunnerNotice&)> started) override {
    (void)started;  // a new worker is a new process (ElasticProcess::join), not a callback here
  }
  // The store's notice of `version`; an unavailable store reads as none yet (said once).
  void store_notice(int worker, int version,
                    std::function<void(const std::optional<runtime::RunnerNotice>&)> done) override;
  void stop_worker(int worker) override;
  // A killed worker's process writes what it measured (set_before_kill) and SIGKILLs itself; a
  // silent one hangs (no steps, no lease renewals, its connections open) until the others have
  // dropped it from the cluster, then writes its record and exits quietly.
  void worker_failed(int worker, bool silent) override;
  void set_before_kill(std::function<void()> f) { before_kill_ = std::move(f); }
  // A paused worker's loop thread sleeps through the pause: it runs everything of this process
  // that others could see (timers, sockets, the lease renewal), so nothing shows meanwhile, while
  // the kernel takes and acknowledges what arrives, as for a stopped process (the compute thread
  // is idle between steps). Then the step goes on.
  void pause_worker(int worker, TimeNs duration, runtime::Callback resumed) override;
  // The loop's last lease renewal is further back than a lease lives (or a renewal found it so):
  // the loop did not run meanwhile.
  bool lease_lapsed(int worker) override;
  // On this rank's stderr, as "adaptsim-live: LINE".
  void note(int worker, const std::string& line) override;
  // The lease renewed every lease_ns / 4 on the loop (a file's mtime in the store); a compare-and-
  // swap under the store's lock.
  void store_leases(int worker, std::function<void(const std::vector<int>&)> done) override;
  void store_swap(int worker, int expected_version, const runtime::ClusterConfig& cluster,
                  std::function<void(bool)> done) override;
  bool hosts_new_processes() const override { return false; }
  // The restart baseline's checkpoint: the model state's buffers written to (rank 0), or read
  // from, the store's checkpoint file on the compute thread; a read state is checked like a
  // broadcast one before the next step.
  void write_checkpoint(int worker, std::uint64_t bytes, runtime::Callback done) override;
  void read_checkpoint(int worker, std::uint64_t bytes, runtime::Callback done) override;
  void reset_connections(int worker, const runtime::ClusterConfig& cluster,
                         runtime::Callback done) override;
  coll::Workspace model_state(int worker, std::size_t tensor, std::uint64_t elements,
                              const std::string& name) override;
  void state_received(int worker, int version) override;
  // Learning: the learner's data cursor and samples trained (learner.h).
  std::vector<double> data_position(int worker) const override;
  void set_data_position(int worker, const std::vector<double>& position) override;

 private:
  std::filesystem::path progress_file_;
  using Job = std::function<void(ComputeEmulator&)>;
  void submit(Job job);
  void compute_loop(ComputeEmulatorOptions options);
  // Loop thread: runs `task` on a later turn.
  void post(runtime::Callback task);
  // Whether the test set is evaluated after `step` (by rank 0; every rank checks its parameters).
  bool evaluation_point(int step) const;
  // Learn mode, loop thread: the all-reduce of the parameter hash after `step`.
  void check_parameters(int step, std::uint64_t hash, runtime::Callback done);
  // Elastic runs, loop thread: publishes this worker's address (unless `published`), waits for
  // every member's address of `cluster`, then starts its transport `t` on `listener` (the
  // version's sends and receives wait for its mesh). A store that does not answer is retried.
  void await_addresses(const runtime::ClusterConfig& cluster, tcp::TcpTransport* t,
                       tcp::UniqueFd listener, TimeNs deadline, bool published);
  void say_once(const std::string& line);
  void renew_lease();
  void end_when_dropped();

  // Elastic runs. The transports live on the loop thread; the current one serves transport().
  class WorkerTransport;
  std::optional<ElasticProcess> elastic_;
  std::unique_ptr<FileStore> store_;                   // or an EtcdStore
  std::optional<runtime::ClusterConfig> pending_put_;  // a proposal the store did not take
  tcp::TcpTransportOptions transport_options_;
  std::vector<std::unique_ptr<tcp::TcpTransport>> transports_;
  std::unique_ptr<WorkerTransport> worker_transport_;
  std::optional<runtime::ClusterConfig> last_read_;
  std::vector<std::vector<float>> state_;  // per backward-order tensor
  int state_copies_ = 1;                   // parameters x (1 + optimizer slots)
  void set_members(const runtime::ClusterConfig& cluster);
  void check_state_bytes(std::uint64_t bytes) const;
  // The learner takes the model state's tensors (its parameters and momentum): after a broadcast
  // or a checkpoint's read.
  void state_into_learner();
  int learn_rank_ = 0;  // a learner's rank: in its cluster, or the runtime's
  std::unique_ptr<coll::Transport> check_transport_;  // elastic: the check's, over the cluster
  bool check_state_ = false;                          // the next between_steps checks the state
  bool said_ = false;                                 // a store problem was reported
  std::function<void()> before_kill_;
  bool hung_ = false;         // a silent failure: the lease is no longer renewed
  int start_version_ = 0;     // the cluster version this process started in
  bool lease_taken_ = false;  // renewed once: mark_started told the runner
  TimeNs last_renewal_ = -1;  // when renew_lease last ran (loop thread)
  bool lapse_seen_ = false;   // a renewal came later than a lease lives (lease_lapsed)

  // Learn mode (set_learner). step_ and the step records: loop thread; the evaluation: written
  // on the compute thread before it posts the step's check, read on the loop thread after.
  Learner* learner_ = nullptr;
  int total_steps_ = 0;
  int eval_every_ = 0;
  int step_ = 0;
  TimeNs first_start_ = -1;
  TimeNs eval_ns_ = 0;  // the evaluations' time so far (not training time)
  std::map<int, double> wall_s_;
  std::map<int, learn::Evaluation> evals_;
  std::optional<learn::Evaluation> last_eval_;
  std::unique_ptr<coll::AllReduce> check_;
  std::vector<double> check_in_, check_out_;

  tcp::Runtime& runtime_;
  GradientBuffers* buffers_;
  bool verify_;
  std::vector<int> local_;
  coll::Transport* transport_ = nullptr;
  std::vector<float> fusion_;  // the fusion buffer, grown on demand
  TimeNs mpi_timeout_ns_ = 60 * kNsPerSecond;
  // Loop thread: cleared by stop(); every callback the environment runs checks it first.
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
  bool detached_ = false;
  int verified_steps_ = 0;  // compute thread (loop thread with a learner), read after stop()

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> jobs_;  // guarded by mu_
  bool stop_ = false;     // guarded by mu_
  bool ready_ = false;    // guarded by mu_: the emulator exists (or failed)
  std::string start_error_;
  std::string compute_description_;
  std::string compute_note_;
  std::thread thread_;
};

}  // namespace adaptsim::live
