#include "sim/coll/allreduce.h"

namespace adaptsim::coll {

// Defined next to each algorithm.
std::unique_ptr<AllReduce> make_graph_allreduce(StrategyKind kind, const std::vector<int>& hosts,
                                                const AllReduceOptions& options);
std::unique_ptr<AllReduce> make_classic_ring_allreduce();
std::unique_ptr<AllReduce> make_halving_doubling_allreduce();

std::unique_ptr<AllReduce> make_allreduce(StrategyKind kind, const std::vector<int>& host_of_rank,
                                          const AllReduceOptions& options) {
  switch (kind) {
    case StrategyKind::kClassicRing:
      return make_classic_ring_allreduce();
    case StrategyKind::kHalvingDoubling:
      return make_halving_doubling_allreduce();
    default:
      return make_graph_allreduce(kind, host_of_rank, options);
  }
}

}  // namespace adaptsim::coll
