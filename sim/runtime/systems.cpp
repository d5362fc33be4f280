// The compared training systems, each a mechanism (KUNGFU.md sections 2 and 5, Horovod 0.16's
// operations.cc), not a fitted curve, written once against TrainingEnv:
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
//
// Every worker runs its own part (SPMD): what one worker sends another receives through the
// transport, so the same code drives every worker of a simulation and one live rank.

#include <cstring>
#include <map>
#include <memory>
#include <stdexcept>

#include "sim/coll/allreduce.h"
#include "sim/coll/subset_transport.h"
#include "sim/core/error.h"
#include "sim/runtime/horovod_coordinator.h"
#include "sim/runtime/system.h"

namespace adaptsim::runtime {

std::string strategy_label(const StrategyChoice& c) {
  std::string s(coll::strategy_name(c.kind));
  // Appended piecewise: GCC 12 warns falsely (-Wrestrict, bug 105651) on "@" + std::string.
  if (c.kind == coll::StrategyKind::kStar && c.root != 0)
    s.append("@").append(std::to_string(c.root));
  return s;
}

void System::set_strategy(int, const StrategyChoice&) {
  throw std::logic_error("this system has no all-reduce strategy to change");
}

void System::reduce_squares(int, Callback) {
  throw std::logic_error("this system runs no monitor's second all-reduce");
}

namespace {

// ---------------------------------------------------------------------------------------------

class IdealSystem final : public System {
 public:
  void attach(const SystemContext& c) override { c_ = c; }
  void gradient_ready(int worker, int, std::size_t tensor) override {
    c_.env->at(c_.env->now(),
               [this, worker, tensor] { c_.sink->gradient_reduced(worker, tensor); });
  }
  // Communication is free: the squares are reduced at once.
  void reduce_squares(int, Callback done) override { c_.env->at(c_.env->now(), std::move(done)); }

 private:
  SystemContext c_;
};

// ---------------------------------------------------------------------------------------------

class KungFuSystem final : public System {
 public:
  explicit KungFuSystem(const SystemConfig& c) : config_(c) {}

  void attach(const SystemContext& c) override {
    c_ = c;
    const StrategyChoice initial{config_.strategy, 0};
    algo_of_.assign(static_cast<std::size_t>(c.env->workers()), &algo(initial));
    choice_of_.assign(algo_of_.size(), initial);
  }

  void gradient_ready(int w, int, std::size_t t) override {
    TrainingEnv& env = *c_.env;
    const std::uint64_t bytes = c_.tensor_bytes[t];
    c_.sink->activity(w, +1);
    // TensorFlow copies the GPU gradient to the host for KungFu's CPU kernel ...
    env.copy_to_host(w, bytes, [=, this] {
      // ... which runs the named, chunked all-reduce over TCP (the op name is the same every step,
      // so chunks hash to the same graphs every step, as in KungFu) ...
      algo_of_[w]->run(c_.env->transport(w), c_.env->gradient(w, t), [=, this] {
        // ... and copies the result back to the GPU.
        c_.env->copy_to_device(w, bytes, [=, this] {
          c_.sink->activity(w, -1);
          c_.sink->gradient_reduced(w, t);
        });
      });
    });
  }

  // KungFu's variance monitor all-reduces every tensor's g^2 as it does g (group_all_reduce,
  // KUNGFU.md 3.2): staged through the host, the worker's strategy, chunked and named, all
  // tensors launched together.
  void reduce_squares(int w, Callback done) override {
    auto left = std::make_shared<std::size_t>(c_.tensor_bytes.size());
    c_.sink->activity(w, +1);
    for (std::size_t t = 0; t < c_.tensor_bytes.size(); ++t) {
      const std::uint64_t bytes = c_.tensor_bytes[t];
      c_.env->copy_to_host(w, bytes, [=, this] {
        algo_of_[w]->run(c_.env->transport(w), c_.env->squared_gradient(w, t), [=, this] {
          c_.env->copy_to_device(w, bytes, [=, this] {
            if (--*left > 0) return;
            c_.sink->activity(w, -1);
            done();
          });
        });
      });
    }
  }

  void set_strategy(int w, const StrategyChoice& choice) override {
    algo_of_[w] = &algo(choice);
    choice_of_[w] = choice;
  }
  std::optional<StrategyChoice> strategy(int w) const override { return choice_of_[w]; }

 private:
  // One immutable AllReduce per strategy serves every worker; all stay alive, since collectives
  // of a finished step may still hold their graphs.
  const coll::AllReduce& algo(const StrategyChoice& choice) {
    auto& slot = algos_[choice];
    if (!slot) {
      slot = coll::make_allreduce(
          choice.kind, c_.env->host_of_worker(),
          {.chunk_bytes = config_.chunk_bytes, .hash_by_name = true, .star_root = choice.root});
    }
    return *slot;
  }

  SystemConfig config_;
  SystemContext c_;
  std::map<StrategyChoice, std::unique_ptr<coll::AllReduce>> algos_;
  std::vector<const coll::AllReduce*> algo_of_;  // per worker
  std::vector<StrategyChoice> choice_of_;
};

// ---------------------------------------------------------------------------------------------
// Horovod's coordinator (horovod/common/operations.cc at v0.16.1, RunLoopOnce), shared by the MPI
// and NCCL variants. Each cycle, every worker other than rank 0 sends rank 0 the length of its
// request list and then the list (MPI_Gather of the lengths, MPI_Gatherv of the lists, lines
// 1254-1257); rank 0 adds every list to its message table, fuses the tensors now ready everywhere
// and sends every worker the response's length and then the response (MPI_Bcast twice, lines
// 1205-1207 and 1262-1264); every worker then executes the fused groups one after another. The
// four calls go through the job's MPI (mpi_collectives.h): modelled over the environment's
// transport, or a live process's real MPI library.
//
// On the wire a list is modelled at its FlatBuffers size, 8 B + negotiation_bytes_per_tensor per
// tensor; the bytes carry the tensor indices as 32-bit words, so the receiver decodes them:
//   request   [count, tensor...]
//   response  [groups, size_0, tensor of group 0..., size_1, ...]
// A worker's loop stops after the cycle in which it reduced its last gradient of the last step;
// every worker executes the same responses, so all stop in the same cycle.

using Words = MpiCollectives::Words;

class HorovodSystem : public System {
 public:
  HorovodSystem(const SystemConfig& c, bool nccl) : config_(c), nccl_(nccl) {}

  void attach(const SystemContext& c) override {
    c_ = c;
    TrainingEnv& env = *c.env;
    const int n = env.workers();
    tensors_ = c.tensor_bytes.size();
    target_ = tensors_ * static_cast<std::uint64_t>(c.total_steps);
    workers_.resize(static_cast<std::size_t>(n));
    table_ = std::make_unique<HorovodMessageTable>(n);
    mpi_ = env.mpi_collectives(config_.mpi, config_.mpi_library);
    if (nccl_) {
      std::vector<int> all(static_cast<std::size_t>(n));
      for (int r = 0; r < n; ++r)
        all[static_cast<std::size_t>(r)] = r;
      gpu_ = env.gpu_collectives(all, config_.nccl_net);
    }
    for (int w : env.local_workers())
      begin_cycle(w);
  }

  void gradient_ready(int w, int, std::size_t t) override {
    if (nccl_) {
      workers_[w].pending.push_back(t);  // the tensor stays on the GPU
      return;
    }
    // Horovod 0.16's MPI ops are CPU kernels for GPU tensors: TensorFlow stages them to the host.
    c_.sink->activity(w, +1);
    c_.env->copy_to_host(w, c_.tensor_bytes[t], [=, this] {
      c_.sink->activity(w, -1);
      workers_[w].pending.push_back(t);
    });
  }

 private:
  struct Worker {
    std::vector<std::size_t> pending;  // ready, not yet reported
    TimeNs cycle_start = 0;
    std::uint64_t cycle = 0;
    std::uint64_t reduced = 0;  // gradients reduced over all steps
  };

  // The modelled size of a list of `entries` tensors.
  std::size_t wire_bytes(std::size_t entries) const {
    return 8 + config_.negotiation_bytes_per_tensor * entries;
  }

  // RunLoopOnce: sleep until the last start + the cycle time, then negotiate and execute.
  void next_cycle(int w) {
    Worker& s = workers_[w];
    if (s.reduced >= target_) return;
    const TimeNs next = std::max(c_.env->now(), s.cycle_start + config_.cycle_time_ns);
    c_.env->at(next, [this, w] { begin_cycle(w); });
  }

  void begin_cycle(int w) {
    Worker& s = workers_[w];
    s.cycle_start = c_.env->now();
    const std::uint64_t c = s.cycle++;
    std::vector<std::size_t> report = std::move(s.pending);
    s.pending.clear();
    // MPI_Gather of the request's length, MPI_Gatherv of the request; rank 0 then answers.
    const std::size_t bytes = wire_bytes(report.size());
    Words request = MpiCollectives::words_for(bytes);
    request[0] = static_cast<std::uint32_t>(report.size());
    for (std::size_t i = 0; i < report.size(); ++i)
      request[1 + i] = static_cast<std::uint32_t>(report[i]);
    mpi_->gather(w, c, std::move(request), bytes, wire_bytes(tensors_),
                 [this, w, c](std::vector<Words> lists) {
                   if (w == 0) return respond(c, lists);
                   // Rank 0's response: its length, then the list (MPI_Bcast twice).
                   mpi_->bcast(w, c, {}, 0, wire_bytes(tensors_), [this, w, c](Words response) {
                     execute(w, c, decode_response(response));
                   });
                 });
  }

  std::vector<std::size_t> decode_request(const Words& w, int from) const {
    if (w[0] > tensors_ || 1 + w[0] > w.size()) {
      throw RuntimeFailure("horovod: malformed request from rank " + std::to_string(from));
    }
    std::vector<std::size_t> out;
    for (std::size_t i = 0; i < w[0]; ++i) {
      if (w[1 + i] >= tensors_) {
        throw RuntimeFailure("horovod: request from rank " + std::to_string(from) +
                             " names tensor " + std::to_string(w[1 + i]));
      }
      out.push_back(w[1 + i]);
    }
    return out;
  }

  using Groups = std::shared_ptr<std::vector<std::vector<std::size_t>>>;

  Groups decode_response(const Words& w) const {
    auto groups = std::make_shared<std::vector<std::vector<std::size_t>>>();
    std::size_t at = 0;
    const std::size_t n = w[at++];
    for (std::size_t g = 0; g < n; ++g) {
      if (at >= w.size()) throw RuntimeFailure("horovod: malformed response from rank 0");
      const std::size_t size = w[at++];
      if (size == 0 || at + size > w.size()) {
        throw RuntimeFailure("horovod: malformed response from rank 0");
      }
      std::vector<std::size_t> group;
      for (std::size_t i = 0; i < size; ++i) {
        if (w[at] >= tensors_) throw RuntimeFailure("horovod: response names an unknown tensor");
        group.push_back(w[at++]);
      }
      groups->push_back(std::move(group));
    }
    return groups;
  }

  // Rank 0, every worker's request of cycle c in hand: the message table, the fused groups, the
  // response to every worker; then rank 0 executes it too. Rank 0 broadcasts before its own first
  // all-reduce (RunLoopOnce), so the response never queues behind rank 0's ring traffic on a
  // connection.
  void respond(std::uint64_t c, const std::vector<Words>& lists) {
    std::vector<std::vector<std::size_t>> per_rank(lists.size());
    for (std::size_t r = 0; r < lists.size(); ++r)
      per_rank[r] = decode_request(lists[r], static_cast<int>(r));
    const std::vector<std::size_t> ready = table_->add_cycle(per_rank);
    const std::vector<std::vector<std::size_t>> groups = fuse_tensors(
        ready, [this](std::size_t t) { return c_.tensor_bytes[t]; }, config_.fusion_bytes);
    const std::size_t bytes = wire_bytes(ready.size());
    Words response = MpiCollectives::words_for(bytes);
    std::size_t at = 0;
    response[at++] = static_cast<std::uint32_t>(groups.size());
    for (const auto& g : groups) {
      response[at++] = static_cast<std::uint32_t>(g.size());
      for (std::size_t t : g)
        response[at++] = static_cast<std::uint32_t>(t);
    }
    mpi_->bcast(0, c, std::move(response), bytes, wire_bytes(tensors_),
                [this, c](Words sent) { execute(0, c, decode_response(sent)); });
  }

  // Runs the fused all-reduces one after another (the background thread blocks in each), then
  // the next cycle.
  void execute(int w, std::uint64_t c, Groups groups, std::size_t g = 0) {
    if (g == groups->size()) {
      next_cycle(w);
      return;
    }
    const std::vector<std::size_t>& group = (*groups)[g];
    c_.sink->activity(w, +1);
    auto next = [=, this] {
      c_.sink->activity(w, -1);
      finish_group(w, (*groups)[g]);
      execute(w, c, groups, g + 1);
    };
    if (nccl_) {
      std::uint64_t bytes = 0;
      for (std::size_t t : group)
        bytes += c_.tensor_bytes[t];
      gpu_->launch(w, train::NcclColl::kAllReduce, bytes, next);
    } else {
      // Horovod's MPI_Allreduce of the fusion buffer (a lone tensor: its own buffers).
      const std::string name = "hvd:" + std::to_string(c) + ":" + std::to_string(g);
      mpi_->allreduce(w, c_.env->fuse(w, group, name), next);
    }
  }

  void finish_group(int w, const std::vector<std::size_t>& group) {
    workers_[w].reduced += group.size();
    if (nccl_) {
      for (std::size_t t : group)
        c_.sink->gradient_reduced(w, t);
      return;
    }
    c_.env->unfuse(w, group);
    // The result goes back to the GPU (TensorFlow's host->device copy after the CPU op).
    for (std::size_t t : group) {
      c_.sink->activity(w, +1);
      c_.env->copy_to_device(w, c_.tensor_bytes[t], [=, this] {
        c_.sink->activity(w, -1);
        c_.sink->gradient_reduced(w, t);
      });
    }
  }

  SystemConfig config_;
  bool nccl_;
  SystemContext c_;
  std::size_t tensors_ = 0;
  std::uint64_t target_ = 0;
  std::vector<Worker> workers_;
  std::unique_ptr<MpiCollectives> mpi_;
  std::unique_ptr<GpuCollectives> gpu_;
  std::unique_ptr<HorovodMessageTable> table_;
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
  OrderedLauncher(TrainingEnv& env, std::size_t tasks, TimeNs poll_ns, Launch launch)
      : env_(env), ready_(tasks, false), poll_ns_(poll_ns), launch_(std::move(launch)) {}

  void reset() {
    std::fill(ready_.begin(), ready_.end(), false);
    next_ = 0;
    wait_start_ = env_.now();
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
    const TimeNs now = env_.now();
    TimeNs at = now;
    if (now > wait_start_ && poll_ns_ > 0) {
      const TimeNs k = (now - wait_start_ + poll_ns_ - 1) / poll_ns_;
      at = wait_start_ + k * poll_ns_;
    }
    polling_ = true;
    env_.at(at, [this] {
      polling_ = false;
      launch_(next_);
      ++next_;
      wait_start_ = env_.now();
      poll();
    });
  }

  TrainingEnv& env_;
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

  void attach(const SystemContext& c) override {
    c_ = c;
    TrainingEnv& env = *c.env;
    const int n = env.workers();
    std::vector<int> all(static_cast<std::size_t>(n));
    for (int r = 0; r < n; ++r)
      all[static_cast<std::size_t>(r)] = r;
    gpu_ = env.gpu_collectives(all, config_.nccl_net);
    const std::size_t tensors = c.tensor_bytes.size();
    launchers_.resize(static_cast<std::size_t>(n));
    for (int w : env.local_workers()) {
      launchers_[w] = std::make_unique<OrderedLauncher>(
          env, tensors, config_.nccl_poll_ns, [this, w](std::size_t t) {
            c_.sink->activity(w, +1);
            gpu_->launch(w, train::NcclColl::kAllReduce, c_.tensor_bytes[t], [this, w, t] {
              c_.sink->activity(w, -1);
              c_.sink->gradient_reduced(w, t);
            });
          });
    }
    step_.assign(static_cast<std::size_t>(n), -1);
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
  SystemContext c_;
  std::unique_ptr<GpuCollectives> gpu_;
  std::vector<std::unique_ptr<OrderedLauncher>> launchers_;
  std::vector<int> step_;
};

// ---------------------------------------------------------------------------------------------

class HierarchicalSystem final : public System {
 public:
  explicit HierarchicalSystem(const SystemConfig& c) : config_(c) {}

  void attach(const SystemContext& c) override {
    c_ = c;
    TrainingEnv& env = *c.env;
    const std::vector<int>& host = env.host_of_worker();
    const int n = env.workers();
    tensors_ = c.tensor_bytes.size();
    std::map<int, std::vector<int>> by_server;
    for (int r = 0; r < n; ++r)
      by_server[host[static_cast<std::size_t>(r)]].push_back(r);
    for (const auto& [server, ranks] : by_server) {
      const int q = static_cast<int>(groups_.size());
      groups_.push_back(env.gpu_collectives(ranks, config_.nccl_net));  // inside a server
      masters_.push_back(ranks.front());
      for (std::size_t i = 0; i < ranks.size(); ++i) {
        local_index_[ranks[i]] = static_cast<int>(i);
        group_of_[ranks[i]] = q;
      }
    }
    // KungFu's cross strategies: a binary tree over the host masters (genCrossStrategyList for
    // anything but RING, which gets rings over the masters).
    std::vector<int> master_hosts;
    for (int m : masters_)
      master_hosts.push_back(host[static_cast<std::size_t>(m)]);
    const coll::StrategyKind cross = config_.strategy == coll::StrategyKind::kRing
                                         ? coll::StrategyKind::kRing
                                         : coll::StrategyKind::kBinaryTree;
    cross_algo_ = coll::make_allreduce(cross, master_hosts, {.chunk_bytes = config_.chunk_bytes});
    cross_transport_.resize(masters_.size());
    for (std::size_t i = 0; i < masters_.size(); ++i)
      master_index_[masters_[i]] = static_cast<int>(i);
    // Each worker's scheduler runs 2T tasks: reduce_0..reduce_{T-1}, then bcast_0..bcast_{T-1}.
    launchers_.resize(static_cast<std::size_t>(n));
    for (int w : env.local_workers()) {
      if (auto it = master_index_.find(w); it != master_index_.end()) {
        cross_transport_[it->second] =
            std::make_unique<coll::SubsetTransport>(env.transport(w), masters_, "cross:");
      }
      launchers_[w] =
          std::make_unique<OrderedLauncher>(env, 2 * tensors_, config_.nccl_poll_ns,
                                            [this, w](std::size_t task) { launch(w, task); });
    }
    step_.assign(static_cast<std::size_t>(n), -1);
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
    GpuCollectives& q = *groups_[group_of_.at(w)];
    const int member = local_index_.at(w);
    if (task < tensors_) {
      const std::size_t t = task;
      c_.sink->activity(w, +1);
      q.launch(member, train::NcclColl::kReduce, c_.tensor_bytes[t], [this, w, t] {
        c_.sink->activity(w, -1);
        after_local_reduce(w, t);
      });
    } else {
      const std::size_t t = task - tensors_;
      c_.sink->activity(w, +1);
      q.launch(member, train::NcclColl::kBroadcast, c_.tensor_bytes[t], [this, w, t] {
        c_.sink->activity(w, -1);
        c_.sink->gradient_reduced(w, t);
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
    const std::uint64_t bytes = c_.tensor_bytes[t];
    const int mi = it->second;
    c_.sink->activity(w, +1);
    c_.env->copy_to_host(w, bytes, [=, this] {
      cross_algo_->run(*cross_transport_[mi], c_.env->gradient(w, t), [=, this] {
        c_.env->copy_to_device(w, bytes, [=, this] {
          c_.sink->activity(w, -1);
          launchers_[w]->mark_ready(tensors_ + t);
        });
      });
    });
  }

  SystemConfig config_;
  SystemContext c_;
  std::size_t tensors_ = 0;
  std::vector<std::unique_ptr<GpuCollectives>> groups_;
  std::vector<int> masters_;
  std::map<int, int> local_index_, group_of_, master_index_;
  std::unique_ptr<coll::AllReduce> cross_algo_;
  std::vector<std::unique_ptr<coll::SubsetTransport>> cross_transport_;
  std::vector<std::unique_ptr<OrderedLauncher>> launchers_;
  std::vector<int> step_;
};

constexpr SystemKind kAllKinds[] = {SystemKind::kIdeal,       SystemKind::kKungFu,
                                    SystemKind::kHorovod,     SystemKind::kNcclScheduled,
                                    SystemKind::kHorovodNccl, SystemKind::kHierarchical};

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

const std::vector<SystemKind>& all_system_kinds() {
  static const std::vector<SystemKind> kinds(std::begin(kAllKinds), std::end(kAllKinds));
  return kinds;
}

std::optional<SystemKind> parse_system_kind(std::string_view name) {
  for (SystemKind k : kAllKinds) {
    if (system_kind_name(k) == name) return k;
  }
  return std::nullopt;
}

bool runs_on_host_transport(SystemKind kind) {
  return kind == SystemKind::kIdeal || kind == SystemKind::kKungFu || kind == SystemKind::kHorovod;
}

bool has_strategy(SystemKind kind) {
  return kind == SystemKind::kKungFu;
}

bool has_flat_nccl(SystemKind kind) {
  return kind == SystemKind::kNcclScheduled || kind == SystemKind::kHorovodNccl;
}

bool has_squares_allreduce(SystemKind kind) {
  return kind == SystemKind::kIdeal || kind == SystemKind::kKungFu;
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

}  // namespace adaptsim::runtime
