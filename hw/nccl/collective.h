#pragma once
// The collectives the NCCL sweep runs and nccl-tests' conventions for them (NVIDIA/nccl-tests
// src/{all_reduce,all_gather,reduce_scatter,broadcast}.cu; FACTS §1.4): how a sweep size becomes
// per-rank element counts. Their names and bus-bandwidth factors are sim/coll/collective.h's.
// Pure C++: no NCCL or CUDA here, so calibration code can use it without a GPU.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "sim/coll/collective.h"

namespace adaptsim::hw {

// The collectives the sweep runs; the others of coll::Collective it does not implement.
inline constexpr coll::Collective kSweepCollectives[] = {
    coll::Collective::kAllReduce, coll::Collective::kAllGather, coll::Collective::kReduceScatter,
    coll::Collective::kBroadcast};
bool sweep_runs(coll::Collective c);

// A --collective value: a comma list of kSweepCollectives' names, "all" standing for all of them.
// InputError naming `option` and the known names.
std::vector<coll::Collective> parse_sweep_collectives(const std::string& text,
                                                      std::string_view option);

// Per-rank element counts of one operation, as nccl-tests' *GetCollByteCount.
struct CollectiveCounts {
  std::uint64_t send_count = 0;   // elements in each rank's send buffer
  std::uint64_t recv_count = 0;   // elements in each rank's receive buffer
  std::uint64_t param_count = 0;  // the count argument of the NCCL call ("count" column)
  // nccl-tests' "size" column and the bytes algbw divides: max(send, recv) x element size, i.e.
  // the whole array (all-gather: the gathered output; reduce-scatter: the full input).
  std::uint64_t size_bytes = 0;
};

// From a sweep size in bytes: count = size / element_size; all-gather and reduce-scatter split
// the array into n equal pieces rounded down to a multiple of 4 elements (nccl-tests' ALIGN), so
// size_bytes can be below the requested size. param_count 0 means the size is too small to run.
// std::invalid_argument for a collective the sweep does not run.
CollectiveCounts collective_counts(coll::Collective c, std::uint64_t size_bytes,
                                   std::size_t element_size, int n_ranks);

}  // namespace adaptsim::hw
