#pragma once
// One simulated all-reduce: every rank of the topology starts the collective at time 0; the
// result is the time the last rank holds the reduced data.

#include <cstdint>
#include <vector>

#include "sim/coll/allreduce.h"
#include "sim/coll/ompi_allreduce.h"
#include "sim/fabric/sim_fabric.h"
#include "sim/topo/cluster_spec.h"

namespace adaptsim::run {

struct AllReduceSimOptions {
  fabric::SimTransportOptions transport;
  coll::AllReduceOptions algorithm;
  coll::DType dtype = coll::DType::kF32;
  net::Sharing sharing = net::Sharing::kMaxMin;
  // Record what every link carried, in bins of this width, and every message (the traffic
  // matrix); 0: none.
  TimeNs link_stats_bin_ns = 0;
  // Fold a run onto one server where that is exact (fabric::SimFabric::fold_servers: a
  // symmetric strategy on interchangeable servers, coll::RankSymmetry): the same result, simulating
  // 1 / servers of the messages. false: every rank simulated.
  bool fold_servers = true;
};

struct AllReduceSimResult {
  TimeNs time_ns = 0;
  std::uint64_t messages = 0;  // every rank's (a folded run's, times the servers)
  std::uint64_t events = 0;    // the engine's: a folded run's are one server's
  int simulated_ranks = 0;     // ranks whose collective ran (folded: one server's)
  // AllReduceSimOptions::link_stats_bin_ns > 0: every resource's use, and every message.
  std::vector<net::LinkUse> links;
  std::vector<fabric::Transmission> transmissions;
};

AllReduceSimResult simulate_allreduce(const topo::Topology& topology, coll::StrategyKind strategy,
                                      std::uint64_t bytes, const AllReduceSimOptions& options);
// Open MPI's MPI_Allreduce (its release's algorithm for the size; ob1's rendezvous where set).
AllReduceSimResult simulate_allreduce(const topo::Topology& topology, const coll::OmpiOptions& mpi,
                                      std::uint64_t bytes, const AllReduceSimOptions& options);

}  // namespace adaptsim::run
