#include "hw/tcp/cluster_spec.h"

#include <charconv>
#include <cstdio>
#include <map>
#include <random>

#include "sim/core/error.h"

namespace adaptsim::tcp {

void ClusterSpec::validate() const {
  if (addresses.empty()) throw InputError("a cluster needs at least one rank");
  if (rank < 0 || rank >= size()) {
    throw InputError("rank " + std::to_string(rank) + " is outside 0.." +
                     std::to_string(size() - 1));
  }
  if (!host_of_rank.empty() && static_cast<int>(host_of_rank.size()) != size()) {
    throw InputError("host_of_rank has " + std::to_string(host_of_rank.size()) + " entries for " +
                     std::to_string(size()) + " ranks");
  }
  if (secret.empty()) throw InputError("the cluster has no job secret");
}

std::vector<int> ClusterSpec::hosts() const {
  return host_of_rank.empty() ? hosts_from_addresses(addresses) : host_of_rank;
}

std::vector<int> hosts_from_addresses(const std::vector<SocketAddress>& addresses) {
  std::map<std::string, int> ids;
  std::vector<int> hosts;
  hosts.reserve(addresses.size());
  for (const SocketAddress& a : addresses) {
    auto [it, inserted] = ids.emplace(a.host, static_cast<int>(ids.size()));
    hosts.push_back(it->second);
  }
  return hosts;
}

std::vector<int> hosts_by_block(int size, int ranks_per_host) {
  if (ranks_per_host < 1) throw InputError("ranks per host must be at least 1");
  std::vector<int> hosts(static_cast<std::size_t>(size));
  for (int r = 0; r < size; ++r)
    hosts[static_cast<std::size_t>(r)] = r / ranks_per_host;
  return hosts;
}

std::vector<SocketAddress> parse_host_list(std::string_view text) {
  std::vector<SocketAddress> out;
  std::size_t begin = 0;
  while (begin <= text.size()) {
    std::size_t end = text.find(',', begin);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view item = text.substr(begin, end - begin);
    if (item.empty()) {
      throw InputError("host list \"" + std::string(text) + "\": empty entry at position " +
                       std::to_string(out.size()));
    }
    out.push_back(parse_socket_address(item));
    begin = end + 1;
  }
  for (std::size_t i = 0; i < out.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      if (out[i] == out[j]) {
        throw InputError("host list: " + out[i].str() + " appears twice (ranks " +
                         std::to_string(j) + " and " + std::to_string(i) + ")");
      }
    }
  }
  return out;
}

}  // namespace adaptsim::tcp
