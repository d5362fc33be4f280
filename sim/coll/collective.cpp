#include "sim/coll/collective.h"

#include "sim/core/error.h"

namespace adaptsim::coll {

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
    case Collective::kReduce:
      return "reduce";
    case Collective::kAllToAll:
      return "alltoall";
    case Collective::kSendRecv:
      return "sendrecv";
  }
  return "?";
}

std::optional<Collective> parse_collective(std::string_view name) {
  for (Collective c : kAllCollectives) {
    if (collective_name(c) == name) return c;
  }
  return std::nullopt;
}

std::string known_collectives() {
  std::string s;
  for (Collective c : kAllCollectives)
    s += (s.empty() ? "" : ", ") + std::string(collective_name(c));
  return s;
}

bool collective_reduces(Collective c) {
  return c == Collective::kAllReduce || c == Collective::kReduceScatter || c == Collective::kReduce;
}

double bus_bandwidth_factor(Collective c, int n_ranks) {
  if (n_ranks < 1) {
    throw InputError("the bus bandwidth of " + std::string(collective_name(c)) + " over " +
                     std::to_string(n_ranks) + " ranks: the rank count must be at least 1");
  }
  const double n = n_ranks;
  switch (c) {
    case Collective::kAllReduce:
      return 2.0 * (n - 1) / n;
    case Collective::kAllGather:
    case Collective::kReduceScatter:
    case Collective::kAllToAll:
      return (n - 1) / n;
    case Collective::kBroadcast:
    case Collective::kReduce:
    case Collective::kSendRecv:
      return 1.0;
  }
  return 1.0;
}

}  // namespace adaptsim::coll
