#pragma once
// All-reduce algorithms over a Transport. One AllReduce object is immutable after construction and
// may serve every rank of a simulation (each run() call keeps its own state) or one live rank.

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "sim/coll/strategy.h"
#include "sim/coll/transport.h"

namespace adaptsim::coll {

struct AllReduceOptions {
  // KungFu splits every tensor into chunks of at most this size (session.go: chunkSize = 1 MiB);
  // each chunk is an independent, concurrently running collective.
  std::size_t chunk_bytes = 1 << 20;
  // KungFu's chunk -> graph-pair hash: by chunk name (default, config.StrategyHashMethod = "NAME")
  // or by chunk index.
  bool hash_by_name = true;
  // The rank a STAR is rooted at (other strategies ignore it).
  int star_root = 0;
};

// One all-reduce on one rank: send and recv hold `count` elements of `dtype`. send and recv must
// not overlap unless they are the same buffer (in place).
struct Workspace {
  std::string name;
  ConstBytes send;
  Bytes recv;
  std::size_t count = 0;
  DType dtype = DType::kF32;
  ReduceOp op = ReduceOp::kSum;
  std::size_t bytes() const { return count * dtype_size(dtype); }
};

// Scratch for an incoming message of `size` bytes of workspace `w`: the transport's memory when
// the workspace carries data, a size-only buffer when it does not (simulated gradients have no
// bytes, so nothing is allocated for them). Release with release_scratch_for.
inline Bytes acquire_scratch_for(Transport& t, const Workspace& w, std::size_t size) {
  return w.recv.data ? t.acquire_scratch(size) : Bytes{nullptr, size};
}
inline void release_scratch_for(Transport& t, Bytes buffer) {
  if (buffer.data) t.release_scratch(buffer);
}

class AllReduce {
 public:
  virtual ~AllReduce() = default;
  // Starts this rank's part; `done` runs when w.recv holds the reduced result on this rank.
  // Every rank must call run() with the same name, count, dtype and op.
  virtual void run(Transport& t, const Workspace& w, Callback done) const = 0;
  virtual StrategyKind kind() const = 0;
  // How its ranks relate for size-only workspaces of `count` elements on n ranks (RankSymmetry).
  virtual RankSymmetry rank_symmetry(int n, std::size_t count) const {
    (void)n;
    (void)count;
    return RankSymmetry::kNone;
  }
};

// host_of_rank: host id per rank (ranks on one host share a master in KungFu's strategies).
std::unique_ptr<AllReduce> make_allreduce(StrategyKind kind, const std::vector<int>& host_of_rank,
                                          const AllReduceOptions& options = {});

// KungFu's graph execution (session.go runGraphs) of one workspace over a sequence of graphs; the
// building block of all-reduce (reduce graph, broadcast graph), and of reduce-only or
// broadcast-only collectives (hierarchical schemes). No chunking here.
void run_graphs(Transport& t, const Workspace& w, std::vector<const CommGraph*> graphs,
                Callback done);

}  // namespace adaptsim::coll
