// KungFu's asynchronous all-reduce over graph strategies (session.go: runStrategiesWithHash and
// runGraphs): chunk, pick a graph pair per chunk by hash, reduce up the reduce graph, broadcast
// down the broadcast graph. Messages are matched by (peer, name), so chunks and tensors run
// concurrently in any order.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sim/coll/allreduce.h"
#include "sim/coll/partition.h"

namespace adaptsim::coll {
namespace {

// State of one workspace running through its graphs on one rank.
class GraphRun : public std::enable_shared_from_this<GraphRun> {
 public:
  GraphRun(Transport& t, Workspace w, std::vector<const CommGraph*> graphs, Callback done)
      : t_(t), w_(std::move(w)), graphs_(std::move(graphs)), done_(std::move(done)) {}

  void start() { next_graph(); }

 private:
  // KungFu's "effective buffer": the own data until something was received, then the result.
  ConstBytes effective() const { return received_ == 0 ? w_.send : ConstBytes(w_.recv); }
  // Intentional deviation: KungFu sends both graphs' messages under the chunk's bare name and
  // relies on its per-(peer, name) FIFO; RING uses the edge x -> x+1 in both graphs, so the
  // "#<graph index>" suffix keeps a reduce partial and a broadcast result apart without that
  // ordering. The pair is still chosen by the hash of the bare name, as KungFu does.
  // The current graph's message name, built once per graph in a string kept across graphs.
  const std::string& message_name() const { return name_; }
  void name_graph() {
    name_.assign(w_.name);
    name_ += '#';
    name_ += std::to_string(graph_index_);
  }

  void next_graph() {
    if (graph_index_ == graphs_.size()) {
      Callback done = std::move(done_);
      done();
      return;
    }
    const CommGraph& g = *graphs_[graph_index_];
    name_graph();
    const int me = t_.rank();
    const auto& prevs = g.prevs(me);
    auto self = shared_from_this();
    if (g.self_loop(me)) {
      // Reduce: receive from all children in parallel, fold each in, then forward.
      if (prevs.empty()) {
        send_to_nexts();
        return;
      }
      reduced_in_graph_ = 0;
      arrived_.assign(prevs.size(), std::nullopt);
      next_in_order_ = 0;
      for (std::size_t i = 0; i < prevs.size(); ++i) {
        Bytes buf = acquire_scratch_for(t_, w_, w_.bytes());
        t_.recv(prevs[i], message_name(), buf, [self, buf, i] {
          self->arrived_[i] = buf;
          self->pump_reductions();
        });
      }
    } else if (prevs.empty()) {
      // A broadcast root forwards what it has; a lone node copies its data into place.
      if (received_ == 0) {
        t_.copy(w_.recv, w_.send, [self] { self->send_to_nexts(); });
      } else {
        send_to_nexts();
      }
    } else {
      // Broadcast: take the parent's data as is (KungFu logs an error for more than one parent).
      t_.recv(prevs.front(), message_name(), w_.recv, [self] {
        ++self->received_;
        self->send_to_nexts();
      });
    }
  }

  // Reductions of one workspace are serialised, as under KungFu's per-workspace lock. KungFu folds
  // the children's data in as it arrives; so does this where the workspace is sizes only (the
  // simulated gradients: the order changes no value). Intentional deviation where it holds
  // values: they are folded in the graph's order of children, a child that arrives early waiting
  // for the ones before it, so the float sums, and with them a run that learns, are the same in
  // every run for a seed and a process count (issue 16; floating-point addition is not
  // associative).
  void pump_reductions() {
    if (reducing_) return;
    std::size_t next = 0;
    if (w_.recv.data != nullptr) {
      next = next_in_order_;
      if (next == arrived_.size() || !arrived_[next]) return;  // the next child's is to come
      ++next_in_order_;
    } else {
      while (next < arrived_.size() && !arrived_[next])
        ++next;
      if (next == arrived_.size()) return;
    }
    reducing_ = true;
    Bytes msg = *arrived_[next];
    arrived_[next].reset();
    auto self = shared_from_this();
    t_.reduce(w_.recv, effective(), msg, w_.dtype, w_.op, [self, msg] {
      release_scratch_for(self->t_, msg);
      ++self->received_;
      self->reducing_ = false;
      const auto& prevs = self->graphs_[self->graph_index_]->prevs(self->t_.rank());
      if (++self->reduced_in_graph_ == prevs.size()) {
        self->send_to_nexts();
      } else {
        self->pump_reductions();
      }
    });
  }

  void send_to_nexts() {
    const auto& nexts = graphs_[graph_index_]->nexts(t_.rank());
    if (nexts.empty()) {
      ++graph_index_;
      next_graph();
      return;
    }
    sends_pending_ = nexts.size();
    auto self = shared_from_this();
    const ConstBytes data = effective();
    for (int q : nexts) {
      t_.send(q, message_name(), data, [self] {
        if (--self->sends_pending_ == 0) {
          ++self->graph_index_;
          self->next_graph();
        }
      });
    }
  }

  Transport& t_;
  const Workspace w_;
  const std::vector<const CommGraph*> graphs_;
  Callback done_;
  std::size_t graph_index_ = 0;
  std::string name_;          // message_name()
  std::size_t received_ = 0;  // KungFu's recvCount
  std::size_t reduced_in_graph_ = 0;
  std::size_t sends_pending_ = 0;
  bool reducing_ = false;
  // Per child of this graph: its data, arrived and not yet folded in; with values, the children
  // before next_in_order_ are folded.
  std::vector<std::optional<Bytes>> arrived_;
  std::size_t next_in_order_ = 0;
};

class GraphAllReduce final : public AllReduce {
 public:
  GraphAllReduce(StrategyKind kind, const std::vector<int>& hosts, AllReduceOptions options)
      : kind_(kind), pairs_(make_graph_pairs(kind, hosts, options.star_root)), options_(options) {}

  StrategyKind kind() const override { return kind_; }

  void run(Transport& t, const Workspace& w, Callback done) const override {
    if (t.size() == 1 || w.count == 0) {
      t.copy(w.recv, w.send, std::move(done));
      return;
    }
    const std::size_t esize = dtype_size(w.dtype);
    const std::size_t k = ceil_div(w.bytes(), options_.chunk_bytes);
    auto remaining = std::make_shared<std::size_t>(k);
    auto shared_done = std::make_shared<Callback>(std::move(done));
    std::size_t i = 0;
    for (const Interval& part : even_partition({0, w.count}, k)) {
      Workspace chunk;
      chunk.name = "part::" + w.name + "[" + std::to_string(part.begin) + ":" +
                   std::to_string(part.end) + "]";
      chunk.send = w.send.sub(part.begin * esize, part.length() * esize);
      chunk.recv = w.recv.sub(part.begin * esize, part.length() * esize);
      chunk.count = part.length();
      chunk.dtype = w.dtype;
      chunk.op = w.op;
      const std::uint64_t h = options_.hash_by_name ? kungfu_name_hash(chunk.name) : i;
      const GraphPair& pair = pairs_[h % pairs_.size()];
      auto run = std::make_shared<GraphRun>(
          t, std::move(chunk), std::vector<const CommGraph*>{&pair.reduce, &pair.bcast},
          [remaining, shared_done] {
            if (--*remaining == 0) (*shared_done)();
          });
      run->start();
      ++i;
    }
  }

 private:
  StrategyKind kind_;
  std::vector<GraphPair> pairs_;
  AllReduceOptions options_;
};

}  // namespace

void run_graphs(Transport& t, const Workspace& w, std::vector<const CommGraph*> graphs,
                Callback done) {
  std::make_shared<GraphRun>(t, w, std::move(graphs), std::move(done))->start();
}

std::unique_ptr<AllReduce> make_graph_allreduce(StrategyKind kind, const std::vector<int>& hosts,
                                                const AllReduceOptions& options) {
  return std::make_unique<GraphAllReduce>(kind, hosts, options);
}

}  // namespace adaptsim::coll
