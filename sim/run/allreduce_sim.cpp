#include "sim/run/allreduce_sim.h"

#include <algorithm>
#include <optional>

#include "sim/net/network.h"

namespace adaptsim::run {

AllReduceSimResult simulate_allreduce(const topo::Topology& topology, coll::StrategyKind strategy,
                                      std::uint64_t bytes, const AllReduceSimOptions& options) {
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
  std::vector<int> hosts(n);
  for (int r = 0; r < n; ++r)
    hosts[r] = topology.rank_server(r);
  auto algo = coll::make_allreduce(strategy, hosts, options.algorithm);
  const std::size_t esize = coll::dtype_size(options.dtype);
  AllReduceSimResult result;
  int finished = 0;
  for (int r = 0; r < n; ++r) {
    coll::Workspace w;
    w.name = "allreduce";
    w.count = bytes / esize;
    w.dtype = options.dtype;
    w.send = {nullptr, w.count * esize};
    w.recv = {nullptr, w.count * esize};
    algo->run(fabric.transport(r), w, [&] {
      ++finished;
      result.time_ns = std::max(result.time_ns, engine.now());
    });
  }
  engine.run();
  if (finished != n) {
    throw std::logic_error("simulated all-reduce finished on " + std::to_string(finished) + " of " +
                           std::to_string(n) + " ranks");
  }
  result.messages = fabric.messages_delivered();
  result.events = engine.events_run();
  if (recorder) {
    result.links = recorder->report(network.flows(), engine.now());
    result.transmissions = fabric.transmissions();
  }
  return result;
}

}  // namespace adaptsim::run
