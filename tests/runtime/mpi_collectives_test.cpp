// Horovod's negotiation over the modelled Open MPI (runtime/mpi_collectives.h): the gather and the
// broadcasts by the release's tuned trees, in closed form on a network of latency only.

#include "sim/runtime/mpi_collectives.h"

#include <doctest/doctest.h>

#include <bit>
#include <memory>
#include <vector>

#include "sim/simulate/sim_env.h"
#include "tests/support/toy_cluster.h"
#include "tests/support/toy_model.h"

using namespace adaptsim;
using namespace adaptsim::runtime;

namespace {

constexpr double kAlpha = 100e-6;  // one way between two servers: two NIC hops of 50 us

topo::Topology servers(int n) {
  return topo::testing::one_gpu_servers(n, 1e15, 50'000);
}

// Host endpoints: Horovod's MPI runs on the CPUs.
simulate::SimEnvOptions host_options() {
  simulate::SimEnvOptions o;
  o.host_transport.endpoint = fabric::Endpoint::kHost;
  return o;
}

struct Times {
  double gather = -1;         // rank 0's gather done
  std::vector<double> bcast;  // each worker's broadcast done
  std::vector<MpiCollectives::Words> gathered, received;
};

// Every worker gathers a list of `words` words holding its rank, and rank 0 then broadcasts a
// response of `response_bytes` (whose words count up from 7), each call at t = 0 on a fresh
// environment.
Times negotiate(int n, const coll::OmpiOptions& options, std::size_t words,
                std::size_t response_bytes) {
  const topo::Topology t = servers(n);
  const train::Model m = train::testing::toy_model({1});
  Times out;
  out.bcast.assign(static_cast<std::size_t>(n), -1);
  out.received.resize(static_cast<std::size_t>(n));
  {
    simulate::SimEnv env(t, m, host_options());
    std::unique_ptr<MpiCollectives> mpi = make_modelled_mpi(env, options);
    for (int w = 0; w < n; ++w) {
      MpiCollectives::Words list(words, static_cast<std::uint32_t>(w));
      mpi->gather(w, 0, list, words * 4, 1 << 20, [&, w](std::vector<MpiCollectives::Words> all) {
        if (w != 0) return;
        out.gather = to_seconds(env.now());
        out.gathered = std::move(all);
      });
    }
    env.engine().run();
  }
  simulate::SimEnv env(t, m, host_options());
  std::unique_ptr<MpiCollectives> mpi = make_modelled_mpi(env, options);
  MpiCollectives::Words response = MpiCollectives::words_for(response_bytes);
  for (std::size_t i = 0; i < response.size(); ++i)
    response[i] = static_cast<std::uint32_t>(7 + i);
  for (int w = 0; w < n; ++w) {
    mpi->bcast(w, 0, w == 0 ? response : MpiCollectives::Words{}, response_bytes, 1 << 20,
               [&, w](MpiCollectives::Words got) {
                 out.bcast[static_cast<std::size_t>(w)] = to_seconds(env.now());
                 out.received[static_cast<std::size_t>(w)] = std::move(got);
               });
  }
  env.engine().run();
  return out;
}

// A rank's depth in Open MPI's binomial trees rooted at 0 (the in-order one of gathers and the
// one of broadcasts alike): one level per set bit.
int depth(int r) {
  return std::popcount(static_cast<unsigned>(r));
}

}  // namespace

TEST_CASE("Horovod's negotiation by Open MPI 4.0.0's tuned trees, in closed form") {
  // Messages of a few bytes on a network of latency only: a message takes alpha. Open MPI 2.0-4.0
  // (ompi_coll_tuned_gather_intra_dec_fixed) gathers 4-byte lengths by the in-order binomial tree
  // above 10 ranks: a node receives from each child, then sends to its parent, so the lengths
  // reach rank 0 after alpha times the tree's height (the largest popcount below n); every
  // worker's list (MPI_Gatherv, linear) leaves right after its own part, so the last one, from a
  // child of rank 0, arrives as the lengths do. At 10 ranks or fewer: basic linear, alpha. The
  // broadcasts (under 2048 B: binomial) reach rank r after popcount(r) alpha; one of 2048 B or
  // more goes from rank 0 to each worker (the split binary tree is not modelled), but only after
  // its length came down the tree. Without the trees (negotiation_trees: false, or 4.1's rules,
  // whose trees are not modelled) every message goes straight to or from rank 0: alpha.
  const double tol = 1e-7;  // the bytes' serialization and hand-offs, a few ns each
  for (int n : {4, 10, 11, 12, 16, 17, 32}) {
    CAPTURE(n);
    int height = 0;
    for (int r = 0; r < n; ++r)
      height = std::max(height, depth(r));
    for (const std::size_t response_bytes : {std::size_t{72}, std::size_t{4096}}) {
      CAPTURE(response_bytes);
      coll::OmpiOptions o;  // 4.0.0
      const Times tree = negotiate(n, o, 18, response_bytes);
      CHECK(tree.gather == doctest::Approx((n > 10 ? height : 1) * kAlpha).epsilon(tol));
      o.negotiation_trees = false;
      const Times direct = negotiate(n, o, 18, response_bytes);
      CHECK(direct.gather == doctest::Approx(kAlpha).epsilon(tol));
      o.negotiation_trees = true;
      o.version = "4.1.4";
      o.rules = coll::OmpiRules::k41;
      const Times later = negotiate(n, o, 18, response_bytes);
      CHECK(later.gather == doctest::Approx(kAlpha).epsilon(tol));
      for (int r = 1; r < n; ++r) {
        CAPTURE(r);
        CHECK(tree.bcast[static_cast<std::size_t>(r)] ==
              doctest::Approx(depth(r) * kAlpha).epsilon(tol));
        CHECK(direct.bcast[static_cast<std::size_t>(r)] == doctest::Approx(kAlpha).epsilon(tol));
        CHECK(later.bcast[static_cast<std::size_t>(r)] == doctest::Approx(kAlpha).epsilon(tol));
      }
      // What arrives is what was sent, whichever way.
      for (const Times* x : {&tree, &direct, &later}) {
        REQUIRE(x->gathered.size() == static_cast<std::size_t>(n));
        for (int r = 0; r < n; ++r)
          CHECK(x->gathered[static_cast<std::size_t>(r)] ==
                MpiCollectives::Words(18, static_cast<std::uint32_t>(r)));
        for (int r = 0; r < n; ++r) {
          const MpiCollectives::Words& got = x->received[static_cast<std::size_t>(r)];
          REQUIRE(got.size() == (response_bytes + 3) / 4);
          CHECK(got.front() == 7);
          CHECK(got.back() == 7 + got.size() - 1);
        }
      }
    }
  }
}
