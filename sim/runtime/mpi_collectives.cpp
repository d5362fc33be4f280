#include "sim/runtime/mpi_collectives.h"

#include <algorithm>
#include <map>
#include <string>

#include "sim/coll/rendezvous_transport.h"
#include "sim/core/error.h"
#include "sim/runtime/env.h"

namespace adaptsim::runtime {
namespace {

using Words = MpiCollectives::Words;

coll::Bytes bytes_of(std::uint32_t& word) {
  return {reinterpret_cast<std::byte*>(&word), sizeof word};
}
coll::Bytes bytes_of(Words& w, std::size_t size) {
  return {reinterpret_cast<std::byte*>(w.data()), size};
}

// Open MPI's trees (ompi/mca/coll/base/coll_base_topo.c at v4.0.0), rooted at rank 0.
// The in-order binomial tree of gathers (ompi_coll_base_topo_build_in_order_bmtree): rank v's
// children are v ^ mask for the masks below its lowest set bit, ascending; its parent clears that
// bit. Child k of v gathers the blocks of ranks [k, k + min(k - v, n - k)).
struct GatherNode {
  int parent = -1;
  std::vector<int> children;
};
GatherNode in_order_bmtree(int v, int n) {
  GatherNode node;
  for (int mask = 1; mask < n; mask <<= 1) {
    const int remote = v ^ mask;
    if (remote < v) {
      node.parent = remote;
      break;
    }
    if (remote < n) node.children.push_back(remote);
  }
  return node;
}
int gather_blocks(int v, int child, int n) {
  return std::min(child - v, n - child);
}

// The binomial tree of broadcasts (ompi_coll_base_topo_build_bmtree): with m the smallest power
// of two above v, v's parent is v ^ (m / 2) and its children v ^ m, v ^ 2m, ... below n.
std::vector<int> bmtree_children(int v, int n) {
  std::vector<int> out;
  int mask = 1;
  while (mask <= v)
    mask <<= 1;
  for (; mask < n; mask <<= 1) {
    if ((v ^ mask) >= n) break;
    out.push_back(v ^ mask);
  }
  return out;
}
int bmtree_parent(int v) {
  int mask = 1;
  while (mask <= v)
    mask <<= 1;
  return v ^ (mask >> 1);
}

// The negotiation as Horovod's coordinator exchanges it and Open MPI runs it. MPI_Gather of the
// request lengths (one 32-bit integer each): by the in-order binomial tree where the release's
// tuned decision picks it (2.0-4.0, ompi_coll_tuned_gather_intra_dec_fixed: more than 60 ranks,
// or more than 10 with blocks under 1 KiB; ompi_coll_base_gather_intra_binomial: a node receives
// from its children in order, blocking, then sends what it holds to its parent), else each
// worker's message to rank 0 (basic linear). MPI_Gatherv of the requests: each worker's message
// to rank 0 (coll/tuned has no gatherv; coll/basic's is linear). MPI_Bcast of the response's
// length and of the response: by the binomial tree where the decision picks it
// (ompi_coll_tuned_bcast_intra_dec_fixed: under 2048 B or one element; through
// ompi_coll_base_bcast_intra_generic without segments: a node receives from its parent, then sends
// to its children at once), else rank 0's message to each worker (the split binary tree that
// 2048 B-370 KB takes, and 4.1's decisions, are not modelled). MPI_Allreduce as Open MPI runs it
// over the TCP BTL.
class ModelledMpi final : public MpiCollectives {
 public:
  ModelledMpi(TrainingEnv& env, const coll::OmpiOptions& options)
      : env_(env),
        ompi_(options),
        trees_(options.negotiation_trees && options.rules == coll::OmpiRules::kBefore41) {
    const int n = env.workers();
    workers_.resize(static_cast<std::size_t>(n));
    // Each worker's place in the trees, fixed for the communicator.
    for (int w : env.local_workers()) {
      Worker& s = workers_[static_cast<std::size_t>(w)];
      s.gather = in_order_bmtree(w, n);
      if (trees_) {
        s.bcast_parent = w == 0 ? 0 : bmtree_parent(w);
        s.bcast_children = bmtree_children(w, n);
      }
    }
    if (options.rendezvous) {
      for (int w : env.local_workers()) {
        workers_[static_cast<std::size_t>(w)].rendezvous =
            std::make_unique<coll::RendezvousTransport>(env.transport(w), options.eager_limit_bytes,
                                                        options.match_in_receive);
      }
    }
  }

  void gather(int w, std::uint64_t c, Words list, std::size_t bytes, std::size_t max_bytes,
              std::function<void(std::vector<Words>)> done) override {
    const int n = env_.workers();
    Worker& s = workers_[static_cast<std::size_t>(w)];
    s.out_list = std::move(list);
    s.out_length = static_cast<std::uint32_t>(bytes);
    if (w == 0) {
      Cycle& cy = cycles_[c];
      cy.lengths.assign(static_cast<std::size_t>(n), 0);
      cy.lists.resize(static_cast<std::size_t>(n));
      cy.lists[0] = std::move(s.out_list);
      cy.done = std::move(done);
      cy.arrived = 1;
    } else {
      s.gather_done = std::move(done);
    }
    // Binomial above 10 ranks for a 4-byte block (and above 60 whatever the block).
    if (trees_ && n > 10) {
      s.lengths.assign(static_cast<std::size_t>(n), 0);
      s.lengths[0] = s.out_length;
      gather_child(w, c, 0, 1, max_bytes);
      return;
    }
    if (w != 0) {
      env_.transport(w).send(0, "hvd:reqlen:" + std::to_string(c), bytes_of(s.out_length), [] {});
      return send_request(w, c);
    }
    if (n == 1) return finish_gather(c);
    for (int r = 1; r < n; ++r) {
      env_.transport(0).recv(r, "hvd:reqlen:" + std::to_string(c),
                             bytes_of(cycles_.at(c).lengths[r]),
                             [this, c, r, max_bytes] { receive_request(c, r, max_bytes); });
    }
  }

  void bcast(int w, std::uint64_t c, Words list, std::size_t bytes, std::size_t max_bytes,
             std::function<void(Words)> done) override {
    Worker& s = workers_[static_cast<std::size_t>(w)];
    coll::Transport& t = env_.transport(w);
    const std::string suffix = std::to_string(c);
    const int n = env_.workers();
    if (w == 0) {
      s.out_list = std::move(list);
      s.out_length = static_cast<std::uint32_t>(bytes);
      if (!trees_) {
        for (int r = 1; r < n; ++r) {
          t.send(r, "hvd:resplen:" + suffix, bytes_of(s.out_length), [] {});
          t.send(r, "hvd:resp:" + suffix, bytes_of(s.out_list, bytes), [] {});
        }
        done(s.out_list);
        return;
      }
      // One MPI_Bcast after the other: the length down the tree, then the list (down the tree
      // under 2 KiB, else to each worker).
      for (int r : s.bcast_children)
        t.send(r, "hvd:resplen:" + suffix, bytes_of(s.out_length), [] {});
      if (bytes < 2048) {
        for (int r : s.bcast_children)
          t.send(r, "hvd:resp:" + suffix, bytes_of(s.out_list, bytes), [] {});
      } else {
        for (int r = 1; r < n; ++r)
          t.send(r, "hvd:resp:" + suffix, bytes_of(s.out_list, bytes), [] {});
      }
      done(s.out_list);
      return;
    }
    s.bcast_done = std::move(done);
    t.recv(s.bcast_parent, "hvd:resplen:" + suffix, bytes_of(s.in_length), [this, w, c, max_bytes] {
      Worker& s2 = workers_[static_cast<std::size_t>(w)];
      const std::size_t size = s2.in_length;
      check_length(size, max_bytes, "response", 0);
      const std::string suffix2 = std::to_string(c);
      coll::Transport& t2 = env_.transport(w);
      for (int r : s2.bcast_children)
        t2.send(r, "hvd:resplen:" + suffix2, bytes_of(s2.in_length), [] {});
      const bool tree = trees_ && size < 2048;
      s2.in_list = words_for(size);
      t2.recv(tree ? s2.bcast_parent : 0, "hvd:resp:" + suffix2, bytes_of(s2.in_list, size),
              [this, w, c, size, tree] {
                Worker& s3 = workers_[static_cast<std::size_t>(w)];
                if (tree) {
                  // Forwarded from this worker's copy, which it hands on once the sends are out.
                  s3.fwd_list = s3.in_list;
                  for (int r : s3.bcast_children)
                    env_.transport(w).send(r, "hvd:resp:" + std::to_string(c),
                                           bytes_of(s3.fwd_list, size), [] {});
                }
                auto f = std::move(s3.bcast_done);
                f(std::move(s3.in_list));
              });
    });
  }

  void allreduce(int w, const coll::Workspace& ws, Callback done) override {
    coll::Transport* rv = workers_[static_cast<std::size_t>(w)].rendezvous.get();
    ompi_.run(rv ? *rv : env_.transport(w), ws, std::move(done));
  }

 private:
  // One worker's wire buffers: they outlive the sends and receives using them.
  struct Worker {
    std::uint32_t out_length = 0, in_length = 0;
    Words out_list, in_list, fwd_list;
    std::vector<std::uint32_t> lengths;  // the binomial gather's blocks of its subtree
    GatherNode gather;                   // its place in the in-order binomial tree
    // Its place in the broadcasts' binomial tree (without the trees: rank 0's child, none).
    int bcast_parent = 0;
    std::vector<int> bcast_children;
    std::function<void(std::vector<Words>)> gather_done;
    std::function<void(Words)> bcast_done;
    std::unique_ptr<coll::RendezvousTransport> rendezvous;
  };

  // The binomial gather at worker w: its child `i` next, whose blocks go after the `held` this
  // worker holds; then what it holds to its parent (rank 0: every length is in).
  void gather_child(int w, std::uint64_t c, std::size_t i, int held, std::size_t max_bytes) {
    Worker& s = workers_[static_cast<std::size_t>(w)];
    const int n = env_.workers();
    const std::string suffix = std::to_string(c);
    if (i < s.gather.children.size()) {
      const int child = s.gather.children[i];
      const int blocks = gather_blocks(w, child, n);
      coll::Bytes into{reinterpret_cast<std::byte*>(s.lengths.data() + held),
                       static_cast<std::size_t>(blocks) * sizeof(std::uint32_t)};
      env_.transport(w).recv(child, "hvd:reqlen:" + suffix, into,
                             [this, w, c, i, held, blocks, max_bytes] {
                               gather_child(w, c, i + 1, held + blocks, max_bytes);
                             });
      return;
    }
    if (w != 0) {
      env_.transport(w).send(s.gather.parent, "hvd:reqlen:" + suffix,
                             {reinterpret_cast<std::byte*>(s.lengths.data()),
                              static_cast<std::size_t>(held) * sizeof(std::uint32_t)},
                             [] {});
      return send_request(w, c);
    }
    // Rank 0 holds every rank's length in rank order: the lists next (MPI_Gatherv).
    Cycle& cy = cycles_.at(c);
    for (int r = 1; r < n; ++r)
      cy.lengths[r] = s.lengths[r];
    if (n == 1) return finish_gather(c);
    for (int r = 1; r < n; ++r)
      receive_request(c, r, max_bytes);
  }

  // A worker's MPI_Gatherv part: its list to rank 0; its gather is done.
  void send_request(int w, std::uint64_t c) {
    Worker& s = workers_[static_cast<std::size_t>(w)];
    env_.transport(w).send(0, "hvd:req:" + std::to_string(c), bytes_of(s.out_list, s.out_length),
                           [] {});
    auto f = std::move(s.gather_done);
    f({});
  }

  // Rank 0, rank r's length in hand: its list.
  void receive_request(std::uint64_t c, int r, std::size_t max_bytes) {
    Cycle& cy = cycles_.at(c);
    const std::size_t size = cy.lengths[r];
    check_length(size, max_bytes, "request", r);
    cy.lists[r] = words_for(size);
    env_.transport(0).recv(r, "hvd:req:" + std::to_string(c), bytes_of(cy.lists[r], size),
                           [this, c] {
                             if (++cycles_.at(c).arrived == env_.workers()) finish_gather(c);
                           });
  }
  struct Cycle {  // rank 0's gather of one cycle
    int arrived = 0;
    std::vector<std::uint32_t> lengths;
    std::vector<Words> lists;
    std::function<void(std::vector<Words>)> done;
  };

  void finish_gather(std::uint64_t c) {
    auto node = cycles_.extract(c);
    node.mapped().done(std::move(node.mapped().lists));
  }

  TrainingEnv& env_;
  coll::OmpiAllReduce ompi_;
  const bool trees_;  // the negotiation by the release's tuned trees (see the top)
  std::vector<Worker> workers_;
  std::map<std::uint64_t, Cycle> cycles_;  // rank 0
};

}  // namespace

void MpiCollectives::check_length(long long bytes, std::size_t max_bytes, const char* what,
                                  int from) {
  if (bytes < 8 || static_cast<unsigned long long>(bytes) > max_bytes) {
    throw RuntimeFailure(std::string("horovod: ") + what + " of " + std::to_string(bytes) +
                         " bytes from rank " + std::to_string(from));
  }
}

std::unique_ptr<MpiCollectives> make_modelled_mpi(TrainingEnv& env,
                                                  const coll::OmpiOptions& options) {
  return std::make_unique<ModelledMpi>(env, options);
}

}  // namespace adaptsim::runtime
