#pragma once
// Servers that cannot be told apart. A cluster of identical servers whose links all meet the
// same fabric nodes (one switch) looks the same from every server: any permutation of its
// servers maps the topology onto itself. A collective whose every rank runs the same program
// relative to its own rank (a ring) then does on every server exactly what it does on server 0,
// at the same times, and a simulation may run server 0's ranks alone, each flow standing for
// its images on every server (fabric::SimFabric::fold_servers).

#include <optional>
#include <vector>

#include "sim/topo/topology.h"

namespace adaptsim::topo {

struct ServerSymmetry {
  int servers = 0;           // servers holding ranks: 0 .. servers - 1
  int ranks_per_server = 0;  // rank r lives on server r / ranks_per_server
  // Per channel: its counterpart on server 0 (itself for server 0's channels, for channels
  // between fabric nodes and for those of servers without ranks).
  std::vector<ChannelId> representative;
};

// The symmetry, if the rank-holding servers are interchangeable: the same ranks per server, in
// server order, each server's nodes (in creation order) alike in kind and rates, and its
// channels (in creation order) alike in kind and parameters and meeting the same fabric nodes,
// no channel between two servers; at least two servers. Routes are not checked: where equally
// short paths exist, ECMP's hash of the node ids picks differently per server pair
// (Topology::route_is_unique).
std::optional<ServerSymmetry> server_symmetry(const Topology& topology);

}  // namespace adaptsim::topo
