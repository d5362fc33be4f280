#pragma once
// The simulated network of one run: a topology whose channels are resources of a FlowNetwork,
// plus per-node virtual resources (loopback copies between processes on one host, and device
// reduction throughput). Transfers between nodes follow Topology::route and share capacity
// max-min fairly with every other transfer and background flow.

#include <optional>
#include <span>
#include <unordered_map>

#include "sim/net/flow_network.h"
#include "sim/topo/topology.h"

namespace adaptsim::net {

class Network {
 public:
  using Callback = FlowNetwork::Callback;
  using FlowId = FlowNetwork::FlowId;

  Network(EventEngine& engine, const topo::Topology& topology, Sharing sharing = Sharing::kMaxMin);

  EventEngine& engine() { return engine_; }
  const topo::Topology& topology() const { return topology_; }
  FlowNetwork& flows() { return flows_; }

  // Moves `bytes` from `src` to `dst` (bytes may be FlowNetwork::kInfiniteBytes for background
  // traffic, stopped with flows().stop()). src == dst uses the node's loopback resource and
  // throws InputError if the node has none. `also` are further resources the transfer shares
  // besides its path (the sending and receiving processes' transport threads: SimFabric).
  FlowId transfer(topo::NodeId src, topo::NodeId dst, double bytes, Callback on_done,
                  double rate_cap_Bps = MaxMinSolver::kUncapped, Callback on_transmitted = nullptr,
                  std::span<const ResourceId> also = {});

  // Starts an element-wise reduction producing `bytes` on `node`: at the node's per-thread
  // reduction rate, sharing its memory bandwidth. Completes at once (next event) when reductions
  // there are free.
  void reduce(topo::NodeId node, double bytes, Callback on_done);

  // Sharing::kTcp: TCP connections do not split a contended buffer evenly. Every (src, dst)
  // connection gets a share drawn once, log-normal with mean 1 and coefficient of variation
  // `cv` (measured: scripts/testbed-fanin.sh), seeded by (seed, src, dst) so a run is
  // reproducible and independent of message order. cv = 0 (the default): equal shares.
  void set_share_dispersion(double cv, std::uint64_t seed);
  double connection_share(topo::NodeId src, topo::NodeId dst);

  // Changes one direction of a link now (time-varying capacity).
  void set_channel_bandwidth(topo::ChannelId channel, double bandwidth_Bps);
  ResourceId channel_resource(topo::ChannelId channel) const { return channel; }

 private:
  EventEngine& engine_;
  const topo::Topology& topology_;
  FlowNetwork flows_;
  // A node's memory, shared by its local copies and reductions (absent: unbounded).
  std::optional<ResourceId> memory_resource(topo::NodeId node);
  std::unordered_map<topo::NodeId, std::optional<ResourceId>> memory_;
  double share_cv_ = 0;
  std::uint64_t share_seed_ = 0;
  std::unordered_map<std::uint64_t, double> shares_;  // by src << 32 | dst
};

}  // namespace adaptsim::net
