#pragma once
// The world a training run executes in, as the one training runtime sees it: the step loop
// (trainer.h), the compared systems (system.h), the monitors and the policy are written against
// this interface only, once, and run unchanged in both modes:
//   simulated  sim/simulate/sim_env.h: the event engine, the flow model, the simulated transport
//              and NCCL's cost model;
//   live       hw/live/live_env.h: the TCP runtime's event loop and transport, a compute thread
//              that emulates the model's compute (CPU or GPU), real gradient buffers.
//
// Threading: every method is called on the environment's one thread (the simulation loop, or the
// live runtime's event loop), and every callback runs there too, never inside the call that
// registered it (except where a method says otherwise). The runtime's state needs no locks.
//
// Workers are numbered 0..workers()-1 (a worker is a rank: one GPU and its host-side process).
// One environment drives local_workers(): every worker in a simulation, one rank in a live
// process. A method taking a worker may only be called for a local one.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sim/coll/allreduce.h"
#include "sim/coll/transport.h"
#include "sim/core/time.h"
#include "sim/runtime/elastic.h"
#include "sim/runtime/mpi_collectives.h"
#include "sim/train/nccl_model.h"

namespace adaptsim::runtime {

using Callback = std::function<void()>;

// One step's compute on one worker, as absolute deadlines from the step's start: phase 0 is the
// forward pass, phase l + 1 backward layer l (backward order). Deadlines are non-decreasing and
// absolute, so hand-over costs do not accumulate over the layers.
struct ComputeSchedule {
  TimeNs start_ns = 0;
  std::vector<TimeNs> phase_end_ns;
  // The phases whose end the runtime wants to hear of (their gradients go to the system), in
  // increasing order; the environment reports each one once it has completed.
  std::vector<std::size_t> reported;
  // The step's batch per worker (a policy may change it between steps): what an environment that
  // computes for real takes from its data (live learning); the deadlines above already hold it.
  int batch_per_gpu = 0;
};

// A GPU collective communicator (NCCL) over a group of workers: collectives block until every
// member launched them and run one at a time in launch order.
class GpuCollectives {
 public:
  virtual ~GpuCollectives() = default;
  // Member `member` (index into the group) launches its next collective; every member launches
  // the same sequence. `done` runs for that member once the collective completed.
  virtual void launch(int member, train::NcclColl coll, std::uint64_t bytes, Callback done) = 0;
};

class TrainingEnv {
 public:
  virtual ~TrainingEnv() = default;

  // Clock and timers (ns; the simulation's clock, or the monotonic clock live).
  virtual TimeNs now() const = 0;
  // Runs `task` at `when` (>= now()); tasks due at the same time run in the order registered.
  virtual void at(TimeNs when, Callback task) = 0;

  // Membership: the cluster's size, each worker's host (same value = same machine), and the
  // workers this environment drives.
  virtual int workers() const = 0;
  virtual const std::vector<int>& host_of_worker() const = 0;
  virtual const std::vector<int>& local_workers() const = 0;

  // Compute: runs one step's forward and backward phases of `worker` (phase_done(i) for each
  // reported phase i, in order), then, when asked, the update until an absolute deadline.
  virtual void compute(int worker, const ComputeSchedule& schedule,
                       std::function<void(std::size_t phase)> phase_done) = 0;
  virtual void compute_until(int worker, TimeNs end_ns, Callback done) = 0;

  // Copies of gradient bytes between the worker's GPU and its host memory (host-staged systems:
  // KungFu's CPU collectives, Horovod's MPI path).
  virtual void copy_to_host(int worker, std::uint64_t bytes, Callback done) = 0;
  virtual void copy_to_device(int worker, std::uint64_t bytes, Callback done) = 0;

  // The worker's host-side transport (TCP connections to every peer).
  virtual coll::Transport& transport(int worker) = 0;

  // The all-reduce of `tensor`'s gradient on `worker`: named after the parameter, float32 sum,
  // the worker's gradient -> the reduced gradient (size-only when simulated).
  virtual coll::Workspace gradient(int worker, std::size_t tensor) = 0;
  // A fusion buffer holding `tensors`' gradients back to back (copied in), named `name`; unfuse
  // copies the reduced values back to each tensor's reduced gradient. One fused group per worker
  // at a time.
  virtual coll::Workspace fuse(int worker, const std::vector<std::size_t>& tensors,
                               const std::string& name) = 0;
  virtual void unfuse(int worker, const std::vector<std::size_t>& tensors) = 0;

  // A GPU collective communicator over `members` (workers, in member order), crossing servers by
  // `net`. Throws InputError where the environment has none (live training over TCP).
  virtual std::unique_ptr<GpuCollectives> gpu_collectives(const std::vector<int>& members,
                                                          const train::NcclNet& net) = 0;

  // Horovod's MPI (mpi_collectives.h): by default Open MPI modelled over transport(), in both
  // modes; with `library`, the MPI library a live process runs under. The simulation predicts the
  // library by the model, so only a live environment overrides this; it throws InputError where
  // the process has no MPI library to use.
  virtual std::unique_ptr<MpiCollectives> mpi_collectives(const coll::OmpiOptions& options,
                                                          bool library);

  // The squared L2 norms of `worker`'s gradients in this step, over every tensor: its own
  // gradient's and the reduced one's (the sum over workers), computed by a kernel pass over both
  // on the device, whose time the step pays (for monitors that ask: Monitor::needs_gradient_norms).
  // `done` gets NaN where the environment holds no values (simulated gradients are sizes only).
  virtual void gradient_norms(int worker,
                              std::function<void(double local_sq, double reduced_sq)> done) = 0;

  // KungFu's gradient variance (KUNGFU.md 3.2: every tensor's g^2 all-reduced beside g, then
  // Var = E[g^2] - E[g]^2 and its L2 norm), around the system's second all-reduce:
  // square_gradients squares `worker`'s gradients element-wise, on the device (a read and a
  // write of every element, whose time the step pays); squared_gradient(worker, t) is then the
  // all-reduce of tensor t's squares (named "<parameter>/sq", float32 sum; size-only when
  // simulated); gradient_variance, once those are reduced, computes per tensor Var over the run's
  // workers from the reduced squares and the reduced gradient (two reads and a write of every
  // element on the device) and gives the sum over tensors of ||Var||_2 (NaN where the environment
  // holds no values).
  virtual void square_gradients(int worker, Callback done) = 0;
  virtual coll::Workspace squared_gradient(int worker, std::size_t tensor) = 0;
  virtual void gradient_variance(int worker, std::function<void(double norm_sum)> done) = 0;

  // Between two steps of `worker` (after `step` ended, before the next begins): whatever the
  // environment checks there (live: every reduced gradient against the exact sum). `done` may
  // run inside the call when there is nothing to check.
  virtual void between_steps(int worker, int step, Callback done) = 0;

  // Worker-set changes (elastic.h; the protocol is the step loop's, trainer.h). Worker ids here
  // are the environment's own (ClusterConfig::workers), not a cluster's ranks. An environment
  // that cannot change its worker set keeps these defaults, which throw InputError.
  //
  // The config store: `done` gets the cluster the store holds when the request arrives; a put
  // replaces it (the caller gives the next version).
  virtual void store_get(int worker, std::function<void(const ClusterConfig&)> done);
  virtual void store_put(int worker, const ClusterConfig& cluster, Callback done);
  // `worker` tells every host's runner of `notice.cluster` (KungFu's propose: every worker notifies
  // every runner; a runner acts on the first notice of a version): each runner stops its processes
  // of workers the cluster no longer holds and starts one for each worker it newly holds, or, with
  // `notice.restart`, for every worker of the cluster on its host (the previous ones have
  // stopped). A started process reaches the handler given to on_worker_started, with the notice,
  // once it runs. `done` once every runner has the notice.
  virtual void notify_runners(int worker, const RunnerNotice& notice, Callback done);
  virtual void on_worker_started(std::function<void(int worker, const RunnerNotice&)> started);
  // The notice of cluster `version` as the store holds it (the first worker's), read by `worker`
  // when the request arrives; nullopt while none is there yet (the store holds a version's
  // cluster before its workers have agreed on it and posted the notice). A process that did not
  // run while a version was agreed reads there what a new process is told (its step and the
  // agreed history) and joins as one (trainer.h).
  virtual void store_notice(int worker, int version,
                            std::function<void(const std::optional<RunnerNotice>&)> done);
  // Whether a process the runners start comes back to this step loop (a simulation: every worker
  // is this environment's), or is a process of its own with its own step loop (live: it joins
  // with TrainerOptions::join, and this process does not wait for it).
  virtual bool hosts_new_processes() const { return true; }
  // `worker`'s process ends (it left the cluster, or stopped for a restart, or failed).
  virtual void stop_worker(int worker);
  // `worker`'s process dies (`silent`: hangs without a word) as the scenario's failures say
  // (failure.h). Default: stop_worker (a simulated process just stops taking part).
  virtual void worker_failed(int worker, bool silent) {
    (void)silent;
    stop_worker(worker);
  }
  // `worker`'s process stops running for `duration` and then runs on (failure.h, mode pause):
  // nothing of it runs meanwhile (no timer, no transfer, no lease renewal), as under SIGSTOP or
  // a preempted VM; `resumed` runs once it runs again. Default: a timer.
  virtual void pause_worker(int worker, TimeNs duration, Callback resumed) {
    (void)worker;
    at(now() + duration, std::move(resumed));
  }
  // Whether `worker`'s own lease lapsed since the last call: its process did not renew it for
  // longer than a lease lives (it did not run: a pause), so the others may have dropped it. A
  // worker asks before each step and reads the store if so, as a lock's holder checks its lease
  // before acting on it. Default: never.
  virtual bool lease_lapsed(int worker) {
    (void)worker;
    return false;
  }
  // A line for the run's user about `worker` (that it was dropped from the cluster, say): live,
  // the rank's stderr; a simulation has the step rows and the timeline, so by default nothing.
  virtual void note(int worker, const std::string& line) {
    (void)worker;
    (void)line;
  }
  // The workers whose lease in the store is alive (ElasticSpec::failure_timeout_ns after their
  // process last ran), and a put that only succeeds while the store holds `expected_version`
  // (etcd's compare-and-swap transaction); `done(true)` if it did.
  virtual void store_leases(int worker, std::function<void(const std::vector<int>&)> done);
  virtual void store_swap(int worker, int expected_version, const ClusterConfig& cluster,
                          std::function<void(bool)> done);
  // Closes `worker`'s connections and opens those to `cluster`'s workers, the version being the
  // connection token; `done` once they are open.
  virtual void reset_connections(int worker, const ClusterConfig& cluster, Callback done);
  // The restart baseline's checkpoint: `bytes` of model state written to, or read from, disk.
  virtual void write_checkpoint(int worker, std::uint64_t bytes, Callback done);
  virtual void read_checkpoint(int worker, std::uint64_t bytes, Callback done);
  // The model state's tensor `tensor` on `worker` (the parameters of backward-order tensor
  // `tensor` and `copies` - 1 optimizer slots per parameter, float32) as the state broadcast sends
  // and receives it (send == recv: in place, the root's bytes overwrite the others'), named `name`.
  // Default: size-only (a simulation has no values). `state_received` runs on every worker of the
  // broadcast once all of its tensors are in; an environment that holds the state checks there
  // that it is the root's (live: a mismatch fails the run). Default: nothing to check.
  virtual coll::Workspace model_state(int worker, std::size_t tensor, std::uint64_t elements,
                                      const std::string& name);
  virtual void state_received(int worker, int version) {
    (void)worker;
    (void)version;
  }
  // Where `worker`'s data stands (a live run that learns: its data cursor and the samples trained;
  // numbers that only grow, exact in a double), which KungFu's protocol agrees on with the
  // step (ElasticHook: all_reduce(trained_samples, max)): a new worker has zeros, and every worker
  // then takes the largest of each (set_data_position). Default: none (a simulation draws no
  // data), and nothing is added to the agreement.
  virtual std::vector<double> data_position(int worker) const {
    (void)worker;
    return {};
  }
  virtual void set_data_position(int worker, const std::vector<double>& position) {
    (void)worker;
    (void)position;
  }

  // `worker` starts `step` now (its compute begins). Rank 0's step starts are the clock of the
  // scenario's background traffic (background.h): the simulator starts and stops its flows
  // there, a live rank 0 publishes its step to the traffic generators.
  virtual void step_started(int worker, int step) {
    (void)worker;
    (void)step;
  }

  // After between_steps of `step` on `worker`: the environment's readings of that step, added to
  // the step's row beside the monitors' (a live run that learns for real: samples seen, wall time,
  // test loss and accuracy at its evaluation points). Default: none.
  virtual void readings(int worker, int step, std::map<std::string, double>& out) {
    (void)worker;
    (void)step;
    (void)out;
  }
};

}  // namespace adaptsim::runtime
