#include "hw/nccl/collective.h"

#include <algorithm>
#include <stdexcept>

namespace adaptsim::hw {
namespace {

// nccl-tests aligns all-gather and reduce-scatter pieces to this many elements (ALIGN in
// src/common.h), so every rank's piece starts on an aligned address.
constexpr std::uint64_t kPieceAlignElements = 4;

}  // namespace

std::string_view collective_name(Collective c) {
  switch (c) {
    case Collective::kAllReduce:
      return "all_reduce";
    case Collective::kAllGather:
      return "all_gather";
    case Collective::kReduceScatter:
      return "reduce_scatter";
    case Collective::kBroadcast:
      return "broadcast";
  }
  return "?";
}

std::optional<Collective> parse_collective(std::string_view name) {
  for (Collective c : kAllCollectives) {
    if (collective_name(c) == name) return c;
  }
  return std::nullopt;
}

bool collective_reduces(Collective c) {
  return c == Collective::kAllReduce || c == Collective::kReduceScatter;
}

double bus_bandwidth_factor(Collective c, int n_ranks) {
  if (n_ranks < 1) throw std::invalid_argument("bus_bandwidth_factor: n_ranks must be >= 1");
  const double n = n_ranks;
  switch (c) {
    case Collective::kAllReduce:
      return 2.0 * (n - 1) / n;
    case Collective::kAllGather:
    case Collective::kReduceScatter:
      return (n - 1) / n;
    case Collective::kBroadcast:
      return 1.0;
  }
  return 1.0;
}

CollectiveCounts collective_counts(Collective c, std::uint64_t size_bytes, std::size_t element_size,
                                   int n_ranks) {
  if (element_size == 0 || n_ranks < 1) {
    throw std::invalid_argument("collective_counts: element_size and n_ranks must be >= 1");
  }
  const std::uint64_t count = size_bytes / element_size;
  const std::uint64_t n = static_cast<std::uint64_t>(n_ranks);
  CollectiveCounts r;
  switch (c) {
    case Collective::kAllReduce:
    case Collective::kBroadcast:
      r.send_count = r.recv_count = r.param_count = count;
      break;
    case Collective::kAllGather: {
      const std::uint64_t piece = count / (kPieceAlignElements * n) * kPieceAlignElements;
      r.send_count = piece;
      r.recv_count = piece * n;
      r.param_count = piece;
      break;
    }
    case Collective::kReduceScatter: {
      const std::uint64_t piece = count / (kPieceAlignElements * n) * kPieceAlignElements;
      r.send_count = piece * n;
      r.recv_count = piece;
      r.param_count = piece;
      break;
    }
  }
  r.size_bytes = std::max(r.send_count, r.recv_count) * element_size;
  return r;
}

}  // namespace adaptsim::hw
