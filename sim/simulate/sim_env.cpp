#include "sim/simulate/sim_env.h"

#include <algorithm>
#include <limits>
#include <stdexcept>

#include "sim/core/error.h"
#include "sim/simulate/nccl_queue.h"

namespace adaptsim::simulate {
namespace {

fabric::SimTransportOptions host_options(const SimEnvOptions& o) {
  fabric::SimTransportOptions t = o.host_transport;
  t.endpoint = fabric::Endpoint::kHost;
  t.tail_loss.seed = o.seed;
  // The cores the compute shares are the transport threads' too, where those are modelled.
  if (t.one_transport_thread) t.host_cores = o.compute_cores;
  return t;
}

coll::Workspace size_only(std::string name, std::uint64_t bytes) {
  coll::Workspace w;
  w.name = std::move(name);
  w.count = bytes / 4;
  w.dtype = coll::DType::kF32;
  w.send = {nullptr, w.count * 4};
  w.recv = {nullptr, w.count * 4};
  return w;
}

class SimGpuCollectives final : public runtime::GpuCollectives {
 public:
  SimGpuCollectives(EventEngine& engine, train::NcclCommParams params)
      : queue_(engine, std::move(params)) {}
  void launch(int member, train::NcclColl coll, std::uint64_t bytes,
              runtime::Callback done) override {
    queue_.launch(member, coll, bytes, std::move(done));
  }

 private:
  NcclQueue queue_;
};

}  // namespace

SimCluster::SimCluster(const topo::Topology& topology, const SimEnvOptions& options)
    : network(engine, topology, options.sharing), fabric(network, host_options(options)) {
  network.set_share_dispersion(options.share_cv, options.seed);
  if (options.tcp_windows.enabled) network.flows().set_tcp_windows(options.tcp_windows);
}

SimEnv::SimEnv(const topo::Topology& topology, const train::Model& model,
               const SimEnvOptions& options)
    : SimEnv(std::make_unique<SimCluster>(topology, options), nullptr, topology, model, options) {}

SimEnv::SimEnv(SimCluster& cluster, const topo::Topology& topology, const train::Model& model,
               const SimEnvOptions& options)
    : SimEnv(nullptr, &cluster, topology, model, options) {
  if (!options.elastic) throw std::invalid_argument("SimEnv: a job on a shared cluster is elastic");
}

SimEnv::SimEnv(std::unique_ptr<SimCluster> own, SimCluster* shared, const topo::Topology& topology,
               const train::Model& model, const SimEnvOptions& options)
    : topology_(topology),
      model_(model),
      options_(options),
      totals_(model.totals()),
      own_(std::move(own)),
      engine_(shared != nullptr ? shared->engine : own_->engine),
      network_(shared != nullptr ? shared->network : own_->network),
      fabric_(shared != nullptr ? shared->fabric : own_->fabric) {
  for (int r = 0; r < topology.rank_count(); ++r) {
    host_of_.push_back(topology.rank_server(r));
    all_.push_back(r);
  }
  if (options.learning) {
    step_of_.assign(all_.size(), 0);
    batch_of_.assign(all_.size(), 0);
  }
  if (options.elastic) {
    // The store holds the first cluster, whose processes run.
    store_ = runtime::cluster_of(runtime::join_order(*options.elastic, host_of_),
                                 runtime::initial_size(*options.elastic, topology.rank_count()), 0);
    running_.insert(store_.workers.begin(), store_.workers.end());
  }
}

SimEnv::~SimEnv() = default;

void SimEnv::step_started(int worker, int step) {
  if (options_.learning) {
    if (learn_start_ < 0) learn_start_ = engine_.now();
    step_of_.at(static_cast<std::size_t>(worker)) = step;
    learn_step(step).workers.insert(worker);
  }
  if (worker != 0) return;
  for (const runtime::Straggler& s : options_.stragglers) {
    if (!s.nic_bandwidth_Bps || s.from_step != step) continue;
    // Both directions of every link between the straggler's server's NICs and the fabric.
    const int server = topology_.rank_server(s.worker);
    for (topo::ChannelId c = 0; c < topology_.channel_count(); ++c) {
      const topo::Channel& ch = topology_.channel(c);
      const topo::Node& from = topology_.node(ch.from);
      const topo::Node& to = topology_.node(ch.to);
      const bool out = from.kind == topo::NodeKind::kNic && from.server == server && to.server < 0;
      const bool in = to.kind == topo::NodeKind::kNic && to.server == server && from.server < 0;
      if (out || in) network_.set_channel_bandwidth(c, *s.nic_bandwidth_Bps);
    }
  }
  if (options_.background.empty()) return;
  const auto& flows = options_.background.flows;
  if (step == 0) {
    background_flows_.assign(flows.size(), {});
    // Time-scheduled flows: their start and stop are events on the clock step 0 starts.
    for (std::size_t f = 0; f < flows.size(); ++f) {
      const io::BackgroundSchedule& when = flows[f].when;
      if (when.by_step()) continue;
      engine_.schedule_after(*when.start_ns, [this, f] { start_background(f); });
      if (when.stop_ns) {
        engine_.schedule_after(*when.stop_ns, [this, f] { stop_background(f); });
      }
    }
  }
  for (std::size_t f = 0; f < flows.size(); ++f) {
    const io::BackgroundSchedule& when = flows[f].when;
    if (!when.by_step()) continue;
    if (step == *when.start_step) start_background(f);
    if (when.stop_step && step == *when.stop_step) stop_background(f);
  }
}

void SimEnv::start_background(std::size_t f) {
  const io::BackgroundFlow& flow = options_.background.flows[f];
  auto host_cpu = [this](int host) {
    std::string name(1, 's');  // appended, not "s" + ...: GCC 12 -Wrestrict false positive
    name.append(std::to_string(host)).append(".cpu0");
    const auto node = topology_.find(name);
    if (!node) throw std::logic_error("background traffic: topology has no node " + name);
    return *node;
  };
  const topo::NodeId src = host_cpu(flow.from_host), dst = host_cpu(flow.to_host);
  const double cap =
      flow.rate_Bps > 0 ? flow.rate_Bps / flow.connections : net::MaxMinSolver::kUncapped;
  for (int c = 0; c < flow.connections; ++c) {
    // Each connection its own window (FlowNetwork::set_tcp_windows), apart from the job's.
    const std::uint64_t connection =
        1ULL << 63 | static_cast<std::uint64_t>(f) << 32 | static_cast<std::uint64_t>(c);
    background_flows_[f].push_back(network_.transfer(src, dst, net::FlowNetwork::kInfiniteBytes,
                                                     nullptr, cap, nullptr, {}, connection));
  }
}

void SimEnv::stop_background(std::size_t f) {
  for (net::Network::FlowId id : background_flows_[f])
    network_.flows().stop(id);
  background_flows_[f].clear();
}

void SimEnv::at(TimeNs when, runtime::Callback task) {
  engine_.schedule_at(when, std::move(task));
}

struct SimEnv::SharedCompute {
  int worker;
  runtime::ComputeSchedule schedule;
  std::function<void(std::size_t)> phase_done;
  std::size_t next_reported = 0;  // index into schedule.reported
};

void SimEnv::compute(int worker, const runtime::ComputeSchedule& s,
                     std::function<void(std::size_t)> phase_done) {
  if (options_.learning) batch_of_.at(static_cast<std::size_t>(worker)) = s.batch_per_gpu;
  if (options_.compute_cores > 0) {
    auto c = std::make_shared<SharedCompute>(SharedCompute{worker, s, std::move(phase_done)});
    compute_phase(c, 0);
    return;
  }
  auto shared = std::make_shared<std::function<void(std::size_t)>>(std::move(phase_done));
  for (std::size_t i : s.reported)
    engine_.schedule_at(s.phase_end_ns[i], [shared, i] { (*shared)(i); });
}

void SimEnv::compute_phase(const std::shared_ptr<SharedCompute>& c, std::size_t phase) {
  const runtime::ComputeSchedule& s = c->schedule;
  if (phase >= s.phase_end_ns.size()) return;
  const TimeNs begin = phase == 0 ? s.start_ns : s.phase_end_ns[phase - 1];
  const double seconds = to_seconds(std::max<TimeNs>(0, s.phase_end_ns[phase] - begin));
  auto finished = [this, c, phase] {
    const std::vector<std::size_t>& reported = c->schedule.reported;
    // The next phase starts before this one is reported: the runtime's reaction (sending the
    // gradients) does not hold the compute up, as on a device.
    compute_phase(c, phase + 1);
    if (c->next_reported < reported.size() && reported[c->next_reported] == phase) {
      ++c->next_reported;
      c->phase_done(phase);
    }
  };
  // Where the transport threads' CPU work is modelled, the compute is a flow on the same host CPU
  // resource (one core's rate at most), so the two share the cores; else processor sharing among
  // the server's computes and start-ups.
  if (const auto cpu = fabric_.host_cpu(c->worker)) {
    if (!(seconds > 0)) {
      engine_.schedule_after(0, std::move(finished));
      return;
    }
    net::FlowNetwork::FlowSpec spec;
    spec.resources = {cpu->resource};
    spec.bytes = seconds * cpu->core_Bps;
    spec.rate_cap_Bps = cpu->core_Bps;
    spec.on_complete = std::move(finished);
    network_.flows().start(std::move(spec));
    return;
  }
  share(Resource::cpu, c->worker, seconds, std::move(finished));
}

void SimEnv::compute_until(int, TimeNs end_ns, runtime::Callback done) {
  engine_.schedule_at(end_ns, std::move(done));
}

void SimEnv::copy_to_host(int w, std::uint64_t bytes, runtime::Callback done) {
  network_.transfer(topology_.rank_gpu(w), topology_.rank_host(w), static_cast<double>(bytes),
                    std::move(done));
}

void SimEnv::copy_to_device(int w, std::uint64_t bytes, runtime::Callback done) {
  network_.transfer(topology_.rank_host(w), topology_.rank_gpu(w), static_cast<double>(bytes),
                    std::move(done));
}

coll::Workspace SimEnv::gradient(int, std::size_t tensor) {
  const train::Tensor& t = model_.backward_order[tensor];
  return size_only(t.name, t.elements * options_.gradient_element_bytes);
}

coll::Workspace SimEnv::fuse(int, const std::vector<std::size_t>& tensors,
                             const std::string& name) {
  std::uint64_t bytes = 0;
  for (std::size_t t : tensors)
    bytes += model_.backward_order[t].elements * options_.gradient_element_bytes;
  return size_only(name, bytes);
}

MonitorKernels MonitorKernels::memory_bound(double memory_Bps, std::size_t element_bytes) {
  const double per_byte_ns = 1e9 / memory_Bps;
  const double b = static_cast<double>(element_bytes);
  MonitorKernels k;
  k.sq_norm.per_element_ns = b * per_byte_ns;
  k.square.per_element_ns = 2 * b * per_byte_ns;
  k.variance.per_element_ns = 3 * b * per_byte_ns;
  return k;
}

TimeNs SimEnv::kernel_ns(const KernelCost& kernel, int times) const {
  const double one = static_cast<double>(totals_.tensors) * kernel.overhead_ns +
                     static_cast<double>(totals_.parameters) * kernel.per_element_ns;
  return seconds_to_ns_ceil(times * one * options_.kernels.time_sharing * 1e-9);
}

void SimEnv::gradient_norms(int worker, std::function<void(double, double)> done) {
  // The local and the reduced gradients' norms: unknown, unless the learning is simulated.
  double local_sq = std::numeric_limits<double>::quiet_NaN(), reduced_sq = local_sq;
  if (options_.learning) {
    // Their expectations (McCandlish et al. 2018, eq. A.1; KUNGFU.md 3.1): a mean over b samples
    // has E|g_b|^2 = |G|^2 + tr(Sigma) / b. The local gradient is a mean over the worker's batch,
    // the reduced one the sum of n such means (n^2 times the mean over the global batch). Only
    // tr(Sigma) / |G|^2 = B_simple matters to the monitor: |G|^2 = 1.
    const std::size_t w = static_cast<std::size_t>(worker);
    const int step = step_of_.at(w);
    const double b = batch_of_.at(w);
    const double n = static_cast<double>(learn_step(step).workers.size());
    const double trace = options_.learning->dynamics->b_simple(progress_before(step));
    local_sq = 1 + trace / b;
    reduced_sq = n * n * (1 + trace / (b * n));
  }
  engine_.schedule_after(
      kernel_ns(options_.kernels.sq_norm, 2),
      [done = std::move(done), local_sq, reduced_sq] { done(local_sq, reduced_sq); });
}

SimEnv::LearnStep& SimEnv::learn_step(int step) {
  const std::size_t k = static_cast<std::size_t>(step);
  if (learn_steps_.size() <= k) learn_steps_.resize(k + 1);
  return learn_steps_[k];
}

double SimEnv::progress_before(int step) {
  return step > 0 ? learn_step(step - 1).progress : 0.0;
}

void SimEnv::readings(int worker, int step, std::map<std::string, double>& out) {
  if (!options_.learning) return;
  const SimLearning& l = *options_.learning;
  if (!learn_step(step).done) {
    // The step's update: the global batch is every worker's of this step.
    const double samples_before = step > 0 ? learn_step(step - 1).samples : 0.0;
    const double before = progress_before(step);
    LearnStep& st = learn_step(step);
    const double batch = static_cast<double>(batch_of_.at(static_cast<std::size_t>(worker))) *
                         static_cast<double>(st.workers.size());
    st.progress = l.dynamics->advance(before, batch);
    st.samples = samples_before + batch;
    st.done = true;
  }
  const LearnStep& st = learn_step(step);
  out["learn.samples"] = st.samples;
  out["learn.progress"] = st.progress;
  out["learn.wall_s"] = to_seconds(engine_.now() - learn_start_);
  if (step + 1 == l.total_steps || (l.eval_every > 0 && (step + 1) % l.eval_every == 0)) {
    out["learn.test_accuracy"] = l.dynamics->accuracy(st.progress);
  }
}

void SimEnv::square_gradients(int, runtime::Callback done) {
  engine_.schedule_after(kernel_ns(options_.kernels.square, 1), std::move(done));
}

coll::Workspace SimEnv::squared_gradient(int, std::size_t tensor) {
  const train::Tensor& t = model_.backward_order[tensor];
  return size_only(t.name + "/sq", t.elements * options_.gradient_element_bytes);
}

void SimEnv::gradient_variance(int, std::function<void(double)> done) {
  engine_.schedule_after(kernel_ns(options_.kernels.variance, 1), [done = std::move(done)] {
    done(std::numeric_limits<double>::quiet_NaN());
  });
}

std::unique_ptr<runtime::GpuCollectives> SimEnv::gpu_collectives(const std::vector<int>& members,
                                                                 const train::NcclNet& net) {
  return std::make_unique<SimGpuCollectives>(
      engine_, train::nccl_params_from_topology(topology_, members, options_.arch, net));
}

}  // namespace adaptsim::simulate

namespace adaptsim::simulate {

const runtime::ElasticSpec& SimEnv::elastic() const {
  if (!options_.elastic) {
    throw InputError("this simulation has no `elastic:` map, so its worker set cannot change");
  }
  return *options_.elastic;
}

TimeNs SimEnv::round_trip_ns(int worker_a, int worker_b) const {
  const topo::NodeId a = topology_.rank_host(worker_a), b = topology_.rank_host(worker_b);
  return a == b ? 0 : network_.round_trip_ns(a, b);  // one host: a loopback's round trip, ~0
}

template <typename T>
void SimEnv::store_read(std::function<T()> at_store, std::function<void(const T&)> done) {
  const TimeNs read = elastic().store_read_ns;
  engine_.schedule_after(
      read / 2, [this, read, at_store = std::move(at_store), done = std::move(done)]() mutable {
        engine_.schedule_after(read - read / 2,
                               [value = at_store(), done = std::move(done)] { done(value); });
      });
}

void SimEnv::store_get(int worker, std::function<void(const runtime::ClusterConfig&)> done) {
  (void)worker;
  store_read<runtime::ClusterConfig>([this] { return store_; }, std::move(done));
}

void SimEnv::store_put(int worker, const runtime::ClusterConfig& cluster, runtime::Callback done) {
  (void)worker;
  engine_.schedule_after(elastic().store_write_ns, [this, cluster, done = std::move(done)] {
    store_ = cluster;
    done();
  });
}

void SimEnv::notify_runners(int worker, const runtime::RunnerNotice& notice,
                            runtime::Callback done) {
  // The first notifier's notice is the store's (live: link(2) of the first finished file).
  notices_.emplace(notice.cluster.version,
                   std::make_pair(engine_.now() + elastic().store_write_ns, notice));
  // One runner per server, at its first rank's host.
  std::map<int, int> first_rank;
  for (int r = 0; r < topology_.rank_count(); ++r)
    first_rank.emplace(host_of_[static_cast<std::size_t>(r)], r);
  TimeNs farthest = 0;
  for (const auto& [server, rank] : first_rank) {
    const TimeNs rtt = round_trip_ns(worker, rank);
    farthest = std::max(farthest, rtt);
    engine_.schedule_after(rtt / 2, [this, server = server, notice] {
      const runtime::ClusterConfig& cluster = notice.cluster;
      // A runner acts on a version's first notice: a process for each worker of the cluster on
      // its server that has none (with a restart, every one: the old ones have stopped).
      if (!notified_[cluster.version].insert(server).second) return;
      auto start = [this, server, notice] {
        for (int w : runtime::workers_to_start(
                 notice, [&](int x) { return host_of_[static_cast<std::size_t>(x)] == server; },
                 [&](int x) { return running_.count(x) != 0; })) {
          running_.insert(w);
          share(Resource::cpu, w, to_seconds(elastic().process_start_ns), [this, w, notice] {
            if (started_) started_(w, notice);
          });
        }
      };
      // A restart's runner starts the new processes once the old ones here have exited.
      if (notice.restart && exiting_[server] > 0) {
        after_exits_[server].push_back(std::move(start));
      } else {
        start();
      }
    });
  }
  engine_.schedule_after(farthest, std::move(done));
}

void SimEnv::store_notice(int worker, int version,
                          std::function<void(const std::optional<runtime::RunnerNotice>&)> done) {
  (void)worker;
  store_read<std::optional<runtime::RunnerNotice>>(
      [this, version]() -> std::optional<runtime::RunnerNotice> {
        const auto it = notices_.find(version);
        if (it == notices_.end() || it->second.first > engine_.now()) return std::nullopt;
        return it->second.second;
      },
      std::move(done));
}

void SimEnv::propose_cluster(std::vector<int> workers) {
  runtime::ClusterConfig next{store_.version + 1, std::move(workers)};
  engine_.schedule_after(elastic().store_write_ns, [this, next = std::move(next)] {
    // A later proposal's write may complete first only with a shorter write time: none here.
    store_ = next;
  });
}

void SimEnv::stop_worker(int worker) {
  running_.erase(worker);
  stopped_at_[worker] = engine_.now();
  if (stopped_) stopped_(worker);
  if (elastic().process_exit_ns <= 0) return;
  // The process's exit, seen by its runner (exits at once overlap: measured, ElasticSpec).
  const int server = host_of_.at(static_cast<std::size_t>(worker));
  ++exiting_[server];
  engine_.schedule_after(elastic().process_exit_ns, [this, server] {
    if (--exiting_[server] > 0) return;
    std::vector<runtime::Callback> waiting = std::move(after_exits_[server]);
    after_exits_[server].clear();
    for (runtime::Callback& f : waiting)
      f();
  });
}

void SimEnv::pause_worker(int worker, TimeNs duration, runtime::Callback resumed) {
  paused_since_[worker] = engine_.now();
  engine_.schedule_after(duration, [this, worker, duration, resumed = std::move(resumed)] {
    paused_since_.erase(worker);
    if (duration >= elastic().failure_timeout_ns) lapsed_.insert(worker);
    resumed();
  });
}

void SimEnv::store_leases(int worker, std::function<void(const std::vector<int>&)> done) {
  (void)worker;
  store_read<std::vector<int>>(
      [this] {
        std::vector<int> live;
        for (int w : running_) {
          auto p = paused_since_.find(w);
          if (p == paused_since_.end() || engine_.now() - p->second < elastic().failure_timeout_ns)
            live.push_back(w);
        }
        for (const auto& [w, at] : stopped_at_) {
          if (running_.count(w) == 0 && engine_.now() - at < elastic().failure_timeout_ns)
            live.push_back(w);
        }
        std::sort(live.begin(), live.end());
        return live;
      },
      std::move(done));
}

void SimEnv::store_swap(int worker, int expected_version, const runtime::ClusterConfig& cluster,
                        std::function<void(bool)> done) {
  (void)worker;
  engine_.schedule_after(elastic().store_write_ns,
                         [this, expected_version, cluster, done = std::move(done)] {
                           const bool swapped = store_.version == expected_version;
                           if (swapped) store_ = cluster;
                           done(swapped);
                         });
}

void SimEnv::reset_connections(int worker, const runtime::ClusterConfig& cluster,
                               runtime::Callback done) {
  elastic();
  TimeNs longest = 0;
  for (int peer : cluster.workers)
    if (peer != worker) longest = std::max(longest, round_trip_ns(worker, peer));
  engine_.schedule_after(longest, std::move(done));
}

void SimEnv::write_checkpoint(int worker, std::uint64_t bytes, runtime::Callback done) {
  const runtime::ElasticSpec& e = elastic();
  checkpoint_server_ = host_of_.at(static_cast<std::size_t>(worker));
  if (e.cache_write_Bps > 0) {
    share(Resource::cpu, worker, static_cast<double>(bytes) / e.cache_write_Bps, std::move(done));
  } else {
    share(Resource::disk, worker, static_cast<double>(bytes) / e.disk_write_Bps, std::move(done));
  }
}

void SimEnv::read_checkpoint(int worker, std::uint64_t bytes, runtime::Callback done) {
  const runtime::ElasticSpec& e = elastic();
  if (e.cache_read_Bps > 0 && checkpoint_server_ == host_of_.at(static_cast<std::size_t>(worker))) {
    share(Resource::cpu, worker, static_cast<double>(bytes) / e.cache_read_Bps, std::move(done));
  } else {
    share(Resource::disk, worker, static_cast<double>(bytes) / e.disk_read_Bps, std::move(done));
  }
}

// A server's disk and CPU, each shared equally by the work in progress on it (as the kernel's I/O
// scheduler and page cache share the one disk among concurrent readers or writers, and its CPU
// scheduler the cores among runnable processes): while n jobs run on u units, each progresses at
// min(1, u / n) of its exclusive rate.
void SimEnv::share(Resource resource, int worker, double seconds, runtime::Callback done) {
  const int server = host_of_.at(static_cast<std::size_t>(worker));
  auto [it, fresh] = shared_.try_emplace({resource, server});
  Shared& r = it->second;
  if (fresh) r.units = units(resource);
  advance(r);
  r.active.push_back({seconds, std::move(done)});
  schedule(resource, server);
}

int SimEnv::units(Resource resource) const {
  if (resource == Resource::disk) return 1;
  return options_.compute_cores > 0 ? options_.compute_cores : elastic().server_cores;
}

// The rate each job of `r` progresses at now: 1 alone, less when more jobs than units run.
static double rate_of(int units, std::size_t jobs) {
  const double n = static_cast<double>(jobs);
  return units <= 0 || n <= units ? 1.0 : static_cast<double>(units) / n;
}

// Every job's remaining exclusive time, less what it received since the last update.
void SimEnv::advance(Shared& r) {
  const TimeNs now = engine_.now();
  if (!r.active.empty() && now > r.updated) {
    const double got = to_seconds(now - r.updated) * rate_of(r.units, r.active.size());
    for (Shared::Job& j : r.active)
      j.remaining_s -= got;
  }
  r.updated = now;
}

void SimEnv::schedule(Resource resource, int server) {
  Shared& r = shared_.at({resource, server});
  engine_.cancel(r.next);
  if (r.active.empty()) return;
  double first = r.active.front().remaining_s;
  for (const Shared::Job& j : r.active)
    first = std::min(first, j.remaining_s);
  const double rate = rate_of(r.units, r.active.size());
  r.next = engine_.schedule_after(seconds_to_ns_ceil(std::max(0.0, first) / rate),
                                  [this, resource, server] {
                                    Shared& self = shared_.at({resource, server});
                                    advance(self);
                                    // Done: what has (to the nanosecond's rounding) no exclusive
                                    // time left.
                                    std::vector<runtime::Callback> finished;
                                    std::erase_if(self.active, [&finished](Shared::Job& j) {
                                      if (j.remaining_s > 1e-9) return false;
                                      finished.push_back(std::move(j.done));
                                      return true;
                                    });
                                    schedule(resource, server);
                                    for (runtime::Callback& f : finished)
                                      f();
                                  });
}

}  // namespace adaptsim::simulate
