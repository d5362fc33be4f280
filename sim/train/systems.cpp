// The compared training systems, each a mechanism (KUNGFU.md sections 2 and 5, Horovod 0.16's
// operations.cc), not a fitted curve:
//   ideal          no communication: gradients are reduced the moment they are ready;
//   kungfu         per-tensor asynchronous all-reduce over a KungFu strategy, staged through host
//                  memory (device->host copy, all-reduce over TCP on the CPU, host->device copy);
//   horovod        Horovod 0.16 over MPI: a background loop per worker every cycle reports ready
//                  tensors to rank 0, rank 0 answers with the tensors ready everywhere, fused up to
//                  the fusion threshold, and every worker runs the fused ring all-reduces in order;
//   nccl           NCCL all-reduce per tensor in one order fixed at the first step (KungFu's NCCL
//                  scheduler), launched after polling the tensor's CUDA event;
//   horovod-nccl   Horovod's negotiation and fusion with NCCL all-reduce on the fused buffer;
//   hierarchical   NCCL reduce to the host's root GPU, KungFu all-reduce among host masters over
//                  the host network, NCCL broadcast; scheduled as all reduce_* then all bcast_*.

#include <map>
#include <memory>

#include "sim/coll/allreduce.h"
#include "sim/coll/subset_transport.h"
#include "sim/train/horovod_coordinator.h"
#include "sim/train/nccl_queue.h"
#include "sim/train/system.h"

namespace adaptsim::train {
namespace {

std::vector<int> hosts_of(const topo::Topology& t) {
  std::vector<int> h(t.rank_count());
  for (int r = 0; r < t.rank_count(); ++r)
    h[r] = t.rank_server(r);
  return h;
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

// ---------------------------------------------------------------------------------------------

class IdealSystem final : public System {
 public:
  void attach(SystemEnv& env) override { env_ = &env; }
  void gradient_ready(int worker, int, std::size_t tensor) override {
    env_->engine().schedule_after(
        0, [this, worker, tensor] { env_->gradient_reduced(worker, tensor); });
  }

 private:
  SystemEnv* env_ = nullptr;
};

// ---------------------------------------------------------------------------------------------

class KungFuSystem final : public System {
 public:
  explicit KungFuSystem(const SystemConfig& c) : config_(c) {}

  void attach(SystemEnv& env) override {
    env_ = &env;
    algo_ = coll::make_allreduce(config_.strategy, hosts_of(env.topology()),
                                 {.chunk_bytes = config_.chunk_bytes, .hash_by_name = true});
  }

  void gradient_ready(int w, int, std::size_t t) override {
    const topo::NodeId gpu = env_->topology().rank_gpu(w), host = env_->topology().rank_host(w);
    const std::uint64_t bytes = env_->tensor_bytes(t);
    env_->activity(w, +1);
    // TensorFlow copies the GPU gradient to the host for KungFu's CPU kernel ...
    env_->network().transfer(gpu, host, static_cast<double>(bytes), [=, this] {
      // ... which runs the named, chunked all-reduce over TCP (the op name is the same every step,
      // so chunks hash to the same graphs every step, as in KungFu) ...
      const coll::Workspace ws = size_only(env_->model().backward_order[t].name, bytes);
      algo_->run(env_->host_fabric().transport(w), ws, [=, this] {
        // ... and copies the result back to the GPU.
        env_->network().transfer(host, gpu, static_cast<double>(bytes), [=, this] {
          env_->activity(w, -1);
          env_->gradient_reduced(w, t);
        });
      });
    });
  }

 private:
  SystemConfig config_;
  SystemEnv* env_ = nullptr;
  std::unique_ptr<coll::AllReduce> algo_;
};

// ---------------------------------------------------------------------------------------------
// Horovod's coordinator, shared by the MPI and NCCL variants.

class HorovodSystem : public System {
 public:
  explicit HorovodSystem(const SystemConfig& c, bool nccl) : config_(c), nccl_(nccl) {}

  void attach(SystemEnv& env) override {
    env_ = &env;
    const int n = env.workers();
    workers_.resize(n);
    table_ = std::make_unique<HorovodMessageTable>(n);
    ring_ = coll::make_allreduce(coll::StrategyKind::kClassicRing, hosts_of(env.topology()));
    if (nccl_) {
      std::vector<int> all(n);
      for (int r = 0; r < n; ++r)
        all[r] = r;
      queue_ = std::make_unique<NcclQueue>(
          env.engine(), nccl_params_from_topology(env.topology(), all, env.gpu_arch()));
    }
    for (int w = 0; w < n; ++w)
      start_cycle(w);
  }

  void gradient_ready(int w, int, std::size_t t) override {
    if (nccl_) {
      workers_[w].pending.push_back(t);  // the tensor stays on the GPU
      return;
    }
    // Horovod 0.16's MPI ops are CPU kernels for GPU tensors: TensorFlow stages them to the host.
    const topo::NodeId gpu = env_->topology().rank_gpu(w), host = env_->topology().rank_host(w);
    env_->activity(w, +1);
    env_->network().transfer(gpu, host, static_cast<double>(env_->tensor_bytes(t)), [=, this] {
      env_->activity(w, -1);
      workers_[w].pending.push_back(t);
    });
  }

 private:
  struct Worker {
    std::vector<std::size_t> pending;  // ready, not yet reported
    TimeNs cycle_start = 0;
    std::uint64_t cycle = 0;
  };
  struct Cycle {  // rank 0's table for one cycle
    int requests = 0;
    std::vector<std::vector<std::size_t>> per_rank;
  };

  // RunLoopOnce: sleep until last start + cycle time, then negotiate and execute.
  void start_cycle(int w) {
    if (!env_->running()) return;
    Worker& s = workers_[w];
    const TimeNs next = s.cycle_start + config_.cycle_time_ns;
    const TimeNs now = env_->engine().now();
    if (now < next && s.cycle > 0) {
      env_->engine().schedule_at(next, [this, w] { begin_cycle(w); });
    } else {
      begin_cycle(w);
    }
  }

  void begin_cycle(int w) {
    if (!env_->running()) return;
    Worker& s = workers_[w];
    s.cycle_start = env_->engine().now();
    const std::uint64_t c = s.cycle++;
    std::vector<std::size_t> report = std::move(s.pending);
    s.pending.clear();
    if (w == 0) {
      on_request(c, 0, std::move(report));
    } else {
      // MPI_Gather of the serialised request list to rank 0.
      const std::uint64_t bytes = 8 + config_.negotiation_bytes_per_tensor * report.size();
      auto payload = std::make_shared<std::vector<std::size_t>>(std::move(report));
      const std::string name = "hvd:req:" + std::to_string(c);
      env_->host_fabric().transport(w).send(0, name, {nullptr, bytes}, [] {});
      env_->host_fabric().transport(0).recv(w, name, {nullptr, bytes},
                                            [=, this] { on_request(c, w, std::move(*payload)); });
    }
    // Every other worker then waits for rank 0's response (MPI_Bcast). Rank 0 cannot answer
    // cycle c before this worker's request arrived, so the registration is always in time.
    if (w != 0) waiting_[c].push_back(w);
  }

  void on_request(std::uint64_t c, int rank, std::vector<std::size_t> tensors) {
    Cycle& cy = cycles_[c];
    if (cy.per_rank.empty()) cy.per_rank.resize(env_->workers());
    cy.per_rank[rank] = std::move(tensors);
    if (++cy.requests < env_->workers()) return;
    const std::vector<std::size_t> ready = table_->add_cycle(cy.per_rank);
    cycles_.erase(c);
    auto groups = std::make_shared<std::vector<std::vector<std::size_t>>>(fuse_tensors(
        ready, [this](std::size_t t) { return env_->tensor_bytes(t); }, config_.fusion_bytes));
    // Broadcast of the response list (MPI_Bcast), then every rank, rank 0 included, executes it:
    // rank 0 broadcasts before its own first all-reduce (RunLoopOnce in operations.cc), so the
    // response never queues behind rank 0's ring traffic on a connection.
    const std::uint64_t bytes = 8 + config_.negotiation_bytes_per_tensor * ready.size();
    const std::string name = "hvd:resp:" + std::to_string(c);
    for (int w : waiting_[c]) {
      env_->host_fabric().transport(0).send(w, name, {nullptr, bytes}, [] {});
      env_->host_fabric().transport(w).recv(0, name, {nullptr, bytes},
                                            [=, this] { execute(w, c, groups); });
    }
    waiting_.erase(c);
    execute(0, c, groups);
  }

  // Runs the fused all-reduces one after another (the background thread blocks in each), then
  // the next cycle.
  void execute(int w, std::uint64_t c,
               std::shared_ptr<std::vector<std::vector<std::size_t>>> groups, std::size_t g = 0) {
    if (g == groups->size()) {
      start_cycle(w);
      return;
    }
    const std::vector<std::size_t>& group = (*groups)[g];
    std::uint64_t bytes = 0;
    for (std::size_t t : group)
      bytes += env_->tensor_bytes(t);
    env_->activity(w, +1);
    auto next = [=, this] {
      env_->activity(w, -1);
      finish_group(w, (*groups)[g]);
      execute(w, c, groups, g + 1);
    };
    if (nccl_) {
      queue_->launch(w, NcclColl::kAllReduce, bytes, next);
    } else {
      const std::string name = "hvd:" + std::to_string(c) + ":" + std::to_string(g);
      ring_->run(env_->host_fabric().transport(w), size_only(name, bytes), next);
    }
  }

  void finish_group(int w, const std::vector<std::size_t>& group) {
    if (nccl_) {
      for (std::size_t t : group)
        env_->gradient_reduced(w, t);
      return;
    }
    // The result goes back to the GPU (TensorFlow's host->device copy after the CPU op).
    const topo::NodeId gpu = env_->topology().rank_gpu(w), host = env_->topology().rank_host(w);
    for (std::size_t t : group) {
      env_->activity(w, +1);
      env_->network().transfer(host, gpu, static_cast<double>(env_->tensor_bytes(t)), [=, this] {
        env_->activity(w, -1);
        env_->gradient_reduced(w, t);
      });
    }
  }

  SystemConfig config_;
  bool nccl_;
  SystemEnv* env_ = nullptr;
  std::vector<Worker> workers_;
  std::unique_ptr<coll::AllReduce> ring_;
  std::unique_ptr<NcclQueue> queue_;
  std::map<std::uint64_t, Cycle> cycles_;
  std::unique_ptr<HorovodMessageTable> table_;
  std::map<std::uint64_t, std::vector<int>> waiting_;
};

// ---------------------------------------------------------------------------------------------
// KungFu's NCCL scheduler: a per-worker linear executor that launches the collectives in a fixed
// order, polling each tensor's readiness every `nccl_poll_ns`.
// Simplification: the order is the backward order from step 0. KungFu's auto-ordering runs the
// first step in the sorted-name order and then adopts rank 0's arrival order, broadcast to all
// (KUNGFU.md 5); here every worker emits its gradients in backward order, so that arrival order
// is the backward order and only step 0 (a warm-up step, left out of the statistics unless
// warmup_steps is 0) and the order broadcast's few microseconds are not modelled.

class OrderedLauncher {
 public:
  using Launch = std::function<void(std::size_t task)>;
  OrderedLauncher(EventEngine& engine, std::size_t tasks, TimeNs poll_ns, Launch launch)
      : engine_(engine), ready_(tasks, false), poll_ns_(poll_ns), launch_(std::move(launch)) {}

  void reset() {
    std::fill(ready_.begin(), ready_.end(), false);
    next_ = 0;
    wait_start_ = engine_.now();
  }
  void mark_ready(std::size_t task) {
    ready_[task] = true;
    if (task == next_ && !polling_) poll();
  }

 private:
  // The executor waits on task next_: it launches as soon as it sees the task ready, checking at
  // wait_start + k * poll.
  void poll() {
    if (next_ >= ready_.size() || !ready_[next_]) return;
    const TimeNs now = engine_.now();
    TimeNs at = now;
    if (now > wait_start_ && poll_ns_ > 0) {
      const TimeNs k = (now - wait_start_ + poll_ns_ - 1) / poll_ns_;
      at = wait_start_ + k * poll_ns_;
    }
    polling_ = true;
    engine_.schedule_at(at, [this] {
      polling_ = false;
      launch_(next_);
      ++next_;
      wait_start_ = engine_.now();
      poll();
    });
  }

  EventEngine& engine_;
  std::vector<bool> ready_;
  TimeNs poll_ns_;
  Launch launch_;
  std::size_t next_ = 0;
  TimeNs wait_start_ = 0;
  bool polling_ = false;
};

class NcclScheduledSystem final : public System {
 public:
  explicit NcclScheduledSystem(const SystemConfig& c) : config_(c) {}

  void attach(SystemEnv& env) override {
    env_ = &env;
    const int n = env.workers();
    std::vector<int> all(n);
    for (int r = 0; r < n; ++r)
      all[r] = r;
    queue_ = std::make_unique<NcclQueue>(
        env.engine(), nccl_params_from_topology(env.topology(), all, env.gpu_arch()));
    const std::size_t tensors = env.model().backward_order.size();
    for (int w = 0; w < n; ++w) {
      launchers_.push_back(std::make_unique<OrderedLauncher>(
          env.engine(), tensors, config_.nccl_poll_ns, [this, w](std::size_t t) {
            env_->activity(w, +1);
            queue_->launch(w, NcclColl::kAllReduce, env_->tensor_bytes(t), [this, w, t] {
              env_->activity(w, -1);
              env_->gradient_reduced(w, t);
            });
          }));
    }
    step_.assign(n, -1);
  }

  void gradient_ready(int w, int step, std::size_t t) override {
    if (step_[w] != step) {
      step_[w] = step;
      launchers_[w]->reset();
    }
    launchers_[w]->mark_ready(t);
  }

 private:
  SystemConfig config_;
  SystemEnv* env_ = nullptr;
  std::unique_ptr<NcclQueue> queue_;
  std::vector<std::unique_ptr<OrderedLauncher>> launchers_;
  std::vector<int> step_;
};

// ---------------------------------------------------------------------------------------------

class HierarchicalSystem final : public System {
 public:
  explicit HierarchicalSystem(const SystemConfig& c) : config_(c) {}

  void attach(SystemEnv& env) override {
    env_ = &env;
    const topo::Topology& topo = env.topology();
    const int n = env.workers();
    tensors_ = env.model().backward_order.size();
    std::map<int, std::vector<int>> by_server;
    for (int r = 0; r < n; ++r)
      by_server[topo.rank_server(r)].push_back(r);
    for (const auto& [server, ranks] : by_server) {
      const int q = static_cast<int>(queues_.size());
      queues_.push_back(std::make_unique<NcclQueue>(
          env.engine(), nccl_params_from_topology(topo, ranks, env.gpu_arch())));
      masters_.push_back(ranks.front());
      for (std::size_t i = 0; i < ranks.size(); ++i) {
        local_index_[ranks[i]] = static_cast<int>(i);
        queue_of_[ranks[i]] = q;
      }
    }
    // KungFu's cross strategies: a binary tree over the host masters (genCrossStrategyList for
    // anything but RING, which gets rings over the masters).
    std::vector<int> master_hosts;
    for (int m : masters_)
      master_hosts.push_back(topo.rank_server(m));
    const coll::StrategyKind cross = config_.strategy == coll::StrategyKind::kRing
                                         ? coll::StrategyKind::kRing
                                         : coll::StrategyKind::kBinaryTree;
    cross_algo_ = coll::make_allreduce(cross, master_hosts, {.chunk_bytes = config_.chunk_bytes});
    for (std::size_t i = 0; i < masters_.size(); ++i) {
      cross_transport_.push_back(std::make_unique<coll::SubsetTransport>(
          env.host_fabric().transport(masters_[i]), masters_, "cross:"));
      master_index_[masters_[i]] = static_cast<int>(i);
    }
    // Each worker's scheduler runs 2T tasks: reduce_0..reduce_{T-1}, then bcast_0..bcast_{T-1}.
    for (int w = 0; w < n; ++w) {
      launchers_.push_back(
          std::make_unique<OrderedLauncher>(env.engine(), 2 * tensors_, config_.nccl_poll_ns,
                                            [this, w](std::size_t task) { launch(w, task); }));
    }
    step_.assign(n, -1);
  }

  void gradient_ready(int w, int step, std::size_t t) override {
    if (step_[w] != step) {
      step_[w] = step;
      launchers_[w]->reset();
    }
    launchers_[w]->mark_ready(t);  // reduce_t needs only the local gradient
  }

 private:
  void launch(int w, std::size_t task) {
    NcclQueue& q = *queues_[queue_of_.at(w)];
    const int member = local_index_.at(w);
    if (task < tensors_) {
      const std::size_t t = task;
      env_->activity(w, +1);
      q.launch(member, NcclColl::kReduce, env_->tensor_bytes(t), [this, w, t] {
        env_->activity(w, -1);
        after_local_reduce(w, t);
      });
    } else {
      const std::size_t t = task - tensors_;
      env_->activity(w, +1);
      q.launch(member, NcclColl::kBroadcast, env_->tensor_bytes(t), [this, w, t] {
        env_->activity(w, -1);
        env_->gradient_reduced(w, t);
      });
    }
  }

  void after_local_reduce(int w, std::size_t t) {
    auto it = master_index_.find(w);
    if (it == master_index_.end() || masters_.size() == 1) {
      // Not a master (or a single host): bcast_t's input is ready once the reduce completed.
      launchers_[w]->mark_ready(tensors_ + t);
      return;
    }
    // CrossAllReduceGpu on the local root: device->host, KungFu all-reduce among masters,
    // host->device.
    const topo::NodeId gpu = env_->topology().rank_gpu(w), host = env_->topology().rank_host(w);
    const std::uint64_t bytes = env_->tensor_bytes(t);
    const int mi = it->second;
    env_->activity(w, +1);
    env_->network().transfer(gpu, host, static_cast<double>(bytes), [=, this] {
      cross_algo_->run(*cross_transport_[mi],
                       size_only(env_->model().backward_order[t].name, bytes), [=, this] {
                         env_->network().transfer(host, gpu, static_cast<double>(bytes), [=, this] {
                           env_->activity(w, -1);
                           launchers_[w]->mark_ready(tensors_ + t);
                         });
                       });
    });
  }

  SystemConfig config_;
  SystemEnv* env_ = nullptr;
  std::size_t tensors_ = 0;
  std::vector<std::unique_ptr<NcclQueue>> queues_;
  std::vector<int> masters_;
  std::map<int, int> local_index_, queue_of_, master_index_;
  std::unique_ptr<coll::AllReduce> cross_algo_;
  std::vector<std::unique_ptr<coll::SubsetTransport>> cross_transport_;
  std::vector<std::unique_ptr<OrderedLauncher>> launchers_;
  std::vector<int> step_;
};

}  // namespace

std::string_view system_kind_name(SystemKind kind) {
  switch (kind) {
    case SystemKind::kIdeal:
      return "ideal";
    case SystemKind::kKungFu:
      return "kungfu";
    case SystemKind::kHorovod:
      return "horovod";
    case SystemKind::kNcclScheduled:
      return "nccl";
    case SystemKind::kHorovodNccl:
      return "horovod-nccl";
    case SystemKind::kHierarchical:
      return "hierarchical";
  }
  return "?";
}

std::optional<SystemKind> parse_system_kind(std::string_view name) {
  for (SystemKind k :
       {SystemKind::kIdeal, SystemKind::kKungFu, SystemKind::kHorovod, SystemKind::kNcclScheduled,
        SystemKind::kHorovodNccl, SystemKind::kHierarchical}) {
    if (system_kind_name(k) == name) return k;
  }
  return std::nullopt;
}

std::unique_ptr<System> make_system(const SystemConfig& c) {
  switch (c.kind) {
    case SystemKind::kIdeal:
      return std::make_unique<IdealSystem>();
    case SystemKind::kKungFu:
      return std::make_unique<KungFuSystem>(c);
    case SystemKind::kHorovod:
      return std::make_unique<HorovodSystem>(c, false);
    case SystemKind::kNcclScheduled:
      return std::make_unique<NcclScheduledSystem>(c);
    case SystemKind::kHorovodNccl:
      return std::make_unique<HorovodSystem>(c, true);
    case SystemKind::kHierarchical:
      return std::make_unique<HierarchicalSystem>(c);
  }
  return nullptr;
}

}  // namespace adaptsim::train
