#include "sim/topo/symmetry.h"

#include <cstddef>

namespace adaptsim::topo {
namespace {

bool same_params(const LinkParams& a, const LinkParams& b) {
  return a.bandwidth_Bps == b.bandwidth_Bps && a.latency_ns == b.latency_ns &&
         a.queue_ns == b.queue_ns && a.loss == b.loss &&
         a.stream_bandwidth_Bps == b.stream_bandwidth_Bps;
}

bool same_node(const Node& a, const Node& b) {
  return a.kind == b.kind && a.reduce_bandwidth_Bps == b.reduce_bandwidth_Bps &&
         a.loopback_bandwidth_Bps == b.loopback_bandwidth_Bps &&
         a.memory_bandwidth_Bps == b.memory_bandwidth_Bps;
}

}  // namespace

std::optional<ServerSymmetry> server_symmetry(const Topology& t) {
  const int n = t.rank_count();
  if (n < 2) return std::nullopt;
  const int servers = t.rank_server(n - 1) + 1;
  if (servers < 2 || n % servers != 0) return std::nullopt;
  const int g = n / servers;

  // Each server's nodes in creation order, and every node's place among its server's.
  std::vector<std::vector<NodeId>> nodes(static_cast<std::size_t>(servers));
  std::vector<std::size_t> place(t.node_count(), 0);
  for (NodeId id = 0; id < t.node_count(); ++id) {
    const int s = t.node(id).server;
    if (s < 0 || s >= servers) continue;
    place[id] = nodes[static_cast<std::size_t>(s)].size();
    nodes[static_cast<std::size_t>(s)].push_back(id);
  }
  for (int s = 1; s < servers; ++s) {
    const auto& these = nodes[static_cast<std::size_t>(s)];
    if (these.size() != nodes[0].size()) return std::nullopt;
    for (std::size_t i = 0; i < these.size(); ++i) {
      if (!same_node(t.node(these[i]), t.node(nodes[0][i]))) return std::nullopt;
    }
  }
  // Ranks in server order, at the same places on every server.
  for (int r = 0; r < n; ++r) {
    const int base = r % g;
    if (t.rank_server(r) != r / g || place[t.rank_gpu(r)] != place[t.rank_gpu(base)] ||
        t.node(t.rank_host(r)).server != r / g ||
        place[t.rank_host(r)] != place[t.rank_host(base)]) {
      return std::nullopt;
    }
  }

  // Each server's channels in creation order: alike, and meeting the same fabric nodes.
  ServerSymmetry out{servers, g, std::vector<ChannelId>(t.channel_count())};
  std::vector<std::vector<ChannelId>> channels(static_cast<std::size_t>(servers));
  for (ChannelId c = 0; c < t.channel_count(); ++c) {
    out.representative[c] = c;
    const Channel& ch = t.channel(c);
    const int a = t.node(ch.from).server, b = t.node(ch.to).server;
    if (a >= 0 && b >= 0 && a != b) {
      if (a < servers || b < servers) return std::nullopt;  // a link between two servers
      continue;
    }
    const int s = a >= 0 ? a : b;
    if (s < 0 || s >= servers) continue;  // between fabric nodes, or a server without ranks
    channels[static_cast<std::size_t>(s)].push_back(c);
  }
  // A channel's end: its place on its server, or the fabric node itself.
  auto same_end = [&](NodeId x, NodeId y) {
    const bool fabric = t.node(x).server < 0;
    return fabric == (t.node(y).server < 0) && (fabric ? x == y : place[x] == place[y]);
  };
  for (int s = 1; s < servers; ++s) {
    const auto& these = channels[static_cast<std::size_t>(s)];
    if (these.size() != channels[0].size()) return std::nullopt;
    for (std::size_t i = 0; i < these.size(); ++i) {
      const Channel& x = t.channel(these[i]);
      const Channel& y = t.channel(channels[0][i]);
      if (x.kind != y.kind || !same_params(x.params, y.params) || !same_end(x.from, y.from) ||
          !same_end(x.to, y.to)) {
        return std::nullopt;
      }
      out.representative[these[i]] = channels[0][i];
    }
  }
  return out;
}

}  // namespace adaptsim::topo
