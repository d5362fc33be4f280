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

  // A TCP connection over a path that drops a fraction p of its packets at random (links'
  // `loss`, p = 1 - prod(1 - loss)): it resends what is lost, so bytes / (1 - p) cross the path,
  // and its window is bounded by the losses: at most
  //   kLossMssBytes / (rtt * sqrt(2 b p / 3))   bytes per second
  // (Padhye, Firoiu, Towsley, Kurose, "Modeling TCP Throughput", SIGCOMM 1998: their model without
  // the timeout term; b = 2 packets per ACK, Linux's delayed ACKs). rtt: the path's latency
  // there and back, without queues (a connection whose bound is below its share keeps no queue).
  // Padhye's timeout term is left out: with a 200 ms timeout it predicts about 1 MB/s at the
  // testbed's 1.99 % and ~30 us, where one CUBIC connection keeps 48.8 MB/s (Linux's SACK and RACK
  // recover most losses without a timer; traces/loss/testbed-1Gbps-cubic.csv). What one
  // connection keeps at a loss, as measured, and the timers a message's lost last segment waits
  // for are per connection, in fabric::SimTransportOptions (loss_rates, tail_loss);
  // docs/figures.md, "Packet loss".
  static double loss_limited_rate_Bps(double path_loss, TimeNs rtt_ns);
  // 1500-byte Ethernet MTU less IPv4 and TCP headers and the timestamp option (Linux's default).
  static constexpr double kLossMssBytes = 1448;

  // The fraction of a connection's packets that arrive on the route src -> dst: prod(1 - loss)
  // over its links' `loss`.
  double path_delivery(topo::NodeId src, topo::NodeId dst) const;
  // Whether any link of the topology drops packets (none: every path's delivery is 1).
  bool has_loss() const { return has_loss_; }
  // Round trip between two nodes: the path's latency there and back (no queues).
  TimeNs round_trip_ns(topo::NodeId src, topo::NodeId dst) const;

  // Moves `bytes` from `src` to `dst` (bytes may be FlowNetwork::kInfiniteBytes for background
  // traffic, stopped with flows().stop()). src == dst uses the node's loopback resource and
  // throws InputError if the node has none. `also` are further resources the transfer shares
  // besides its path (the sending and receiving processes' transport threads: SimFabric).
  // `connection`: the TCP connection the transfer is a message of (FlowSpec::connection; 0:
  // none), whose congestion window it uses where the flows model them (set_tcp_windows).
  FlowId transfer(topo::NodeId src, topo::NodeId dst, double bytes, Callback on_done,
                  double rate_cap_Bps = MaxMinSolver::kUncapped, Callback on_transmitted = nullptr,
                  std::span<const ResourceId> also = {}, std::uint64_t connection = 0);

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
  double share_dispersion() const { return share_cv_; }

  // Folds the network onto one server's channels (topo::ServerSymmetry::representative, one entry
  // per channel): every transfer from here on crosses each channel's representative instead of
  // the channel, so a flow from server 0 stands for its images on every server and shares with
  // them as it would (fabric::SimFabric::fold_servers).
  void fold_channels(std::vector<topo::ChannelId> representative);

  // Changes one direction of a link now (time-varying capacity).
  void set_channel_bandwidth(topo::ChannelId channel, double bandwidth_Bps);
  ResourceId channel_resource(topo::ChannelId channel) const { return channel; }

 private:
  EventEngine& engine_;
  const topo::Topology& topology_;
  FlowNetwork flows_;
  FlowNetwork::FlowSpec transfer_spec_;  // transfer's, reused (FlowNetwork::start_from)
  std::vector<topo::ChannelId> fold_;    // fold_channels (empty: none)
  bool has_loss_ = false;
  // prod(1 - loss) over a route's links.
  double delivery(const std::vector<topo::ChannelId>& path) const;
  // A node's memory, shared by its local copies and reductions (absent: unbounded).
  std::optional<ResourceId> memory_resource(topo::NodeId node);
  std::unordered_map<topo::NodeId, std::optional<ResourceId>> memory_;
  double share_cv_ = 0;
  std::uint64_t share_seed_ = 0;
  std::unordered_map<std::uint64_t, double> shares_;  // by src << 32 | dst
};

}  // namespace adaptsim::net
