#pragma once
// The collectives adaptsim measures, imports and models, by nccl-tests' names, and nccl-tests'
// bus bandwidth: the one definition behind the TCP and NCCL sweeps' busbw, calibration's fits
// (busbw_inf, bus_factor) and the simulator's all-reduce rows.
//
// nccl-tests (NVIDIA/nccl-tests doc/PERFORMANCE.md; FACTS 1.4): algbw = size / time, with size the
// whole array (all-gather: the gathered output; reduce-scatter: the full input), and
// busbw = algbw x factor, the factor making busbw comparable to one link's bandwidth whatever the
// rank count n (what each rank must send over its link, per byte of size, in an optimal ring):
//   all_reduce                            2 (n - 1) / n   src/all_reduce.cu      AllReduceGetBw
//   all_gather, reduce_scatter, alltoall    (n - 1) / n   src/all_gather.cu, reduce_scatter.cu,
//                                                         alltoall.cu            *GetBw
//   broadcast, reduce, sendrecv             1             src/broadcast.cu, reduce.cu,
//                                                         sendrecv.cu            *GetBw
// One rank gives 0 for the first two rows (nothing crosses a link), as nccl-tests prints it.

#include <optional>
#include <string>
#include <string_view>

namespace adaptsim::coll {

enum class Collective {
  kAllReduce,
  kAllGather,
  kReduceScatter,
  kBroadcast,
  kReduce,
  kAllToAll,
  kSendRecv,
};
inline constexpr Collective kAllCollectives[] = {Collective::kAllReduce,     Collective::kAllGather,
                                                 Collective::kReduceScatter, Collective::kBroadcast,
                                                 Collective::kReduce,        Collective::kAllToAll,
                                                 Collective::kSendRecv};

// nccl-tests' program names without "_perf": "all_reduce", "all_gather", "reduce_scatter",
// "broadcast", "reduce", "alltoall", "sendrecv".
std::string_view collective_name(Collective c);
std::optional<Collective> parse_collective(std::string_view name);
std::string known_collectives();  // "all_reduce, all_gather, ...", for messages

// True for the collectives that apply a reduction operator: all_reduce, reduce_scatter, reduce.
bool collective_reduces(Collective c);

// busbw / algbw for `c` over n_ranks ranks, by the table above. InputError when n_ranks < 1
// (a rank count read from a file).
double bus_bandwidth_factor(Collective c, int n_ranks);

}  // namespace adaptsim::coll
