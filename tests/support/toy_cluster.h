#pragma once
// A toy cluster for step-model tests: `servers` one-GPU (or `gpus`-GPU) servers behind one switch,
// NIC `nic_Bps` both ways and `hop_ns` per NIC hop (host to host: two hops one way); PCIe, loopback
// and reductions effectively free (tests/coll's switched cluster, built).

#include "sim/core/time.h"
#include "sim/topo/topology.h"
#include "tests/coll/sim_harness.h"

namespace adaptsim::topo::testing {

inline Topology one_gpu_servers(int servers, double nic_Bps, TimeNs hop_ns = 10'000, int gpus = 1) {
  return build_cluster(adaptsim::testing::switched(servers, gpus, nic_Bps, hop_ns));
}

}  // namespace adaptsim::topo::testing
