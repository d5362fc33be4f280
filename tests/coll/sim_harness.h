#pragma once
// A small simulated cluster for collective tests: N servers x G GPUs behind one switch.

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "sim/coll/allreduce.h"
#include "sim/fabric/sim_fabric.h"
#include "sim/net/network.h"
#include "sim/topo/cluster_spec.h"

namespace adaptsim::testing {

struct SimCluster {
  explicit SimCluster(const topo::ClusterSpec& spec, fabric::SimTransportOptions options = {})
      : topology(topo::build_cluster(spec)), network(engine, topology), fabric(network, options) {}
  EventEngine engine;
  topo::Topology topology;
  net::Network network;
  fabric::SimFabric fabric;

  std::vector<int> hosts() const {
    std::vector<int> h;
    for (int r = 0; r < topology.rank_count(); ++r)
      h.push_back(topology.rank_server(r));
    return h;
  }
};

// A float32 workspace of `bytes` that carries no values (the simulated gradients' kind).
inline coll::Workspace size_only_workspace(std::string name, std::size_t bytes) {
  coll::Workspace w;
  w.name = std::move(name);
  w.send = {nullptr, bytes};
  w.recv = {nullptr, bytes};
  w.count = bytes / 4;
  return w;
}

// The closed-form tests' switch: 10 Gbit/s NICs, 5 us per NIC hop; host-to-host paths cross two
// NIC hops, so alpha = 2 hops.
inline constexpr double kB = 1.25e9;
inline constexpr TimeNs kHop = 5000;
inline constexpr double kAlpha = 2 * kHop * 1e-9;

// Servers with `gpus` GPUs each; NIC bandwidth B (bytes/s) and per-hop latency as given; PCIe
// so fast and close that it never matters; reductions free unless set.
inline topo::ClusterSpec switched(int servers, int gpus, double nic_Bps = 1.25e9,
                                  TimeNs nic_latency = 5000) {
  topo::ClusterSpec c;
  c.name = "test";
  c.servers = servers;
  c.server.gpus = gpus;
  c.server.pcie = {1e15, 0};
  c.server.cpu_loopback_bandwidth_Bps = 1e15;
  c.server.nic = {nic_Bps, nic_latency};
  return c;
}

}  // namespace adaptsim::testing
