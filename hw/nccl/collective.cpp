#include "hw/nccl/collective.h"

#include <algorithm>
#include <iterator>
#include <stdexcept>

#include "sim/core/error.h"

namespace adaptsim::hw {
namespace {

using coll::Collective;

// nccl-tests aligns all-gather and reduce-scatter pieces to this many elements (ALIGN in
// src/common.h), so every rank's piece starts on an aligned address.
constexpr std::uint64_t kPieceAlignElements = 4;

}  // namespace

bool sweep_runs(Collective c) {
  return std::find(std::begin(kSweepCollectives), std::end(kSweepCollectives), c) !=
         std::end(kSweepCollectives);
}

std::vector<Collective> parse_sweep_collectives(const std::string& text, std::string_view option) {
  std::vector<Collective> out;
  for (std::size_t begin = 0; begin <= text.size();) {
    std::size_t end = text.find(',', begin);
    if (end == std::string::npos) end = text.size();
    const std::string name = text.substr(begin, end - begin);
    const auto c = coll::parse_collective(name);
    if (name == "all") {
      out.insert(out.end(), std::begin(kSweepCollectives), std::end(kSweepCollectives));
    } else if (c && sweep_runs(*c)) {
      out.push_back(*c);
    } else {
      std::string known;
      for (Collective k : kSweepCollectives)
        known += std::string(coll::collective_name(k)) + ", ";
      const std::string what = c ? "the NCCL sweep does not run " : "unknown collective ";
      throw InputError(std::string(option) + ": " + what + "\"" + name + "\" (known: " + known +
                       "all)");
    }
    begin = end + 1;
  }
  return out;
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
    case Collective::kReduce:
    case Collective::kAllToAll:
    case Collective::kSendRecv:
      throw std::invalid_argument("collective_counts: the NCCL sweep does not run " +
                                  std::string(coll::collective_name(c)));
  }
  r.size_bytes = std::max(r.send_count, r.recv_count) * element_size;
  return r;
}

}  // namespace adaptsim::hw
