#pragma once
// The step loop of data-parallel training, written once against TrainingEnv: the simulator runs
// it over the event engine and the flow model, a live rank over its real runtime.
//
// Each worker, each step: forward (compute), then backward layer by layer in backward order; when
// a layer finishes, its gradient tensors go to the system, which overlaps their communication
// with the rest of backward. The step ends when backward has finished, every gradient is reduced
// and the optimizer update has run. Compute times come from a compute profile (forward, each
// backward layer, the update) for the worker's current batch, scaled per (worker, step) by a
// seeded jitter factor N(1, cv) clamped at 0.5.
//
// Measurements per worker and step: duration; exposed time after backward with communication in
// flight (link) and with nothing in flight (wait); compute = duration - exposed; the bytes of
// gradient the worker all-reduced and the time it had communication in flight. When a monitor
// asks for the gradients' norms, a norm kernel over the local and the reduced gradients runs
// before the update (TrainingEnv::gradient_norms): compute time of the step.
//
// Step boundaries: without a seam (no policy, no monitor) the next step starts at once. With one,
// the worker first agrees on the step with every other worker (an all-reduce of its measurements
// and its vote named "adaptsim:step:<k>" over its transport, a STAR rooted at rank 0, charged like
// any other collective), then the monitors and the policy run on the agreed observation, the
// decision is applied, and the next step starts with it. Every worker decides the same. A strategy
// change runs KungFu's SetGlobalStrategy (session/adaptation.go) after the agreement, which was
// its first barrier: a consensus all-reduce of the new strategy's digest
// ("adaptsim:switch:<k>:consensus"; a worker that disagrees fails the run), the swap, and a
// barrier ("adaptsim:switch:<k>:barrier"). The connections are a full mesh in both modes, so the
// new strategy opens none. All of it is the next step's time.
//
// Worker-set changes (TrainerOptions::elastic; elastic.h). The step loop keeps each worker's state
// by its environment worker id; a cluster version gives the workers ranks (a policy's size is
// KungFu's Cluster.Resize of the current cluster, elastic.h resize_cluster: truncated, or grown in
// the growth order, so a worker keeps its rank while it stays and rank 0 stays), and each
// version has its own view of the environment (cluster_view.h: its transports carry the version
// in every message name), its own system (KungFu builds a new session) and its own agreement.
// With the KungFu mechanism, after every step's agreement each worker reads the config store and
// agrees on the version it read with a consensus (an all-reduce of the version with MIN and one
// with MAX, KungFu's BytesConsensus), waiting ElasticSpec::retry_ns and reading again until every
// worker read the same; a policy's new size is first written to the store by rank 0 (the next
// version, KungFu's propose_new_size). When the agreed version is new: a second consensus and
// every worker notifies the runners (propose); a worker the new cluster no longer holds stops;
// the others reset their connections, switch to the new version and meet the new workers at a
// barrier; then an all-reduce (MAX) of the trained steps and the batch (ElasticHook's data offset
// agreement) and the broadcast of the model state from rank 0 over the strategy's first broadcast
// graph (KungFu's BroadcastGlobalVariablesOp, session.Broadcast). A new worker's process starts
// (the runner, TrainingEnv::notify_runners), runs the emulated framework start-up
// (ElasticSpec::framework_init_ns), opens its connections and joins at the barrier. With the
// restart mechanism: rank 0 writes a checkpoint, every worker meets at a barrier and stops, the new
// cluster's processes all start, read the checkpoint, connect and meet at a barrier. Every phase
// is timed, the slowest worker's time as the step's reading "resize.<phase>_s" (a new worker's
// phases "resize.join.<phase>_s"; "resize.total_s" from rank 0's step boundary until the last
// worker starts the next step; "elastic.check_s", the store read and consensus of every step) and
// every worker's as timeline spans. The resize is the boundary's, not the next step's time.
//
// Failures (TrainerOptions::failures; failure.h): a failing worker stops as it would start its
// step. Every other worker's step then blocks; a worker whose progress (step starts and resizes)
// has not moved for ElasticSpec::failure_timeout_ns reads the store's leases, and once a
// cluster member's lease has lapsed (retrying every retry_ns until one has), swaps in the next
// version without the lapsed workers (compare-and-swap: the first survivor's swap wins), reads it,
// abandons the step it was in (its pending callbacks belong to an old epoch and do nothing),
// resets its connections and joins the survivors as a resize does: barrier, offset agreement
// (MAX of the step each is in: the last consistent step is the one before), state broadcast from
// the new rank 0; then it redoes the step. Readings on that step: "failure.detect_s" (from the
// step's start to the swap read back) and the resize phases.
// A worker that pauses (failure.h) starts its step once it runs again. Before each step a worker
// whose own lease lapsed (TrainingEnv::lease_lapsed) reads the store, and so does a watchdog that
// finds every member of the worker's version alive (the others may run on in a newer one): a
// newer cluster without it means it was dropped, and it leaves, as a worker that a shrink removes
// does (KungFu's detached peer), with a note; the survivors' training stands. A newer cluster that
// holds it again two or more versions past its own (the others dropped it and then grew back
// while it did not run; its runner, seeing its process, started none) it joins as a process the
// runner started would: it reads that version's notice from the store (TrainingEnv::store_notice:
// the step the version follows and the agreed history), connects, meets the others at the
// version's barrier, agrees on the offset and receives the state broadcast ("resize.join.notice",
// then the joining phases).

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "sim/coll/strategy.h"
#include "sim/runtime/cluster_view.h"
#include "sim/runtime/elastic.h"
#include "sim/runtime/env.h"
#include "sim/runtime/failure.h"
#include "sim/runtime/policy.h"
#include "sim/runtime/straggler.h"
#include "sim/runtime/system.h"
#include "sim/runtime/timeline.h"
#include "sim/runtime/training_result.h"
#include "sim/train/compute_profile.h"
#include "sim/train/model_zoo.h"

namespace adaptsim::runtime {

struct TrainerOptions {
  int batch_per_gpu = 32;
  int warmup_steps = 1;  // excluded from the statistics
  int measured_steps = 5;
  std::uint64_t seed = 1;
  double step_time_cv = 0;  // the jitter's coefficient of variation (0: none)
  std::size_t gradient_element_bytes = 4;
  // The compute split of one worker at a batch size, without jitter. Called for the initial batch
  // and for every batch a policy chooses.
  std::function<train::ComputeProfile(int batch_per_gpu)> compute;
  // Where to record each local worker's phases (timeline.h); null: not recorded.
  Timeline* timeline = nullptr;
  // A worker set that changes (elastic.h); with it, `make_system` builds each version's system
  // (the one given to the Trainer is not used).
  std::optional<ElasticSpec> elastic;
  std::function<std::unique_ptr<System>()> make_system;
  // Workers whose compute is slower from a step on (straggler.h; the NIC part is the
  // environment's).
  std::vector<Straggler> stragglers;
  // Workers that die at a step (failure.h; elastic runs with the KungFu mechanism).
  std::vector<WorkerFailure> failures;
  // Elastic runs, a process a runner started for a new worker (a live joiner): the environment's
  // one local worker joins the cluster of this notice instead of starting at step 0.
  std::optional<RunnerNotice> join;
  // The samples stop (0: none; elastic runs only, whose system's loop ends with the step loop):
  // the run ends after the first step at whose end the agreed samples (each step's workers x
  // batch per GPU, from the step agreement) reach this many; warmup_steps + measured_steps is
  // then the most it may run. A job of a cluster trace runs for its samples, whatever sizes it
  // runs at (simulate_jobs.h).
  double stop_after_samples = 0;
};

// What a run measured, before it is summarized: per step and per worker, as the local workers saw
// it (Trainer::record), or added up over every worker of the run. Live elastic runs merge their
// processes' records (merge_records): a worker that left took its measurements with it otherwise.
struct RunRecord {
  int warmup_steps = 0;
  int total_steps = 0;
  int workers = 0;  // the environment's (every worker a cluster may hold)
  bool elastic = false;
  // Per step: the sum over workers of their durations; what every worker ran with and the decision
  // taken after it; each worker's all-reduced bytes; the readings; the cluster's size (elastic).
  std::vector<double> step_sum_s;
  std::vector<int> step_batch;
  std::vector<std::string> step_strategy;
  std::vector<std::string> step_decision;
  std::vector<double> step_bytes;
  std::vector<std::map<std::string, double>> step_readings;
  std::vector<int> step_workers;
  // Sums over measured worker-steps, their count, and each worker's mean measured step (0: none).
  double compute_s = 0, link_s = 0, wait_s = 0, measured = 0;
  std::vector<double> worker_step_mean_s;
};
// Adds `other` (the same run, other workers) into `into`: durations, sums and counts add up; what
// every worker agreed on is taken from whichever record has it; a reading is the larger of the
// two (the phases' readings are the slowest worker's). Throws std::invalid_argument when the two
// are not of one run's shape.
void merge_records(RunRecord& into, const RunRecord& other);
// The result of a whole run's record. Throws RuntimeFailure when an elastic run has a step that no
// worker ran (every worker of its cluster failed).
TrainingResult summarize_record(const RunRecord& record);

// The simulator's per-(worker, step) jitter factor: Rng::derive(seed, worker * 1000003 + step),
// N(1, cv) clamped at 0.5; 1 without jitter.
double step_jitter(std::uint64_t seed, double cv, int worker, int step);

class Trainer final : public StepSink {
 public:
  // The environment, system and seam outlive the trainer. `seam` may be empty.
  Trainer(TrainingEnv& env, const train::Model& model, System& system, Seam& seam,
          TrainerOptions options);

  // Attaches the system and starts every local worker's first step (all at env.now()).
  void start();
  // Whether every local worker has run its last step.
  bool finished() const {
    return options_.elastic ? running_ == 0 && starting_.empty()
                            : finished_workers_ == local_.size();
  }
  int total_steps() const { return total_steps_; }

  // The local workers' sums, to be added over every worker of the run (locally when every worker
  // is local, by an all-reduce live), then summarized.
  std::vector<double> local_sums() const;
  // The result from the sums over every worker (the layout of local_sums).
  TrainingResult summarize(const std::vector<double>& sums) const;
  // The local workers' record (what summarize reads from local_sums and the step loop's copies).
  RunRecord record() const;
  // The agreed history (every worker's observations and decisions so far) as text, for a new
  // process of the run (RunnerNotice::agreed_state).
  std::string agreed_state() const;

  // Called on every reduced gradient and after every step of a local worker (a live run's
  // watchdog restarts its timeout; it checks finished()).
  void set_progress(Callback progress) { progress_ = std::move(progress); }

  // One line on what the local workers still wait for (a live run's timeout message).
  std::string describe_pending() const;

  // StepSink
  void gradient_reduced(int worker, std::size_t tensor) override;
  void activity(int worker, int delta) override;

 private:
  struct Worker {
    int step = 0;
    int batch = 0;
    TimeNs start = 0;       // the step's clock: the end of the previous step's boundary checks
    TimeNs checked_at = 0;  // when between_steps finished (live checks are not step time)
    TimeNs backward_end = -1;
    std::size_t reduced = 0;
    std::vector<bool> reduced_tensor;
    double jitter = 1;
    const train::ComputeProfile* profile = nullptr;
    int in_flight = 0;
    // Exposed-time accounting since backward ended.
    TimeNs accounted_until = 0;
    TimeNs exposed_link = 0;
    TimeNs exposed_wait = 0;
    TimeNs comm_since = 0;   // start of the current interval with communication in flight
    TimeNs comm_ns = 0;      // this step's time with communication in flight
    TimeNs comm_first = -1;  // this step's first transfer start and last transfer end
    TimeNs comm_last = -1;
    bool updating = false;   // in the update or a monitor's kernel: compute time, not exposed
    bool finishing = false;  // every gradient reduced and backward done: the step is finishing
    // Sums over measured steps.
    double compute_s = 0, link_s = 0, wait_s = 0, step_sum_s = 0;
    int measured = 0;
    std::vector<double> agree_in, agree_out;        // the step agreement's buffers
    std::vector<LocalStep> own;                     // what this worker measured of its steps
    double grad_sq_local = 0, grad_sq_reduced = 0;  // this step's norms, when monitors ask
    double grad_variance = 0;                       // and its gradient variance
    // Timeline bookkeeping (options.timeline): the planned end of forward, the end of the last
    // reported compute phase, and when each gradient was handed to the system.
    TimeNs compute_start = 0;
    TimeNs forward_end = 0;
    TimeNs phase_at = -1;
    std::vector<TimeNs> ready_at;
    // Elastic runs: the cluster version the worker runs in, the cluster it last read from the
    // store, and where it is in a resize.
    int version = 0;
    ClusterConfig read;
    TimeNs check_begin = 0;
    bool joining = false;    // a new process on its way into the cluster
    std::string waiting_at;  // the control collective (consensus, barrier) it waits at
    // Failures: the worker's process died; `epoch` counts the recoveries it went through (a
    // callback of an abandoned attempt finds another epoch and does nothing); `progress` counts
    // its step starts and resizes (the failure watchdog's clock).
    bool dead = false;
    bool paused = false;  // its pause (failure.h) has happened
    int epoch = 0;
    std::uint64_t progress = 0;
    TimeNs step_begin = 0;
  };

  // Records [begin, end) for worker w when a timeline is kept (names are copied only then).
  void span(int w, std::string_view name, const char* category, TimeNs begin, TimeNs end,
            bool overlapping = false, std::uint64_t id = 0);

  void start_step(int w);
  void maybe_finish(int w);
  void monitor_norms(int w);
  void monitor_variance(int w);
  void update(int w);
  void end_step(int w);
  void after_step(int w, int step);
  void next_or_finish(int w);
  // Whether every step ends with the step agreement (a seam or an elastic run).
  bool agrees() const { return !seam_.empty() || options_.elastic.has_value(); }
  // The samples stop reached at `step`: it is the last (the per-step records end there).
  void end_after(int step);
  void agree(int w, int step);
  void on_agreed(int w, int step);
  void switch_strategy(int w, int step);
  void control(int w, const std::string& name, Callback done,
               coll::ReduceOp op = coll::ReduceOp::kSum);
  // Elastic runs (trainer_resize.cpp).
  TrainingEnv& env(int w);
  System& system(int w);
  // Worker w's rank in the cluster version it runs in (w itself without elastic runs).
  int rank(int w) const;
  void ensure_version(const ClusterConfig& cluster);
  void elastic_boundary(int w, int step);
  void read_cluster(int w, int step, int attempt);
  void consensus(int w, const std::string& name, double digest, std::function<void(bool)> done);
  void resize(int w, int step);
  void switch_version(int w, int step, const ClusterConfig& cluster);
  void worker_started(int w, const RunnerNotice& notice);
  void enter(int w, const RunnerNotice& notice, bool started);
  // A new process takes the agreed history of `notice` where its own is shorter.
  void adopt_agreed_state(const RunnerNotice& notice);
  RunnerNotice notice_for(const ClusterConfig& cluster, int step, bool restart);
  void join_cluster(int w);
  void broadcast_state(int w, Callback done);
  void restart(int w, int step, int size);
  void resized(int w);
  void leave(int w);
  // Worker w's connections of the version it is in close (ClusterView::close): it moves on.
  void close_version(int w);
  // Failures (trainer_resize.cpp): the watchdog of worker w's progress, the lease check, and the
  // recovery into the cluster of the survivors.
  void watch(int w);
  void suspect(int w, std::uint64_t progress);
  void recover(int w, std::uint64_t progress);
  bool left_behind(int w, const ClusterConfig& stored);
  void rejoin(int w, const ClusterConfig& stored);
  void abandon_step(int w);
  void dropped(int w, const ClusterConfig& cluster);
  // Records [begin, now) of worker w's resize phase `key` after step `step`: a timeline span, and
  // the step's reading `key`_s, the slowest worker's.
  void phase(int w, int step, const std::string& key, TimeNs begin);
  void apply(int w, const Decision& d);
  void account(Worker& s);
  const train::ComputeProfile& profile_for(int batch);

  TrainingEnv& env_;
  const train::Model& model_;
  System& system_;
  Seam& seam_;
  TrainerOptions options_;
  std::vector<std::uint64_t> tensor_bytes_;
  double gradient_bytes_ = 0;  // their sum: what one worker all-reduces in a step
  std::vector<int> local_;
  std::vector<Worker> state_;  // indexed by worker; only local ones are used
  std::map<int, train::ComputeProfile> profiles_;
  int total_steps_ = 0;
  double samples_done_ = 0;  // the agreed samples of the steps so far (the samples stop)
  std::size_t finished_workers_ = 0;
  // Per step: sum over local workers of their durations, in the order they ended (the
  // simulator's historic summation order, kept so that results stay byte-identical).
  std::vector<double> step_sum_s_;
  // Per step: what every worker ran with, and the decision taken after it.
  std::vector<int> step_batch_;
  std::vector<std::string> step_strategy_;
  std::vector<std::string> step_decision_;
  std::vector<double> step_bytes_;  // per worker, all-reduced in the step
  std::vector<std::map<std::string, double>> step_readings_;
  // The agreed history (every worker's copy is the same) and the decision after each step.
  std::vector<StepObservation> history_;
  std::vector<Decision> decisions_;
  std::unique_ptr<coll::AllReduce> agreement_;  // a STAR rooted at rank 0
  Callback progress_;
  // Elastic runs: the growth order (rank -> environment worker), each version's view, system,
  // agreement and broadcast graphs; workers running and processes starting; per step, the
  // cluster's size; the step a resize happened after (per version) and the restart's step.
  std::vector<int> order_;
  std::map<int, std::unique_ptr<ClusterView>> views_;
  // Each version's system reports by rank: these turn its ranks back into worker ids.
  std::map<int, std::unique_ptr<StepSink>> sinks_;
  std::map<int, std::unique_ptr<System>> systems_;
  std::map<int, std::unique_ptr<coll::AllReduce>> agreements_;
  std::map<int, std::vector<coll::GraphPair>> broadcast_pairs_;
  std::map<int, int> resize_step_;           // version -> the step it follows
  std::map<int, TimeNs> resize_begin_;       // version -> when rank 0's boundary began
  std::map<int, TimeNs> notified_at_;        // version -> the first notice to the runners
  std::map<int, std::string> agreed_state_;  // version -> its notice's agreed history
  int running_ = 0;
  std::set<int> starting_;  // local workers whose process a resize or restart awaits
  std::uint64_t state_bytes_ = 0;
  std::vector<int> step_workers_;
};

// What both modes build over their environment: the system, the policy and monitors, and the
// step loop that drives them (start it with trainer().start()).
class TrainingRun {
 public:
  // An elastic run builds a system per cluster version, of `system`'s configuration.
  static TrainerOptions with_system_factory(TrainerOptions options, const SystemConfig& system) {
    if (options.elastic && !options.make_system)
      options.make_system = [system] { return make_system(system); };
    return options;
  }
  TrainingRun(TrainingEnv& env, const train::Model& model, const SystemConfig& system,
              const SeamSpec& seam, TrainerOptions options)
      : system_(make_system(system)),
        seam_(make_seam(seam)),
        trainer_(env, model, *system_, seam_, with_system_factory(std::move(options), system)) {}
  Trainer& trainer() { return trainer_; }

 private:
  std::unique_ptr<System> system_;
  Seam seam_;
  Trainer trainer_;
};

}  // namespace adaptsim::runtime
