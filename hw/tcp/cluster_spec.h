#pragma once
// Who is in a live cluster and where each rank listens: the result of every rendezvous (local
// launcher, host list, mpirun) and the input of TcpTransport::start().

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "hw/tcp/auth.h"
#include "hw/tcp/socket_util.h"

namespace adaptsim::tcp {

struct ClusterSpec {
  int rank = 0;
  // Listen address of every rank, indexed by rank; addresses.size() is the cluster size.
  std::vector<SocketAddress> addresses;
  // Host id of every rank (same value = same machine), used by topology-aware strategies.
  // Empty: derived from the address hosts (hosts_from_addresses).
  std::vector<int> host_of_rank;
  // The job's secret (auth.h): a connection that cannot prove it knows it is never counted as a
  // peer, and every frame is authenticated with keys derived from it.
  JobSecret secret;

  int size() const { return static_cast<int>(addresses.size()); }
  // Throws InputError when the rank is out of range, the cluster is empty, host_of_rank has
  // the wrong length or there is no secret.
  void validate() const;
  // host_of_rank, or the derived one when empty.
  std::vector<int> hosts() const;
};

// Ranks whose address hosts are equal share a host id; ids are numbered by first appearance.
std::vector<int> hosts_from_addresses(const std::vector<SocketAddress>& addresses);
// host id = rank / ranks_per_host (ranks_per_host >= 1): lets one machine pose as many.
std::vector<int> hosts_by_block(int size, int ranks_per_host);

// "127.0.0.1:7000,127.0.0.1:7001" -> addresses; throws InputError naming the bad entry.
std::vector<SocketAddress> parse_host_list(std::string_view text);

}  // namespace adaptsim::tcp
