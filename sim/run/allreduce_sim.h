#pragma once
// One simulated all-reduce: every rank of the topology starts the collective at time 0; the
// result is the time the last rank holds the reduced data.

#include <cstdint>

#include "sim/coll/allreduce.h"
#include "sim/fabric/sim_fabric.h"
#include "sim/topo/cluster_spec.h"

namespace adaptsim::run {

struct AllReduceSimOptions {
  fabric::SimTransportOptions transport;
  coll::AllReduceOptions algorithm;
  coll::DType dtype = coll::DType::kF32;
  net::Sharing sharing = net::Sharing::kMaxMin;
};

struct AllReduceSimResult {
  TimeNs time_ns = 0;
  std::uint64_t messages = 0;
  std::uint64_t events = 0;
};

AllReduceSimResult simulate_allreduce(const topo::Topology& topology, coll::StrategyKind strategy,
                                      std::uint64_t bytes, const AllReduceSimOptions& options);

}  // namespace adaptsim::run
