// A run folded onto one server (fabric::SimFabric::fold_servers) against the same run with every
// rank simulated: the same all-reduce time to the nanosecond and the same message count, over
// server counts, ranks per server, sharing models, connection options and Open MPI's algorithms;
// a shift exchange where folding the channels matters, in closed form; and the runs that must
// not fold.

#include <doctest/doctest.h>

#include <memory>
#include <optional>
#include <stdexcept>
#include <string>

#include "sim/net/network.h"
#include "sim/run/allreduce_sim.h"
#include "sim/topo/cluster_spec.h"

using namespace adaptsim;
using namespace adaptsim::run;

namespace {

topo::ClusterSpec vms(int servers) {
  topo::ClusterSpec c;
  c.name = "vms";
  c.servers = servers;
  c.server.pcie = {16e9, 1000};
  c.server.nic = {1.25e9, 12500};
  c.server.nic_egress_bandwidth_Bps = 0.9e9;  // up and down differ
  c.server.cpu_reduce_bandwidth_Bps = 4.3e9;
  c.server.cpu_loopback_bandwidth_Bps = 1e9;
  c.server.cpu_memory_bandwidth_Bps = 20e9;
  return c;
}

// The folded and the unfolded run; checks that the first folded onto `ranks_per_server` ranks.
// `Algorithm`: a strategy, or Open MPI's options.
template <class Algorithm>
void check_same(const topo::ClusterSpec& spec, const Algorithm& algorithm, std::uint64_t bytes,
                AllReduceSimOptions options, int ranks_per_server) {
  const topo::Topology t = topo::build_cluster(spec);
  options.fold_servers = true;
  const AllReduceSimResult folded = simulate_allreduce(t, algorithm, bytes, options);
  options.fold_servers = false;
  const AllReduceSimResult full = simulate_allreduce(t, algorithm, bytes, options);
  CHECK(full.simulated_ranks == t.rank_count());
  CHECK(folded.simulated_ranks == ranks_per_server);
  CHECK(folded.time_ns == full.time_ns);
  CHECK(folded.messages == full.messages);
  CHECK(full.time_ns > 0);
}

}  // namespace

TEST_CASE("a folded ring takes exactly the time of the ring on every rank") {
  for (int servers : {2, 3, 5, 8, 16}) {
    for (net::Sharing sharing :
         {net::Sharing::kMaxMin, net::Sharing::kBottleneck, net::Sharing::kTcp}) {
      for (bool serialized : {true, false}) {
        CAPTURE(servers);
        CAPTURE(static_cast<int>(sharing));
        CAPTURE(serialized);
        topo::ClusterSpec spec = vms(servers);
        if (sharing == net::Sharing::kTcp) spec.server.nic.queue_ns = 200'000;  // standing queues
        AllReduceSimOptions o;
        o.sharing = sharing;
        o.transport.serialize_per_peer = serialized;
        const std::uint64_t bytes = 4ull * servers * 300'000;  // float32, n divides the count
        check_same(spec, coll::StrategyKind::kClassicRing, bytes, o, 1);
        o.transport.per_message_overhead_ns = 7'000;
        if (serialized) o.transport.socket_buffer_bytes = 64 * 1024;
        check_same(spec, coll::StrategyKind::kClassicRing, bytes, o, 1);
      }
    }
  }
}

TEST_CASE("several ranks per server fold onto server 0's ranks, host or GPU endpoints") {
  topo::ClusterSpec spec = vms(4);
  spec.server.gpus = 4;
  spec.server.cpus = 2;
  spec.server.smp = {20e9, 500};
  spec.server.gpu_reduce_bandwidth_Bps = 80e9;
  for (fabric::Endpoint e : {fabric::Endpoint::kHost, fabric::Endpoint::kGpu}) {
    CAPTURE(static_cast<int>(e));
    AllReduceSimOptions o;
    o.transport.endpoint = e;
    check_same(spec, coll::StrategyKind::kClassicRing, 4ull * 16 * 65'536, o, 4);
  }
}

TEST_CASE("a folded halving-doubling takes exactly the time of every rank's") {
  for (int servers : {2, 4, 8, 16}) {
    for (int gpus : {1, 2, 4}) {
      for (net::Sharing sharing : {net::Sharing::kMaxMin, net::Sharing::kTcp}) {
        CAPTURE(servers);
        CAPTURE(gpus);
        CAPTURE(static_cast<int>(sharing));
        topo::ClusterSpec spec = vms(servers);
        spec.server.gpus = gpus;
        if (sharing == net::Sharing::kTcp) spec.server.nic.queue_ns = 200'000;
        AllReduceSimOptions o;
        o.sharing = sharing;
        o.transport.per_message_overhead_ns = 3'000;
        const int n = servers * gpus;
        check_same(spec, coll::StrategyKind::kHalvingDoubling, 4ull * n * 50'000, o, gpus);
      }
    }
  }
}

TEST_CASE("Open MPI's ring, segmented ring, recursive doubling and Rabenseifner fold exactly") {
  struct Case {
    const char* version;
    std::optional<coll::OmpiAllreduce> forced;
    int servers;
    std::uint64_t bytes;
    coll::OmpiAllreduce algorithm;  // what the decision picks
    int folded;  // ranks run folded: 1, or every rank where the algorithm is not symmetric
  };
  using A = coll::OmpiAllreduce;
  const Case cases[] = {
      {"4.0.0", std::nullopt, 8, 4 * 8 * 300, A::kRecursiveDoubling, 1},
      {"4.0.0", std::nullopt, 8, 4 * 8 * 200'000, A::kRing, 1},
      {"4.0.0", std::nullopt, 4, 4 * 4 * 2'000'000, A::kSegmentedRing, 1},
      {"4.0.0", std::nullopt, 6, 4 * 6 * 200'001, A::kRing, 1},
      {"4.0.0", std::nullopt, 6, 4 * (6 * 200'000 + 1), A::kRing, 6},  // uneven blocks
      {"4.0.0", std::nullopt, 6, 4 * 60, A::kRecursiveDoubling, 6},    // two ranks fold out
      {"4.1.4", std::nullopt, 8, 4 * 8 * 2'000, A::kRabenseifner, 1},
      {"4.1.4", A::kRabenseifner, 8, 4 * 8 * 100'000, A::kRabenseifner, 1},
      {"4.1.4", A::kRabenseifner, 6, 4 * 6 * 100'000, A::kRabenseifner, 6},
  };
  for (const Case& c : cases) {
    for (bool rendezvous : {true, false}) {
      CAPTURE(c.version);
      CAPTURE(c.servers);
      CAPTURE(c.bytes);
      CAPTURE(rendezvous);
      coll::OmpiOptions mpi;
      mpi.version = c.version;
      mpi.rules = *coll::ompi_rules_for_version(c.version);
      mpi.forced = c.forced;
      mpi.rendezvous = rendezvous;
      CHECK(coll::ompi_allreduce_for(mpi, c.servers, c.bytes / 4, 4) == c.algorithm);
      check_same(vms(c.servers), mpi, c.bytes, {}, c.folded);
    }
  }
}

TEST_CASE("runs that cannot be folded run every rank") {
  const topo::ClusterSpec spec = vms(4);
  auto ranks_run = [](const topo::ClusterSpec& s, coll::StrategyKind k, std::uint64_t bytes,
                      AllReduceSimOptions o = {}) {
    return simulate_allreduce(topo::build_cluster(s), k, bytes, o).simulated_ranks;
  };
  // Segments of unequal sizes: rank 0's are not every rank's.
  CHECK(ranks_run(spec, coll::StrategyKind::kClassicRing, 4 * 4001) == 4);
  // Halving-doubling on 3 servers: rank 0 folds out first, rank 1 does not.
  CHECK(ranks_run(vms(3), coll::StrategyKind::kHalvingDoubling, 4 * 3000) == 3);
  CHECK(ranks_run(spec, coll::StrategyKind::kHalvingDoubling, 4 * 4000) == 1);
  // A root: rank 0 does what no other rank does.
  CHECK(ranks_run(spec, coll::StrategyKind::kStar, 4 * 4000) == 4);
  {
    AllReduceSimOptions o;  // every message recorded: all ranks' are wanted
    o.link_stats_bin_ns = 1'000'000;
    CHECK(ranks_run(spec, coll::StrategyKind::kClassicRing, 4 * 4000, o) == 4);
  }
  {
    AllReduceSimOptions o;  // a transport thread per rank: a flow would cross rank 0's twice
    o.transport.one_transport_thread = true;
    CHECK(ranks_run(spec, coll::StrategyKind::kClassicRing, 4 * 4000, o) == 4);
  }
  {
    topo::ClusterSpec lossy = spec;  // each message's losses drawn per sender and receiver
    lossy.server.nic.loss = 0.001;
    CHECK(ranks_run(lossy, coll::StrategyKind::kClassicRing, 4 * 4000) == 4);
  }
  {
    topo::ClusterSpec two_nics = spec;  // ECMP picks a NIC by the pair's hash
    two_nics.server.nics = 2;
    CHECK(ranks_run(two_nics, coll::StrategyKind::kClassicRing, 4 * 4000) == 4);
  }
  {
    topo::ClusterSpec tree = spec;  // servers on different leaves
    tree.fabric.kind = topo::FabricKind::kFatTree;
    tree.fabric.servers_per_leaf = 2;
    tree.fabric.spines = 1;
    tree.fabric.uplink = {1.25e9, 1000};
    CHECK(ranks_run(tree, coll::StrategyKind::kClassicRing, 4 * 4000) == 4);
  }
  CHECK(ranks_run(spec, coll::StrategyKind::kClassicRing, 4 * 4000) == 1);
}

namespace {

// A rotation-equivariant exchange where folding the channels matters: every rank sends to the
// next two ranks at once, so each server's NIC carries two flows each way (a run of server 0's
// ranks that kept their own channels would find the receivers' links idle). Returns the time
// the last simulated rank is done, and how many ranks ran.
std::pair<TimeNs, int> shift_exchange(const topo::Topology& t, net::Sharing sharing, bool fold) {
  EventEngine engine;
  net::Network network(engine, t, sharing);
  fabric::SimFabric f(network, {});
  const int n = t.rank_count();
  const int ranks = fold ? f.fold_servers(coll::RankSymmetry::kRotation) : n;
  REQUIRE(ranks > 0);
  if (fold) {
    CHECK(f.fold_servers(coll::RankSymmetry::kRotation) == ranks);
    CHECK_THROWS_AS(f.fold_servers(coll::RankSymmetry::kXor), std::logic_error);
  }
  TimeNs last = 0;
  for (int r = 0; r < ranks; ++r) {
    auto pending = std::make_shared<int>(4);
    auto done = [&, pending] {
      if (--*pending == 0) last = std::max(last, engine.now());
    };
    coll::Transport& tr = f.transport(r);
    for (int k : {1, 2}) {
      const std::string name = "shift" + std::to_string(k);
      tr.send((r + k) % n, name, {nullptr, 3'000'000u * static_cast<std::size_t>(k)}, done);
      tr.recv((r - k + n) % n, name, {nullptr, 3'000'000u * static_cast<std::size_t>(k)}, done);
    }
  }
  engine.run();
  return {last, ranks};
}

}  // namespace

TEST_CASE("a folded flow shares server 0's links as its images share theirs") {
  topo::ClusterSpec spec = vms(5);
  spec.server.nic_egress_bandwidth_Bps = 2.5e9;  // the receivers' links are the bottleneck
  spec.server.nic.queue_ns = 100'000;
  const topo::Topology t = topo::build_cluster(spec);
  for (net::Sharing sharing :
       {net::Sharing::kMaxMin, net::Sharing::kBottleneck, net::Sharing::kTcp}) {
    CAPTURE(static_cast<int>(sharing));
    const auto [folded_at, folded_ranks] = shift_exchange(t, sharing, true);
    const auto [full_at, full_ranks] = shift_exchange(t, sharing, false);
    CHECK(folded_ranks == 1);
    CHECK(full_ranks == 5);
    CHECK(folded_at == full_at);
    // 3 + 6 MB into each NIC at 1.25 GB/s (the two flows share it, then the larger runs
    // alone): 7.2 ms, plus two PCIe and two NIC hops.
    CHECK(full_at == 7'200'000 + 2 * 1000 + 2 * 12'500);
  }
}
