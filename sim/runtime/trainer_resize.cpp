// The step loop's worker-set changes: KungFu's resize protocol and the stop-checkpoint-restart
// baseline (trainer.h, "Worker-set changes"; KUNGFU.md 4).

#include <nlohmann/json.hpp>

#include <algorithm>
#include <bit>
#include <stdexcept>

#include "sim/coll/allreduce.h"
#include "sim/core/error.h"
#include "sim/runtime/trainer.h"

namespace adaptsim::runtime {
namespace {

// A version's system reports by its ranks; the step loop keeps workers by their ids. A report
// for a worker that has since moved to another version (a failure abandoned its step) is dropped.
class VersionSink final : public StepSink {
 public:
  VersionSink(StepSink& trainer, const ClusterView& view, std::function<bool(int)> current)
      : trainer_(trainer), view_(view), current_(std::move(current)) {}
  void gradient_reduced(int rank, std::size_t tensor) override {
    const int w = view_.base_worker(rank);
    if (current_(w)) trainer_.gradient_reduced(w, tensor);
  }
  void activity(int rank, int delta) override {
    const int w = view_.base_worker(rank);
    if (current_(w)) trainer_.activity(w, delta);
  }

 private:
  StepSink& trainer_;
  const ClusterView& view_;
  std::function<bool(int)> current_;
};

// The agreed history's text form: doubles by their bits (exact, NaN included), optionals as null.
nlohmann::json bits(double v) {
  return std::bit_cast<std::uint64_t>(v);
}
double from_bits(const nlohmann::json& j) {
  return std::bit_cast<double>(j.get<std::uint64_t>());
}
nlohmann::json strategy_json(const std::optional<StrategyChoice>& c) {
  if (!c) return nullptr;
  return nlohmann::json::array({static_cast<int>(c->kind), c->root});
}
std::optional<StrategyChoice> strategy_from(const nlohmann::json& j) {
  if (j.is_null()) return std::nullopt;
  return StrategyChoice{static_cast<coll::StrategyKind>(j.at(0).get<int>()), j.at(1).get<int>()};
}
nlohmann::json optional_int(const std::optional<int>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}
std::optional<int> int_from(const nlohmann::json& j) {
  if (j.is_null()) return std::nullopt;
  return j.get<int>();
}

}  // namespace

std::string Trainer::agreed_state() const {
  nlohmann::json history = nlohmann::json::array(), decisions = nlohmann::json::array();
  for (const StepObservation& o : history_) {
    nlohmann::json readings = nlohmann::json::object();
    for (const auto& [key, value] : o.readings)
      readings[key] = bits(value);
    history.push_back({o.step, o.batch_per_gpu, o.workers, strategy_json(o.strategy),
                       bits(o.step_s), bits(o.samples_per_s), bits(o.comm_bytes), bits(o.comm_s),
                       bits(o.allreduce_Bps), bits(o.grad_sq_local), bits(o.grad_sq_global),
                       bits(o.grad_variance), bits(o.votes), readings});
  }
  for (const Decision& d : decisions_) {
    decisions.push_back(
        {optional_int(d.batch_per_gpu), strategy_json(d.strategy), optional_int(d.workers)});
  }
  return nlohmann::json{{"history", history}, {"decisions", decisions}}.dump();
}

void Trainer::adopt_agreed_state(const RunnerNotice& notice) {
  if (notice.agreed_state.empty()) return;
  std::size_t seen = 0;  // the observations this process's monitors saw already
  try {
    const nlohmann::json j = nlohmann::json::parse(notice.agreed_state);
    const nlohmann::json& history = j.at("history");
    const nlohmann::json& decisions = j.at("decisions");
    if (history.size() <= history_.size()) return;  // this process saw it all
    seen = history_.size();
    history_.clear();
    decisions_.clear();
    for (const nlohmann::json& h : history) {
      StepObservation o;
      o.step = h.at(0).get<int>();
      o.batch_per_gpu = h.at(1).get<int>();
      o.workers = h.at(2).get<int>();
      o.strategy = strategy_from(h.at(3));
      o.step_s = from_bits(h.at(4));
      o.samples_per_s = from_bits(h.at(5));
      o.comm_bytes = from_bits(h.at(6));
      o.comm_s = from_bits(h.at(7));
      o.allreduce_Bps = from_bits(h.at(8));
      o.grad_sq_local = from_bits(h.at(9));
      o.grad_sq_global = from_bits(h.at(10));
      o.grad_variance = from_bits(h.at(11));
      o.votes = from_bits(h.at(12));
      for (const auto& [key, value] : h.at(13).items())
        o.readings[key] = from_bits(value);
      history_.push_back(std::move(o));
    }
    for (const nlohmann::json& d : decisions) {
      Decision x;
      x.batch_per_gpu = int_from(d.at(0));
      x.strategy = strategy_from(d.at(1));
      x.workers = int_from(d.at(2));
      decisions_.push_back(std::move(x));
    }
  } catch (const nlohmann::json::exception& e) {
    throw RuntimeFailure("the runner's notice of cluster version " +
                         std::to_string(notice.cluster.version) +
                         " holds no readable agreed history: " + e.what());
  }
  // What every worker ran each step with (a restarted process resumes with the last batch), and
  // the monitors' state: a new process's monitors see the agreed observations in order, as the
  // running workers' did (monitors are deterministic in what they observe), so every worker's
  // monitors agree from the next step on; a process back after a pause saw the first `seen` (the
  // agreed history's, as every worker's is) and sees the rest.
  samples_done_ = 0;
  for (std::size_t i = 0; i < history_.size(); ++i) {
    const StepObservation& o = history_[i];
    samples_done_ += static_cast<double>(o.workers) * o.batch_per_gpu;
    int& batch = step_batch_.at(static_cast<std::size_t>(o.step));
    if (batch == 0) batch = o.batch_per_gpu;
    if (i < seen) continue;
    StepObservation replay = o;
    for (auto& m : seam_.monitors)
      m->observe(replay);
  }
  if (decisions_.size() != history_.size()) {
    throw RuntimeFailure("the runner's notice of cluster version " +
                         std::to_string(notice.cluster.version) + " holds " +
                         std::to_string(history_.size()) + " observations but " +
                         std::to_string(decisions_.size()) + " decisions");
  }
}

int Trainer::rank(int w) const {
  if (!options_.elastic) return w;
  return views_.at(state_[static_cast<std::size_t>(w)].version)->rank_of(w);
}

TrainingEnv& Trainer::env(int w) {
  if (!options_.elastic) return env_;
  return *views_.at(state_[static_cast<std::size_t>(w)].version);
}

System& Trainer::system(int w) {
  if (!options_.elastic) return system_;
  return *systems_.at(state_[static_cast<std::size_t>(w)].version);
}

void Trainer::ensure_version(const ClusterConfig& cluster) {
  const int v = cluster.version;
  if (views_.count(v) != 0) return;
  auto view = std::make_unique<ClusterView>(env_, cluster);
  // KungFu builds a new session for the new peer list: strategies from the configuration again.
  std::unique_ptr<System> system = options_.make_system();
  auto sink = std::make_unique<VersionSink>(
      *this, *view, [this, v](int w) { return state_[static_cast<std::size_t>(w)].version == v; });
  SystemContext context;
  context.env = view.get();
  context.sink = sink.get();
  context.model = &model_;
  context.tensor_bytes = tensor_bytes_;
  context.total_steps = total_steps_;
  system->attach(context);
  const std::vector<int>& hosts = view->host_of_worker();
  agreements_[v] = coll::make_allreduce(coll::StrategyKind::kStar, hosts);
  // The state broadcast runs over the strategy's first broadcast graph (session.Broadcast). The
  // classic strategies (not KungFu's) have none: BINARY_TREE_STAR's, KungFu's default, then.
  const std::optional<StrategyChoice> choice = system->strategy(0);
  coll::StrategyKind kind = choice ? choice->kind : coll::StrategyKind::kBinaryTreeStar;
  if (!coll::is_graph_strategy(kind)) kind = coll::StrategyKind::kBinaryTreeStar;
  kind = coll::resolve_auto(kind, hosts);
  broadcast_pairs_[v] = coll::make_graph_pairs(kind, hosts, 0);
  views_[v] = std::move(view);
  systems_[v] = std::move(system);
  sinks_[v] = std::move(sink);
}

void Trainer::phase(int w, int step, const std::string& key, TimeNs begin) {
  const TimeNs end = env_.now();
  span(w, key, "resize", begin, end);
  if (step < 0 || step >= total_steps_) return;
  // The slowest worker's: the cluster runs at its new size once every worker is through.
  double& slowest = step_readings_[static_cast<std::size_t>(step)][key + "_s"];
  slowest = std::max(slowest, to_seconds(end - begin));
}

void Trainer::elastic_boundary(int w, int step) {
  Worker& s = state_[static_cast<std::size_t>(w)];
  // No change after the last step: there is no next step to run at another size.
  if (step + 1 >= total_steps_) {
    next_or_finish(w);
    return;
  }
  const Decision& d = decisions_[static_cast<std::size_t>(step)];
  const bool change = d.workers && *d.workers != env(w).workers();
  s.check_begin = env_.now();
  if (options_.elastic->mechanism == ResizeMechanism::kRestart) {
    if (change) {
      restart(w, step, *d.workers);
    } else {
      next_or_finish(w);
    }
    return;
  }
  // KungFu: rank 0 proposes the policy's size (a put of the next version); every worker then
  // reads the store, as it does after every step in elastic mode.
  if (change && rank(w) == 0) {
    resize_begin_[s.version + 1] = s.check_begin;
    env_.store_put(w, resize_cluster(views_.at(s.version)->cluster(), order_, *d.workers),
                   [this, w, step] { read_cluster(w, step, 0); });
    return;
  }
  read_cluster(w, step, 0);
}

void Trainer::read_cluster(int w, int step, int attempt) {
  env_.store_get(w, [this, w, step, attempt](const ClusterConfig& read) {
    state_[static_cast<std::size_t>(w)].read = read;
    consensus(w, "adaptsim:cluster:" + std::to_string(step) + ":" + std::to_string(attempt),
              read.version, [this, w, step, attempt](bool agreed) {
                Worker& s = state_[static_cast<std::size_t>(w)];
                if (!agreed) {
                  // Some worker read another version: wait, read again (KungFu's retry).
                  env_.at(env_.now() + options_.elastic->retry_ns,
                          [this, w, step, attempt] { read_cluster(w, step, attempt + 1); });
                  return;
                }
                if (s.read.version == s.version) {
                  phase(w, step, "elastic.check", s.check_begin);
                  next_or_finish(w);
                  return;
                }
                phase(w, step, "resize.consensus", s.check_begin);
                resize(w, step);
              });
  });
}

// KungFu's BytesConsensus: an all-reduce of the digest with MIN and one with MAX; the workers agree
// when both give their own.
void Trainer::consensus(int w, const std::string& name, double digest,
                        std::function<void(bool)> done) {
  state_[static_cast<std::size_t>(w)].agree_in.assign(1, digest);
  control(
      w, name + ":min",
      [this, w, name, digest, done = std::move(done)]() mutable {
        Worker& s = state_[static_cast<std::size_t>(w)];
        const double low = s.agree_out[0];
        s.agree_in.assign(1, digest);
        control(
            w, name + ":max",
            [this, w, digest, low, done = std::move(done)] {
              const double high = state_[static_cast<std::size_t>(w)].agree_out[0];
              done(low == digest && high == digest);
            },
            coll::ReduceOp::kMax);
      },
      coll::ReduceOp::kMin);
}

void Trainer::resize(int w, int step) {
  const ClusterConfig cluster = state_[static_cast<std::size_t>(w)].read;
  const std::vector<int>& old =
      views_.at(state_[static_cast<std::size_t>(w)].version)->cluster().workers;
  if (std::none_of(old.begin(), old.end(), [&cluster](int m) {
        return std::find(cluster.workers.begin(), cluster.workers.end(), m) !=
               cluster.workers.end();
      })) {
    // KungFu broadcasts the state from a staying worker; with none, it would be lost.
    throw RuntimeFailure("cluster version " + std::to_string(cluster.version) +
                         " keeps none of the running workers: the model state would be lost");
  }
  if (resize_step_.emplace(cluster.version, step).second) {
    // The new workers this environment runs (every one simulated; live, a new process counts
    // itself).
    for (int m : cluster.workers) {
      if (std::find(old.begin(), old.end(), m) == old.end() &&
          std::find(local_.begin(), local_.end(), m) != local_.end())
        starting_.insert(m);
    }
  }
  if (rank(w) == 0)
    resize_begin_[cluster.version] = state_[static_cast<std::size_t>(w)].check_begin;
  const TimeNs begin = env_.now();
  // KungFu's propose(): consensus again, then every runner is told.
  consensus(w, "adaptsim:resize:v" + std::to_string(cluster.version) + ":propose", cluster.version,
            [this, w, step, begin, cluster](bool agreed) {
              if (!agreed) {
                throw RuntimeFailure("worker " + std::to_string(w) +
                                     ": the workers disagree on cluster version " +
                                     std::to_string(cluster.version) + " after agreeing on it");
              }
              notified_at_.emplace(cluster.version, env_.now());
              env_.notify_runners(
                  w, notice_for(cluster, step, false), [this, w, step, begin, cluster] {
                    phase(w, step, "resize.propose", begin);
                    if (std::find(cluster.workers.begin(), cluster.workers.end(), w) ==
                        cluster.workers.end()) {
                      leave(w);
                      return;
                    }
                    switch_version(w, step, cluster);
                  });
            });
}

// A staying worker into `cluster`: its connections reset, then the version's view and system,
// and the meeting with the others.
void Trainer::switch_version(int w, int step, const ClusterConfig& cluster) {
  close_version(w);
  const TimeNs reconnect = env_.now();
  env_.reset_connections(w, cluster, [this, w, step, reconnect, cluster] {
    phase(w, step, "resize.reconnect", reconnect);
    ensure_version(cluster);
    state_[static_cast<std::size_t>(w)].version = cluster.version;
    join_cluster(w);
  });
}

RunnerNotice Trainer::notice_for(const ClusterConfig& cluster, int step, bool restart) {
  RunnerNotice n;
  n.cluster = cluster;
  n.restart = restart;
  n.step = step;
  n.notified_at = notified_at_.at(cluster.version);
  if (auto it = resize_begin_.find(cluster.version); it != resize_begin_.end())
    n.resize_begin = it->second;
  // Once per version (every worker sends the same notice).
  auto [it, added] = agreed_state_.emplace(cluster.version, std::string());
  if (added) it->second = agreed_state();
  n.agreed_state = it->second;
  return n;
}

void Trainer::worker_started(int w, const RunnerNotice& notice) {
  starting_.erase(w);
  ++running_;
  enter(w, notice, true);
}

// Worker w into the cluster of `notice` as a process that has not taken part in its agreement:
// a new one (`started`: its start-up phases, the emulated framework's, a restart's checkpoint
// read), or one that did not run while the others agreed (rejoin).
void Trainer::enter(int w, const RunnerNotice& notice, bool started) {
  const ClusterConfig& cluster = notice.cluster;
  // It learns from the notice what the running workers know.
  resize_step_.emplace(cluster.version, notice.step);
  notified_at_.emplace(cluster.version, notice.notified_at);
  if (notice.resize_begin > 0) resize_begin_.emplace(cluster.version, notice.resize_begin);
  adopt_agreed_state(notice);
  const int step = resize_step_.at(cluster.version);
  Worker& s = state_[static_cast<std::size_t>(w)];
  // Callbacks of what the worker id did before (an earlier process, or this one's abandoned step)
  // find another epoch and progress; a pause that happened stays done.
  const int epoch = s.epoch;
  const std::uint64_t progress = s.progress;
  const bool paused = s.paused;
  s = Worker{};
  s.epoch = epoch + 1;
  s.progress = progress + 1;
  s.paused = paused;
  s.version = cluster.version;
  s.joining = true;
  s.reduced_tensor.assign(tensor_bytes_.size(), false);
  if (!options_.failures.empty()) {
    // A joining process watches its progress too: a worker it joins may die on the way (live, a
    // killed root's state broadcast never arrives).
    s.step_begin = env_.now();
    watch(w);
  }
  ensure_version(cluster);
  auto connect = [this, w, step, cluster] {
    const TimeNs begin = env_.now();
    env_.reset_connections(w, cluster, [this, w, step, begin] {
      phase(w, step, "resize.join.connect", begin);
      join_cluster(w);
    });
  };
  if (!started) {
    connect();
    return;
  }
  phase(w, step, "resize.join.process_start", notified_at_.at(cluster.version));
  const TimeNs init = env_.now();
  env_.at(init + options_.elastic->framework_init_ns, [this, w, step, init, connect] {
    if (options_.elastic->framework_init_ns > 0) phase(w, step, "resize.join.framework_init", init);
    if (options_.elastic->mechanism == ResizeMechanism::kRestart) {
      const TimeNs begin = env_.now();
      env_.read_checkpoint(w, state_bytes_, [this, w, step, begin, connect] {
        phase(w, step, "resize.join.restore", begin);
        connect();
      });
      return;
    }
    connect();
  });
}

// Every worker of the new version: a barrier with the new workers, then (KungFu) the agreement on
// the data offset and the state broadcast; the restart's workers take both from the checkpoint.
void Trainer::join_cluster(int w) {
  Worker& s = state_[static_cast<std::size_t>(w)];
  const int step = resize_step_.at(s.version);
  const std::string prefix = "adaptsim:resize:v" + std::to_string(s.version);
  const TimeNs begin = env_.now();
  s.agree_in.assign(1, 0.0);
  control(w, prefix + ":barrier", [this, w, step, prefix, begin] {
    Worker& s2 = state_[static_cast<std::size_t>(w)];
    phase(w, step, s2.joining ? "resize.join.barrier" : "resize.barrier", begin);
    if (options_.elastic->mechanism == ResizeMechanism::kRestart) {
      // The checkpoint holds the next step and its batch.
      s2.step = step + 1;
      s2.batch = step_batch_[static_cast<std::size_t>(step)];
      s2.profile = &profile_for(s2.batch);
      resized(w);
      return;
    }
    // ElasticHook: all_reduce(trained_samples, max); the batch comes along (a new worker has 0),
    // and where the environment's data stands (live learning: its cursor and samples trained).
    const TimeNs sync = env_.now();
    s2.agree_in = {static_cast<double>(s2.step), static_cast<double>(s2.batch)};
    for (double x : env_.data_position(w))
      s2.agree_in.push_back(x);
    control(
        w, prefix + ":sync",
        [this, w, step, sync] {
          Worker& s3 = state_[static_cast<std::size_t>(w)];
          s3.step = static_cast<int>(s3.agree_out[0]);
          s3.batch = static_cast<int>(s3.agree_out[1]);
          if (s3.agree_out.size() > 2)
            env_.set_data_position(w, {s3.agree_out.begin() + 2, s3.agree_out.end()});
          s3.profile = &profile_for(s3.batch);
          phase(w, step, "resize.sync", sync);
          const TimeNs broadcast = env_.now();
          broadcast_state(w, [this, w, step, broadcast] {
            // Acknowledged: nobody goes on until every worker holds the state, so a worker that
            // dies next (the root included) cannot take the only copy with it (a live sender's
            // bytes may still be in flight when its send completes).
            auto received = [this, w, step, broadcast] {
              phase(w, step, "resize.broadcast", broadcast);
              resized(w);
            };
            if (env(w).workers() == 1) {
              received();
              return;
            }
            Worker& s4 = state_[static_cast<std::size_t>(w)];
            s4.agree_in.assign(1, 0.0);
            control(w, "adaptsim:resize:v" + std::to_string(s4.version) + ":state", received);
          });
        },
        coll::ReduceOp::kMax);
  });
}

// The model state from rank 0, one broadcast per parameter tensor (with its optimizer slots), all
// at once as TensorFlow runs BroadcastGlobalVariablesOp's per-variable ops, in the environment's
// state buffers (size-only when simulated), which it checks once all are in.
void Trainer::broadcast_state(int w, Callback done) {
  TrainingEnv& view = env(w);
  const Worker& s = state_[static_cast<std::size_t>(w)];
  const int version = s.version;
  if (view.workers() == 1) {
    done();
    return;
  }
  const coll::CommGraph& graph = broadcast_pairs_.at(version).front().bcast;
  auto remaining = std::make_shared<std::size_t>(model_.backward_order.size());
  const int r = rank(w);
  auto shared_done = std::make_shared<Callback>([this, w, r, version, done = std::move(done)] {
    env(w).state_received(r, version);
    done();
  });
  const std::uint64_t copies = 1 + static_cast<std::uint64_t>(options_.elastic->optimizer_slots);
  for (std::size_t t = 0; t < model_.backward_order.size(); ++t) {
    const coll::Workspace ws = view.model_state(r, t, model_.backward_order[t].elements * copies,
                                                "adaptsim:state:" + model_.backward_order[t].name);
    coll::run_graphs(view.transport(r), ws, {&graph}, [remaining, shared_done] {
      if (--*remaining == 0) (*shared_done)();
    });
  }
}

void Trainer::resized(int w) {
  Worker& s = state_[static_cast<std::size_t>(w)];
  const int step = resize_step_.at(s.version);
  s.joining = false;
  s.checked_at = env_.now();  // the resize is not the next step's time
  // Rank 0's boundary began the resize; a process that joined it has no such time.
  if (auto it = resize_begin_.find(s.version); it != resize_begin_.end())
    phase(w, step, "resize.total", it->second);
  next_or_finish(w);
}

void Trainer::close_version(int w) {
  ClusterView& view = *views_.at(state_[static_cast<std::size_t>(w)].version);
  if (const int r = view.rank_of(w); r >= 0) view.close(r);
}

void Trainer::leave(int w) {
  close_version(w);
  state_[static_cast<std::size_t>(w)].dead = true;  // its process ends: no watchdog any more
  --running_;
  env_.stop_worker(w);
  if (progress_) progress_();
}

// The baseline: rank 0 writes the checkpoint, every worker waits for it at a barrier and stops; the
// runners start the new cluster's processes, which read it, connect and meet.
void Trainer::restart(int w, int step, int size) {
  Worker& s = state_[static_cast<std::size_t>(w)];
  const ClusterConfig cluster = resize_cluster(views_.at(s.version)->cluster(), order_, size);
  if (resize_step_.emplace(cluster.version, step).second && env_.hosts_new_processes())
    starting_.insert(cluster.workers.begin(), cluster.workers.end());
  const bool first = rank(w) == 0;
  if (first) resize_begin_[cluster.version] = s.check_begin;
  const std::string prefix = "adaptsim:restart:v" + std::to_string(cluster.version);
  auto saved = [this, w, step, prefix, cluster, first] {
    Worker& s2 = state_[static_cast<std::size_t>(w)];
    s2.agree_in.assign(1, 0.0);
    control(w, prefix + ":saved", [this, w, step, cluster, first] {
      phase(w, step, "resize.checkpoint", state_[static_cast<std::size_t>(w)].check_begin);
      if (first) {
        // The job's launcher starts the new cluster once the old processes have stopped.
        notified_at_.emplace(cluster.version, env_.now());
        env_.notify_runners(w, notice_for(cluster, step, true), [] {});
      }
      leave(w);
    });
  };
  if (first) {
    env_.write_checkpoint(w, state_bytes_, saved);
  } else {
    saved();
  }
}

// The failure watchdog: nothing moved for failure_timeout_ns since this check was armed.
void Trainer::watch(int w) {
  const std::uint64_t progress = state_[static_cast<std::size_t>(w)].progress;
  env_.at(env_.now() + options_.elastic->failure_timeout_ns, [this, w, progress] {
    const Worker& s = state_[static_cast<std::size_t>(w)];
    if (s.dead || s.progress != progress || s.step >= total_steps_) return;
    suspect(w, progress);
  });
}

// Reads the leases; a cluster member whose lease lapsed has failed: the survivors' cluster goes
// into the store (the first swap wins), else the check is repeated after retry_ns.
void Trainer::suspect(int w, std::uint64_t progress) {
  env_.store_leases(w, [this, w, progress](const std::vector<int>& live) {
    const Worker& s = state_[static_cast<std::size_t>(w)];
    if (s.dead || s.progress != progress) return;
    const ClusterConfig& current = views_.at(s.version)->cluster();
    ClusterConfig next;
    next.version = current.version + 1;
    for (int m : current.workers)
      if (std::binary_search(live.begin(), live.end(), m)) next.workers.push_back(m);
    if (next.workers.size() == current.workers.size()) {
      // Every member lives; but they may live on in a newer cluster without this worker (it
      // did not run for longer than a lease: a pause). The store says so.
      env_.store_get(w, [this, w, progress](const ClusterConfig& stored) {
        const Worker& s2 = state_[static_cast<std::size_t>(w)];
        if (s2.dead || s2.progress != progress) return;
        if (left_behind(w, stored)) return;
        env_.at(env_.now() + options_.elastic->retry_ns,
                [this, w, progress] { suspect(w, progress); });
      });
      return;
    }
    env_.store_swap(w, current.version, next, [this, w, progress](bool) { recover(w, progress); });
  });
}

// Into the survivors' cluster: the step in progress is abandoned and redone after a resize's
// barrier, offset agreement and broadcast.
void Trainer::recover(int w, std::uint64_t progress) {
  env_.store_get(w, [this, w, progress](const ClusterConfig& cluster) {
    Worker& s = state_[static_cast<std::size_t>(w)];
    if (s.dead || s.progress != progress) return;
    if (cluster.version <= s.version) {
      env_.at(env_.now() + options_.elastic->retry_ns,
              [this, w, progress] { recover(w, progress); });
      return;
    }
    if (std::find(cluster.workers.begin(), cluster.workers.end(), w) == cluster.workers.end()) {
      dropped(w, cluster);
      return;
    }
    // A start counted for a worker the survivors dropped never comes: a starting process holds a
    // live lease, so it was one its runner found running (a paused process) and started none for.
    std::erase_if(starting_, [&cluster](int m) {
      return std::find(cluster.workers.begin(), cluster.workers.end(), m) == cluster.workers.end();
    });
    abandon_step(w);
    ++s.progress;
    // The step to redo: a worker still joining has not agreed on one yet; the step after the
    // resize it joined by.
    const int step = s.joining ? resize_step_.at(s.version) + 1 : s.step;
    resize_step_.emplace(cluster.version, step);
    if (cluster.workers.front() == w) resize_begin_[cluster.version] = env_.now();
    phase(w, step, "failure.detect", s.step_begin);
    switch_version(w, step, cluster);
  });
}

// Worker w's step in flight is given up: its pending callbacks are an abandoned attempt's (another
// epoch), nothing of it is in flight, and it waits at no control collective.
void Trainer::abandon_step(int w) {
  Worker& s = state_[static_cast<std::size_t>(w)];
  ++s.epoch;
  s.in_flight = 0;
  s.waiting_at.clear();
}

// Whether the store's cluster `stored` went on without worker w: then w leaves (dropped). A
// cluster that took it back after a version it missed (the others dropped it, then grew again
// while it did not run, and its runner, seeing its process, started none) is joined as a new
// process would join it (rejoin).
bool Trainer::left_behind(int w, const ClusterConfig& stored) {
  const Worker& s = state_[static_cast<std::size_t>(w)];
  if (stored.version <= s.version) return false;
  const bool member =
      std::find(stored.workers.begin(), stored.workers.end(), w) != stored.workers.end();
  if (!member) {
    dropped(w, stored);
    return true;
  }
  if (stored.version >= s.version + 2) {
    rejoin(w, stored);
    return true;
  }
  return false;
}

// Worker w did not run while the others dropped it and then took it back into `stored`: the step
// it was in is abandoned, and it joins as a process its runner would have started does, from the
// version's notice in the store (the step it follows and the agreed history): connections,
// barrier, offset agreement, state broadcast. Until the notice is there (the cluster is in the
// store before its workers have agreed on it), it reads the store again.
void Trainer::rejoin(int w, const ClusterConfig& stored) {
  Worker& s = state_[static_cast<std::size_t>(w)];
  abandon_step(w);
  close_version(w);
  const int from = s.version;
  const int step = s.step;
  const TimeNs begin = env_.now();
  env_.store_notice(w, stored.version,
                    [this, w, epoch = s.epoch, from, step, begin,
                     version = stored.version](const std::optional<RunnerNotice>& notice) {
                      const Worker& s2 = state_[static_cast<std::size_t>(w)];
                      if (s2.dead || s2.epoch != epoch) return;
                      if (!notice) {
                        env_.at(env_.now() + options_.elastic->retry_ns, [this, w, epoch] {
                          env_.store_get(w, [this, w, epoch](const ClusterConfig& again) {
                            const Worker& s3 = state_[static_cast<std::size_t>(w)];
                            // The store's version only grows: again is at least two past w's, so w
                            // leaves or rejoins.
                            if (!s3.dead && s3.epoch == epoch) left_behind(w, again);
                          });
                        });
                        return;
                      }
                      env_.note(w, "worker " + std::to_string(w) + " step " + std::to_string(step) +
                                       ": back in cluster version " + std::to_string(version) +
                                       " after the others went on without it from version " +
                                       std::to_string(from) + ": it joins as a new process does");
                      starting_.erase(w);  // its runner found its process: none starts
                      enter(w, *notice, false);
                      phase(w, resize_step_.at(version), "resize.join.notice", begin);
                    });
}

// The others went on without this worker (its lease lapsed while it did not run): its step is
// abandoned and it leaves; the survivors' cluster holds the training from their last consistent
// step.
void Trainer::dropped(int w, const ClusterConfig& cluster) {
  Worker& s = state_[static_cast<std::size_t>(w)];
  abandon_step(w);
  const TimeNs now = env_.now();
  span(w, "dropped", "failure", now, now);
  std::string members;
  for (int m : cluster.workers)
    members += " " + std::to_string(m);
  env_.note(w, "worker " + std::to_string(w) + " step " + std::to_string(s.step) +
                   ": dropped from the cluster while it did not run (cluster version " +
                   std::to_string(cluster.version) + " holds workers" + members + "): it leaves");
  leave(w);
}

}  // namespace adaptsim::runtime
