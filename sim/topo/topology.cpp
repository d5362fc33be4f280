#include "sim/topo/topology.h"

#include <algorithm>
#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/dijkstra_shortest_paths.hpp>
#include <boost/graph/filtered_graph.hpp>
#include <boost/graph/reverse_graph.hpp>
#include <deque>
#include <limits>
#include <stdexcept>

#include "sim/core/error.h"
#include "sim/core/flat_index.h"
#include "sim/core/rng.h"

namespace adaptsim::topo {

std::string_view node_kind_name(NodeKind kind) {
  switch (kind) {
    case NodeKind::kGpu:
      return "gpu";
    case NodeKind::kCpu:
      return "cpu";
    case NodeKind::kNic:
      return "nic";
    case NodeKind::kPcieSwitch:
      return "pcie_switch";
    case NodeKind::kNvSwitch:
      return "nvswitch";
    case NodeKind::kSwitch:
      return "switch";
    case NodeKind::kRouter:
      return "router";
  }
  return "?";
}

std::string_view link_kind_name(LinkKind kind) {
  switch (kind) {
    case LinkKind::kNvLink:
      return "nvlink";
    case LinkKind::kPcie:
      return "pcie";
    case LinkKind::kSmp:
      return "smp";
    case LinkKind::kEthernet:
      return "ethernet";
    case LinkKind::kInfiniBand:
      return "infiniband";
    case LinkKind::kWan:
      return "wan";
  }
  return "?";
}

std::optional<LinkKind> parse_link_kind(std::string_view name) {
  for (LinkKind k : {LinkKind::kNvLink, LinkKind::kPcie, LinkKind::kSmp, LinkKind::kEthernet,
                     LinkKind::kInfiniBand, LinkKind::kWan}) {
    if (link_kind_name(k) == name) return k;
  }
  return std::nullopt;
}

// Channel graph for Boost.Graph: vertex = node, edge = channel, weight = latency + 1 per hop.
struct Topology::Router {
  using Graph =
      boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS, boost::no_property,
                            boost::property<boost::edge_weight_t, std::int64_t,
                                            boost::property<boost::edge_index_t, ChannelId>>>;
  Graph graph;
  // Routes by (src << 32 | dst), looked up for every message (FlatIndex); the routes themselves
  // in a deque, so a returned reference outlives later insertions.
  FlatIndex index;
  std::deque<std::vector<ChannelId>> routes;
  const std::vector<ChannelId>* find(std::uint64_t key) const {
    const std::uint32_t* i = index.find(key);
    return i ? &routes[*i] : nullptr;
  }
  const std::vector<ChannelId>& insert(std::uint64_t key, std::vector<ChannelId> path) {
    routes.push_back(std::move(path));
    index.insert(key, static_cast<std::uint32_t>(routes.size() - 1));
    return routes.back();
  }
  std::unordered_map<NodeId, std::vector<std::int64_t>> dist_to;  // per destination
  // Hubs (a switch's hundreds of ports): nodes with at least kHubDegree outgoing channels, whose
  // ports a route's walk would otherwise scan for every new pair. Per destination, per hub: how
  // many of its channels lie on a shortest path there and the first of them ({0, 0}: not yet
  // counted), so the walk through a hub with one way on costs nothing after the first pair.
  static constexpr std::size_t kHubDegree = 16;
  static constexpr std::uint32_t kNoHub = UINT32_MAX;
  std::vector<std::uint32_t> hub_of;  // per node: its index among the hubs, or kNoHub
  std::uint32_t hubs = 0;
  std::unordered_map<NodeId, std::vector<std::pair<std::uint32_t, ChannelId>>> hub_ways_to;
};

Topology::Topology() = default;
Topology::~Topology() = default;
Topology::Topology(Topology&&) noexcept = default;
Topology& Topology::operator=(Topology&&) noexcept = default;

NodeId Topology::add_node(Node node) {
  if (by_name_.count(node.name)) throw std::invalid_argument("duplicate node name " + node.name);
  const NodeId id = static_cast<NodeId>(nodes_.size());
  by_name_.emplace(node.name, id);
  nodes_.push_back(std::move(node));
  out_.emplace_back();
  router_.reset();
  return id;
}

ChannelId Topology::add_link(NodeId a, NodeId b, LinkKind kind, LinkParams a_to_b,
                             LinkParams b_to_a) {
  if (a >= nodes_.size() || b >= nodes_.size() || a == b) {
    throw std::invalid_argument("link between invalid nodes");
  }
  const ChannelId ab = static_cast<ChannelId>(channels_.size());
  channels_.push_back({a, b, kind, a_to_b, ab + 1});
  channels_.push_back({b, a, kind, b_to_a, ab});
  out_[a].push_back(ab);
  out_[b].push_back(ab + 1);
  router_.reset();
  return ab;
}

void Topology::add_rank(NodeId gpu, NodeId host_cpu) {
  rank_gpu_.push_back(gpu);
  rank_host_.push_back(host_cpu);
}

void Topology::set_channel_params(ChannelId id, LinkParams params) {
  channels_.at(id).params = params;
  router_.reset();
}

std::optional<NodeId> Topology::find(std::string_view name) const {
  auto it = by_name_.find(std::string(name));
  if (it == by_name_.end()) return std::nullopt;
  return it->second;
}

TimeNs Topology::path_latency(const std::vector<ChannelId>& path) const {
  TimeNs total = 0;
  for (ChannelId c : path)
    total += channels_[c].params.latency_ns;
  return total;
}

double Topology::path_bandwidth(const std::vector<ChannelId>& path) const {
  double bw = std::numeric_limits<double>::infinity();
  for (ChannelId c : path)
    bw = std::min(bw, channels_[c].params.bandwidth_Bps);
  return bw;
}

const std::vector<std::int64_t>& Topology::distances_to(NodeId dst) const {
  if (!router_) {
    router_ = std::make_unique<Router>();
    router_->graph = Router::Graph(nodes_.size());
    router_->hub_of.assign(nodes_.size(), Router::kNoHub);
    for (NodeId n = 0; n < nodes_.size(); ++n) {
      if (out_[n].size() >= Router::kHubDegree) router_->hub_of[n] = router_->hubs++;
    }
    for (ChannelId c = 0; c < channels_.size(); ++c) {
      boost::add_edge(
          channels_[c].from, channels_[c].to,
          Router::Graph::edge_property_type(channels_[c].params.latency_ns + 1,
                                            boost::property<boost::edge_index_t, ChannelId>(c)),
          router_->graph);
    }
  }
  auto dit = router_->dist_to.find(dst);
  if (dit == router_->dist_to.end()) {
    const auto& g = router_->graph;
    std::vector<std::int64_t> dist(nodes_.size(), std::numeric_limits<std::int64_t>::max());
    // Distances to dst over the reversed graph. A channel x->y may be used only if y is not a GPU
    // or y is the destination: GPUs never forward.
    struct EdgeFilter {
      const std::vector<Node>* nodes = nullptr;
      const Router::Graph* graph = nullptr;
      NodeId dst = 0;
      bool operator()(const Router::Graph::edge_descriptor& e) const {
        const NodeId original_target = static_cast<NodeId>(boost::target(e, *graph));
        return original_target == dst || (*nodes)[original_target].kind != NodeKind::kGpu;
      }
    };
    boost::filtered_graph<Router::Graph, EdgeFilter> fg(g, EdgeFilter{&nodes_, &g, dst});
    auto frev = boost::make_reverse_graph(fg);
    boost::dijkstra_shortest_paths(
        frev, dst,
        boost::distance_map(
            boost::make_iterator_property_map(dist.begin(), boost::get(boost::vertex_index, frev)))
            .weight_map(boost::get(boost::edge_weight, frev))
            .distance_inf(std::numeric_limits<std::int64_t>::max()));
    dit = router_->dist_to.emplace(dst, std::move(dist)).first;
  }
  return dit->second;
}

bool Topology::reachable(NodeId src, NodeId dst) const {
  return src == dst || distances_to(dst)[src] != std::numeric_limits<std::int64_t>::max();
}

template <class Visit>
std::size_t Topology::walk(NodeId src, NodeId dst, Visit visit) const {
  const std::uint64_t key = (static_cast<std::uint64_t>(src) << 32) | dst;
  const std::vector<std::int64_t>& dist = distances_to(dst);
  const auto inf = std::numeric_limits<std::int64_t>::max();
  if (dist[src] == inf) {
    throw InputError("topology '" + name + "': no path from " + nodes_[src].name + " to " +
                     nodes_[dst].name + " (disconnected topology)");
  }
  // Walk forward along channels that stay on a shortest path; hash among ties (ECMP).
  NodeId at = src;
  std::uint64_t h = mix64(key);
  std::size_t most_ties = 1;
  // Whether channel c leaves `from` along a shortest path to dst.
  auto on_shortest_path = [&](NodeId from, ChannelId c) {
    const Channel& ch = channels_[c];
    if (ch.to != dst && nodes_[ch.to].kind == NodeKind::kGpu) return false;
    return dist[ch.to] != inf && dist[ch.to] + ch.params.latency_ns + 1 == dist[from];
  };
  // The ties at `at` and the first of them.
  auto count_ties = [&](NodeId from) {
    std::pair<std::uint32_t, ChannelId> ways{0, 0};
    for (ChannelId c : out_[from]) {
      if (!on_shortest_path(from, c)) continue;
      if (ways.first++ == 0) ways.second = c;
    }
    return ways;
  };
  std::vector<std::pair<std::uint32_t, ChannelId>>* hub_ways = nullptr;  // dst's, once needed
  while (at != dst) {
    // The ties counted, then the (h mod ties)-th taken: no list built per hop. A hub's count
    // is kept per destination (Router::hub_ways_to): 65 k pairs at 256 VMs each crossed the
    // switch, whose 256 ports were scanned twice for each.
    std::pair<std::uint32_t, ChannelId> ways;
    if (const std::uint32_t hub = router_->hub_of[at]; hub != Router::kNoHub) {
      if (!hub_ways) {
        hub_ways = &router_->hub_ways_to[dst];
        if (hub_ways->empty()) hub_ways->assign(router_->hubs, {0, 0});
      }
      std::pair<std::uint32_t, ChannelId>& known = (*hub_ways)[hub];
      if (known.first == 0) known = count_ties(at);
      ways = known;
    } else {
      ways = count_ties(at);
    }
    const std::size_t ties = ways.first;
    most_ties = std::max(most_ties, ties);
    std::size_t k = h % ties;
    ChannelId pick = ways.second;
    if (k > 0) {
      for (ChannelId c : out_[at]) {
        if (on_shortest_path(at, c) && k-- == 0) {
          pick = c;
          break;
        }
      }
    }
    h = mix64(h);
    visit(pick);
    at = channels_[pick].to;
  }
  return most_ties;
}

const std::vector<ChannelId>& Topology::route(NodeId src, NodeId dst) const {
  if (src == dst) throw std::invalid_argument("route from a node to itself");
  const std::uint64_t key = (static_cast<std::uint64_t>(src) << 32) | dst;
  if (router_) {
    if (const std::vector<ChannelId>* cached = router_->find(key)) return *cached;
  }
  std::vector<ChannelId> path;
  walk(src, dst, [&](ChannelId c) { path.push_back(c); });
  return router_->insert(key, std::move(path));
}

bool Topology::route_is_unique(NodeId src, NodeId dst) const {
  if (src == dst) throw std::invalid_argument("route from a node to itself");
  return walk(src, dst, [](ChannelId) {}) == 1;
}

std::vector<bool> Topology::reached_from(NodeId src) const {
  std::vector<bool> seen(nodes_.size(), false);
  std::vector<NodeId> queue{src};
  seen[src] = true;
  for (std::size_t i = 0; i < queue.size(); ++i) {
    const NodeId at = queue[i];
    if (at != src && nodes_[at].kind == NodeKind::kGpu) continue;  // GPUs never forward
    for (ChannelId c : out_[at]) {
      const NodeId to = channels_[c].to;
      if (!seen[to]) {
        seen[to] = true;
        queue.push_back(to);
      }
    }
  }
  return seen;
}

std::optional<std::pair<NodeId, NodeId>> Topology::disconnected_pair() const {
  if (rank_count() < 2) return std::nullopt;
  // Connectivity is symmetric (links are full duplex, and a path reversed has the same forwarding
  // nodes), so whatever rank 0's GPU and host reach covers every pair: one search from each,
  // where a shortest-path tree per rank took memory and time in ranks x nodes (763 MB and 44 s
  // for 4096 cloud VMs).
  const std::vector<bool> from_gpu = reached_from(rank_gpu_[0]);
  const std::vector<bool> from_host = reached_from(rank_host_[0]);
  for (int r = 1; r < rank_count(); ++r) {
    if (!from_gpu[rank_gpu_[r]]) return std::make_pair(rank_gpu_[0], rank_gpu_[r]);
    if (!from_host[rank_host_[r]]) return std::make_pair(rank_host_[0], rank_host_[r]);
  }
  return std::nullopt;
}

void Topology::check_connected() const {
  if (rank_count() == 0) throw InputError("topology '" + name + "' has no GPUs");
  if (const auto gap = disconnected_pair()) {
    throw InputError("topology '" + name + "': no path from " + nodes_[gap->first].name + " to " +
                     nodes_[gap->second].name + " (disconnected topology)");
  }
}

}  // namespace adaptsim::topo
