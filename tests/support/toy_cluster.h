#pragma once
// A toy cluster for step-model tests: `servers` one-GPU (or `gpus`-GPU) servers behind one switch,
// NIC `nic_Bps` both ways and `hop_ns` per NIC hop (host to host: two hops one way); PCIe, loopback
// and reductions effectively free.

#include "sim/core/time.h"
#include "sim/topo/cluster_spec.h"
#include "sim/topo/topology.h"

namespace adaptsim::topo::testing {

inline Topology one_gpu_servers(int servers, double nic_Bps, TimeNs hop_ns = 10'000, int gpus = 1) {
  ClusterSpec c;
  c.name = "toy";
  c.servers = servers;
  c.server.gpus = gpus;
  c.server.pcie = {1e15, 0};
  c.server.cpu_loopback_bandwidth_Bps = 1e15;
  c.server.nic = {nic_Bps, hop_ns};
  return build_cluster(c);
}

}  // namespace adaptsim::topo::testing
