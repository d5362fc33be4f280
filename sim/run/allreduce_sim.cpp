#include "sim/run/allreduce_sim.h"

#include <algorithm>
#include <functional>
#include <memory>
#include <optional>

#include "sim/coll/rendezvous_transport.h"
#include "sim/net/network.h"

namespace adaptsim::run {

namespace {

// Starts rank r's part of the all-reduce of workspace w on the fabric, calling done at its end.
using RunRank =
    std::function<void(fabric::SimFabric&, int, const coll::Workspace&, coll::Callback)>;

// symmetry: how the collective's ranks relate (coll::AllReduce::rank_symmetry), for folding.
AllReduceSimResult simulate(const topo::Topology& topology, const RunRank& run_rank,
                            std::uint64_t bytes, const AllReduceSimOptions& options,
                            coll::RankSymmetry symmetry) {
  EventEngine engine;
  net::Network network(engine, topology, options.sharing);
  std::optional<net::LinkRecorder> recorder;
  fabric::SimTransportOptions transport = options.transport;
  if (options.link_stats_bin_ns > 0) {
    recorder.emplace(options.link_stats_bin_ns);
    network.flows().set_recorder(&*recorder);
    transport.record_transmissions = true;
  }
  fabric::SimFabric fabric(network, transport);
  const int n = topology.rank_count();
  const std::size_t esize = coll::dtype_size(options.dtype);
  AllReduceSimResult result;
  const int folded = options.fold_servers ? fabric.fold_servers(symmetry) : 0;
  result.simulated_ranks = folded > 0 ? folded : n;
  int finished = 0;
  for (int r = 0; r < result.simulated_ranks; ++r) {
    coll::Workspace w;
    w.name = "allreduce";
    w.count = bytes / esize;
    w.dtype = options.dtype;
    w.send = {nullptr, w.count * esize};
    w.recv = {nullptr, w.count * esize};
    run_rank(fabric, r, w, [&] {
      ++finished;
      result.time_ns = std::max(result.time_ns, engine.now());
    });
  }
  engine.run();
  if (finished != result.simulated_ranks) {
    throw std::logic_error("simulated all-reduce finished on " + std::to_string(finished) + " of " +
                           std::to_string(result.simulated_ranks) + " ranks");
  }
  result.messages =
      fabric.messages_delivered() * static_cast<std::uint64_t>(n / result.simulated_ranks);
  result.events = engine.events_run();
  if (recorder) {
    result.links = recorder->report(network.flows(), engine.now());
    result.transmissions = fabric.transmissions();
  }
  return result;
}

}  // namespace

AllReduceSimResult simulate_allreduce(const topo::Topology& topology, coll::StrategyKind strategy,
                                      std::uint64_t bytes, const AllReduceSimOptions& options) {
  std::vector<int> hosts(static_cast<std::size_t>(topology.rank_count()));
  for (int r = 0; r < topology.rank_count(); ++r)
    hosts[static_cast<std::size_t>(r)] = topology.rank_server(r);
  const auto algo = coll::make_allreduce(strategy, hosts, options.algorithm);
  return simulate(
      topology,
      [&](fabric::SimFabric& f, int r, const coll::Workspace& w, coll::Callback done) {
        algo->run(f.transport(r), w, std::move(done));
      },
      bytes, options,
      algo->rank_symmetry(topology.rank_count(), bytes / coll::dtype_size(options.dtype)));
}

AllReduceSimResult simulate_allreduce(const topo::Topology& topology, const coll::OmpiOptions& mpi,
                                      std::uint64_t bytes, const AllReduceSimOptions& options) {
  const coll::OmpiAllReduce algo(mpi);
  std::vector<std::unique_ptr<coll::RendezvousTransport>> ob1;
  return simulate(
      topology,
      [&](fabric::SimFabric& f, int r, const coll::Workspace& w, coll::Callback done) {
        coll::Transport* t = &f.transport(r);
        if (mpi.rendezvous) {
          ob1.push_back(std::make_unique<coll::RendezvousTransport>(*t, mpi.eager_limit_bytes,
                                                                    mpi.match_in_receive));
          t = ob1.back().get();
        }
        algo.run(*t, w, std::move(done));
      },
      bytes, options,
      algo.rank_symmetry(topology.rank_count(), bytes / coll::dtype_size(options.dtype),
                         options.dtype));
}

}  // namespace adaptsim::run
