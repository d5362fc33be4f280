#pragma once
// The collectives the NCCL sweep runs and nccl-tests' conventions for them (NVIDIA/nccl-tests
// src/{all_reduce,all_gather,reduce_scatter,broadcast}.cu; doc/PERFORMANCE.md; FACTS §1.4):
// how a sweep size becomes per-rank element counts, and the bus-bandwidth factor.
// Pure C++: no NCCL or CUDA here, so calibration code can use it without a GPU.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace adaptsim::hw {

enum class Collective { kAllReduce, kAllGather, kReduceScatter, kBroadcast };
inline constexpr Collective kAllCollectives[] = {Collective::kAllReduce, Collective::kAllGather,
                                                 Collective::kReduceScatter,
                                                 Collective::kBroadcast};

std::string_view collective_name(Collective c);  // "all_reduce", "all_gather", ...
std::optional<Collective> parse_collective(std::string_view name);

// True for the collectives that apply a reduction operator (all-reduce, reduce-scatter).
bool collective_reduces(Collective c);

// busbw = algbw x factor: all-reduce 2(n-1)/n, all-gather and reduce-scatter (n-1)/n,
// broadcast 1. n >= 1 (n = 1 gives 0 for all but broadcast, as nccl-tests).
double bus_bandwidth_factor(Collective c, int n_ranks);

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
CollectiveCounts collective_counts(Collective c, std::uint64_t size_bytes, std::size_t element_size,
                                   int n_ranks);

}  // namespace adaptsim::hw
