#pragma once
// What turns a fitted line t(m) = a + b m into per-link numbers: the number of sequential
// communication steps of an algorithm (alpha_per_step = a / steps) and the collective's
// nccl-tests bus-bandwidth factor (busbw_inf = factor / b; coll::bus_bandwidth_factor,
// sim/coll/collective.h).
//
// Steps (FACTS 2.4; Thakur et al. 2005):
//   p2p                  1 (one message; the ping-pong's one-way time)
//   CLASSIC_RING         2 (n - 1)         reduce-scatter + all-gather
//   HALVING_DOUBLING     2 floor(log2 n), + 2 when n is not a power of two (the fold and unfold)
//   KungFu graph strategies (STAR, TREE, RING, ...): 2 x the depth of the deepest broadcast graph
//                        of the strategy on this host layout (reduce up the tree, broadcast down)
//   nccl                 as a ring: all_reduce 2 (n - 1); all_gather, reduce_scatter, broadcast,
//                        reduce, alltoall n - 1; sendrecv 1. NCCL may choose a tree or NVLS; the
//                        ring count is the convention of FACTS 2.5 step 2.

#include <string_view>
#include <vector>

#include "sim/coll/collective.h"

namespace adaptsim::calibrate {

// host_of_rank: the host id of each rank (topology-aware strategies); empty = every rank on its
// own host. Unknown algorithm names count 1 step.
int algorithm_steps(std::string_view algorithm, coll::Collective collective, int n_ranks,
                    const std::vector<int>& host_of_rank = {});

}  // namespace adaptsim::calibrate
