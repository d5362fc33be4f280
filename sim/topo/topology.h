#pragma once
// The physical cluster: nodes (GPUs, CPUs, NICs, PCIe switches, NVSwitches, network switches,
// routers) and full-duplex links (NVLink, PCIe, inter-socket, Ethernet, InfiniBand, WAN). Each
// link is two directed channels with their own capacity, so egress and ingress are shared
// independently (a cloud VM's capped egress and unmetered ingress are two different numbers).
//
// Routing runs Dijkstra (Boost.Graph) on the channel graph, weighted by latency plus one per hop,
// with two rules: a GPU never forwards traffic (it is only ever a path's end), and among equally
// short paths the choice is spread by a hash of (source, destination), like ECMP.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "sim/core/time.h"

namespace adaptsim::topo {

using NodeId = std::uint32_t;
using ChannelId = std::uint32_t;

enum class NodeKind { kGpu, kCpu, kNic, kPcieSwitch, kNvSwitch, kSwitch, kRouter };
enum class LinkKind { kNvLink, kPcie, kSmp, kEthernet, kInfiniBand, kWan };

std::string_view node_kind_name(NodeKind kind);
std::string_view link_kind_name(LinkKind kind);
std::optional<LinkKind> parse_link_kind(std::string_view name);

struct LinkParams {
  double bandwidth_Bps = 0;  // per direction
  TimeNs latency_ns = 0;
  // Drop-tail buffer in front of the link, as the time it takes to drain at the link's rate
  // (0: not modelled). TCP flows that compete for the link keep it full, which adds this delay to
  // their round trips (Sharing::kTcp).
  TimeNs queue_ns = 0;
  // Fraction of the packets crossing the link dropped at random (0: none). A TCP connection
  // through it resends what is lost and its window is bounded by the loss (net::Network::transfer).
  double loss = 0;
  // The most one TCP connection carries through this link (0: no limit beyond the link's own
  // rate). A link whose stack processes each connection's packets on one core -- IP over
  // InfiniBand, whose datagram and connected modes have no segmentation offload on that path --
  // moves a single stream far below its line rate, while several streams together reach it.
  double stream_bandwidth_Bps = 0;
};

struct Node {
  std::string name;
  NodeKind kind = NodeKind::kSwitch;
  int server = -1;  // server index for in-server nodes, -1 for fabric nodes
  // Element-wise reduction throughput of one reducing thread on this device, bytes of output per
  // second (0: reductions are free). Concurrent reductions each get this rate, bounded together
  // by the memory bandwidth below.
  double reduce_bandwidth_Bps = 0;
  // One stream between two processes on this node (CPU: a local socket); 0 if the node cannot
  // host processes that talk to each other. Concurrent streams each get this rate, bounded
  // together by the memory bandwidth below.
  double loopback_bandwidth_Bps = 0;
  // Aggregate memory bandwidth (0: unbounded). Local copies and reductions share it.
  double memory_bandwidth_Bps = 0;
};

struct Channel {
  NodeId from = 0;
  NodeId to = 0;
  LinkKind kind = LinkKind::kEthernet;
  LinkParams params;
  ChannelId reverse = 0;
};

class Topology {
 public:
  Topology();
  ~Topology();
  Topology(Topology&&) noexcept;
  Topology& operator=(Topology&&) noexcept;

  std::string name;
  std::string description;

  NodeId add_node(Node node);
  // A full-duplex link; `a_to_b` and `b_to_a` may differ (asymmetric egress caps).
  ChannelId add_link(NodeId a, NodeId b, LinkKind kind, LinkParams a_to_b, LinkParams b_to_a);
  ChannelId add_link(NodeId a, NodeId b, LinkKind kind, LinkParams both) {
    return add_link(a, b, kind, both, both);
  }
  // Declares the next GPU rank: ranks are numbered in the order GPUs are registered here.
  void add_rank(NodeId gpu, NodeId host_cpu);

  std::size_t node_count() const { return nodes_.size(); }
  std::size_t channel_count() const { return channels_.size(); }
  const Node& node(NodeId id) const { return nodes_.at(id); }
  Node& mutable_node(NodeId id) { return nodes_.at(id); }
  const Channel& channel(ChannelId id) const { return channels_.at(id); }
  void set_channel_params(ChannelId id, LinkParams params);
  std::optional<NodeId> find(std::string_view name) const;

  int rank_count() const { return static_cast<int>(rank_gpu_.size()); }
  NodeId rank_gpu(int rank) const { return rank_gpu_.at(rank); }
  NodeId rank_host(int rank) const { return rank_host_.at(rank); }
  int rank_server(int rank) const { return nodes_.at(rank_gpu_.at(rank)).server; }

  // The channels from `src` to `dst` (src != dst). Throws InputError if no path exists.
  // Results are cached; the topology must not change afterwards. Not thread-safe.
  const std::vector<ChannelId>& route(NodeId src, NodeId dst) const;
  // Whether the route src -> dst is the only shortest path (no hop chose among equal ones), so
  // that it does not depend on the ECMP hash of the two nodes' ids.
  bool route_is_unique(NodeId src, NodeId dst) const;
  TimeNs path_latency(const std::vector<ChannelId>& path) const;
  // Min over the path's channel bandwidths.
  double path_bandwidth(const std::vector<ChannelId>& path) const;

  // Whether `dst` can be reached from `src` (GPUs never forward).
  bool reachable(NodeId src, NodeId dst) const;
  // Two endpoints of different ranks (GPUs, or host CPUs) with no path between them, if any.
  // Two breadth-first searches, O(nodes + channels) time and memory, whatever the rank count.
  std::optional<std::pair<NodeId, NodeId>> disconnected_pair() const;
  // Throws InputError if there are no ranks or disconnected_pair() finds a gap; the message names
  // both endpoints. Callers holding the topology file's location add it (io::check_connected).
  void check_connected() const;

 private:
  struct Router;  // Boost.Graph state, built on first use
  // Shortest-path distances (latency + 1 per hop) of every node to `dst`, cached; unreachable
  // nodes hold INT64_MAX.
  const std::vector<std::int64_t>& distances_to(NodeId dst) const;
  // Every node reachable from `src` (a GPU other than `src` is reached but never forwards).
  std::vector<bool> reached_from(NodeId src) const;
  // Walks route()'s choice from src to dst, visiting each channel; returns the most equally
  // short channels any hop chose among (1: the path is the only shortest one).
  template <class Visit>
  std::size_t walk(NodeId src, NodeId dst, Visit visit) const;
  std::vector<Node> nodes_;
  std::vector<Channel> channels_;
  std::vector<std::vector<ChannelId>> out_;  // outgoing channels per node, in creation order
  std::vector<NodeId> rank_gpu_;
  std::vector<NodeId> rank_host_;
  std::unordered_map<std::string, NodeId> by_name_;
  mutable std::unique_ptr<Router> router_;
};

}  // namespace adaptsim::topo
