#include "sim/runtime/mpi_collectives.h"

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

// The negotiation as Horovod's coordinator exchanges it, modelled as messages between each
// worker and rank 0 (a gather is every worker's two sends to rank 0, a broadcast rank 0's two
// sends to each worker, in rank order), and MPI_Allreduce as Open MPI runs it over the TCP BTL.
class ModelledMpi final : public MpiCollectives {
 public:
  ModelledMpi(TrainingEnv& env, const coll::OmpiOptions& options) : env_(env), ompi_(options) {
    const int n = env.workers();
    workers_.resize(static_cast<std::size_t>(n));
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
    coll::Transport& t = env_.transport(w);
    const std::string suffix = std::to_string(c);
    if (w != 0) {
      Worker& s = workers_[static_cast<std::size_t>(w)];
      s.out_list = std::move(list);
      s.out_length = static_cast<std::uint32_t>(bytes);
      t.send(0, "hvd:reqlen:" + suffix, bytes_of(s.out_length), [] {});
      t.send(0, "hvd:req:" + suffix, bytes_of(s.out_list, bytes), [] {});
      done({});
      return;
    }
    const int n = env_.workers();
    Cycle& cy = cycles_[c];
    cy.lengths.assign(static_cast<std::size_t>(n), 0);
    cy.lists.resize(static_cast<std::size_t>(n));
    cy.lists[0] = std::move(list);
    cy.done = std::move(done);
    cy.arrived = 1;
    if (n == 1) return finish_gather(c);
    for (int r = 1; r < n; ++r) {
      t.recv(r, "hvd:reqlen:" + suffix, bytes_of(cy.lengths[r]), [this, c, r, suffix, max_bytes] {
        Cycle& cy2 = cycles_.at(c);
        const std::size_t size = cy2.lengths[r];
        check_length(size, max_bytes, "request", r);
        cy2.lists[r] = words_for(size);
        env_.transport(0).recv(r, "hvd:req:" + suffix, bytes_of(cy2.lists[r], size), [this, c] {
          if (++cycles_.at(c).arrived == env_.workers()) finish_gather(c);
        });
      });
    }
  }

  void bcast(int w, std::uint64_t c, Words list, std::size_t bytes, std::size_t max_bytes,
             std::function<void(Words)> done) override {
    Worker& s = workers_[static_cast<std::size_t>(w)];
    coll::Transport& t = env_.transport(w);
    const std::string suffix = std::to_string(c);
    if (w == 0) {
      s.out_list = std::move(list);
      s.out_length = static_cast<std::uint32_t>(bytes);
      for (int r = 1; r < env_.workers(); ++r) {
        t.send(r, "hvd:resplen:" + suffix, bytes_of(s.out_length), [] {});
        t.send(r, "hvd:resp:" + suffix, bytes_of(s.out_list, bytes), [] {});
      }
      done(s.out_list);
      return;
    }
    s.bcast_done = std::move(done);
    t.recv(0, "hvd:resplen:" + suffix, bytes_of(s.in_length), [this, w, suffix, max_bytes] {
      Worker& s2 = workers_[static_cast<std::size_t>(w)];
      const std::size_t size = s2.in_length;
      check_length(size, max_bytes, "response", 0);
      s2.in_list = words_for(size);
      env_.transport(w).recv(0, "hvd:resp:" + suffix, bytes_of(s2.in_list, size), [this, w] {
        Worker& s3 = workers_[static_cast<std::size_t>(w)];
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
    Words out_list, in_list;
    std::function<void(Words)> bcast_done;
    std::unique_ptr<coll::RendezvousTransport> rendezvous;
  };
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
