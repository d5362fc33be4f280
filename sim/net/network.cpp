#include "sim/net/network.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "sim/core/error.h"
#include "sim/core/rng.h"

namespace adaptsim::net {

Network::Network(EventEngine& engine, const topo::Topology& topology, Sharing sharing)
    : engine_(engine), topology_(topology), flows_(engine, sharing) {
  // Channel i is resource i.
  for (topo::ChannelId c = 0; c < topology_.channel_count(); ++c) {
    const topo::Channel& ch = topology_.channel(c);
    const ResourceId r = flows_.add_resource(
        ch.params.bandwidth_Bps, topology_.node(ch.from).name + "->" + topology_.node(ch.to).name);
    // Buffers that fill are switch output ports: a host's own NIC queue is kept short by its
    // TCP stack (TCP Small Queues, BQL pace the socket to the qdisc), so the sender paces itself.
    const topo::NodeKind from = topology_.node(ch.from).kind;
    if (from == topo::NodeKind::kSwitch || from == topo::NodeKind::kRouter) {
      flows_.set_queue_delay(r, ch.params.queue_ns);
    }
    has_loss_ = has_loss_ || ch.params.loss > 0;
  }
}

Network::FlowId Network::transfer(topo::NodeId src, topo::NodeId dst, double bytes,
                                  Callback on_done, double rate_cap_Bps, Callback on_transmitted,
                                  std::span<const ResourceId> also, std::uint64_t connection) {
  // One spec reused for every transfer: its resource vectors keep their capacity (a message a
  // transfer, so an allocation each was most of the flow's cost to start).
  FlowNetwork::FlowSpec& spec = transfer_spec_;
  spec.resources.clear();
  spec.ack_resources.clear();
  spec.bytes = bytes;
  spec.latency = 0;
  spec.rate_cap_Bps = rate_cap_Bps;
  spec.share = 1;
  spec.on_complete = std::move(on_done);
  spec.on_transmitted = std::move(on_transmitted);
  spec.connection = src == dst ? 0 : connection;
  if (src == dst) {
    const topo::Node& n = topology_.node(src);
    if (n.loopback_bandwidth_Bps <= 0) {
      throw InputError("topology '" + topology_.name + "': node " + n.name +
                       " hosts several communicating ranks but has no loopback bandwidth");
    }
    spec.rate_cap_Bps = std::min(spec.rate_cap_Bps, n.loopback_bandwidth_Bps);
    if (auto mem = memory_resource(src)) spec.resources = {*mem};
  } else {
    const auto& path = topology_.route(src, dst);
    spec.resources.assign(path.begin(), path.end());
    if (flows_.sharing() == Sharing::kTcp) {
      const auto& back = topology_.route(dst, src);  // the ACKs' path
      spec.ack_resources.assign(back.begin(), back.end());
    }
    if (!fold_.empty()) {
      for (ResourceId& r : spec.resources)
        r = fold_[r];
      for (ResourceId& r : spec.ack_resources)
        r = fold_[r];
    }
    spec.latency = topology_.path_latency(path);
    spec.share = connection_share(src, dst);
    for (topo::ChannelId c : path) {
      const topo::LinkParams& link = topology_.channel(c).params;
      // One connection through a link that limits each stream (topo::LinkParams): a transfer
      // is one connection's message (SimFabric sends a connection's messages one at a time).
      if (link.stream_bandwidth_Bps > 0) {
        spec.rate_cap_Bps = std::min(spec.rate_cap_Bps, link.stream_bandwidth_Bps);
      }
    }
    if (const double delivered = has_loss_ ? delivery(path) : 1; delivered < 1) {
      spec.bytes = bytes / delivered;  // the resent packets cross the path too
      spec.rate_cap_Bps = std::min(spec.rate_cap_Bps,
                                   loss_limited_rate_Bps(1 - delivered, round_trip_ns(src, dst)));
    }
    // Two processes on different sockets of one server still talk through a local socket: the
    // same per-stream rate and memory traffic as on one socket, plus the inter-socket link.
    const topo::Node& a = topology_.node(src);
    const topo::Node& b = topology_.node(dst);
    if (a.kind == topo::NodeKind::kCpu && b.kind == topo::NodeKind::kCpu && a.server == b.server &&
        a.loopback_bandwidth_Bps > 0) {
      spec.rate_cap_Bps = std::min(spec.rate_cap_Bps, a.loopback_bandwidth_Bps);
      if (auto mem = memory_resource(src)) spec.resources.push_back(*mem);
    }
  }
  spec.resources.insert(spec.resources.end(), also.begin(), also.end());
  return flows_.start_from(spec);
}

void Network::fold_channels(std::vector<topo::ChannelId> representative) {
  if (representative.size() != topology_.channel_count()) {
    throw std::invalid_argument("fold_channels: one representative per channel expected");
  }
  fold_ = std::move(representative);
}

double Network::path_delivery(topo::NodeId src, topo::NodeId dst) const {
  return src == dst || !has_loss_ ? 1 : delivery(topology_.route(src, dst));
}

double Network::delivery(const std::vector<topo::ChannelId>& path) const {
  double delivered = 1;  // fraction of the packets sent that arrive
  for (topo::ChannelId c : path)
    delivered *= 1 - topology_.channel(c).params.loss;
  return delivered;
}

TimeNs Network::round_trip_ns(topo::NodeId src, topo::NodeId dst) const {
  return topology_.path_latency(topology_.route(src, dst)) +
         topology_.path_latency(topology_.route(dst, src));
}

double Network::loss_limited_rate_Bps(double path_loss, TimeNs rtt_ns) {
  if (!(path_loss > 0)) return MaxMinSolver::kUncapped;
  constexpr double kPacketsPerAck = 2;
  const double rtt_s = std::max<double>(static_cast<double>(rtt_ns), 1.0) * 1e-9;
  return kLossMssBytes / (rtt_s * std::sqrt(2 * kPacketsPerAck * path_loss / 3));
}

void Network::set_share_dispersion(double cv, std::uint64_t seed) {
  if (!(cv >= 0)) throw std::invalid_argument("share dispersion must be >= 0");
  share_cv_ = cv;
  share_seed_ = seed;
  shares_.clear();
}

double Network::connection_share(topo::NodeId src, topo::NodeId dst) {
  if (share_cv_ == 0) return 1;
  const std::uint64_t key = static_cast<std::uint64_t>(src) << 32 | static_cast<std::uint32_t>(dst);
  if (auto it = shares_.find(key); it != shares_.end()) return it->second;
  // Log-normal with mean 1: sigma^2 = ln(1 + cv^2), mu = -sigma^2 / 2.
  const double sigma = std::sqrt(std::log1p(share_cv_ * share_cv_));
  Rng rng = Rng::derive(share_seed_ ^ 0x5348415245ULL, key);  // "SHARE": its own stream family
  const double share = std::exp(rng.normal(-sigma * sigma / 2, sigma));
  shares_.emplace(key, share);
  return share;
}

std::optional<ResourceId> Network::memory_resource(topo::NodeId node) {
  if (auto it = memory_.find(node); it != memory_.end()) return it->second;
  const topo::Node& n = topology_.node(node);
  std::optional<ResourceId> r;
  if (n.memory_bandwidth_Bps > 0) {
    // A local socket copy or an a + b reduction moves about four bytes of memory traffic per
    // payload byte (read and write on each side of the copy; read a, read b, write out); one
    // resource with a quarter of the bandwidth approximates both.
    r = flows_.add_resource(n.memory_bandwidth_Bps / 4, n.name + ".memory");
  }
  memory_.emplace(node, r);
  return r;
}

void Network::reduce(topo::NodeId node, double bytes, Callback on_done) {
  const topo::Node& n = topology_.node(node);
  if (n.reduce_bandwidth_Bps <= 0 || bytes <= 0) {
    engine_.schedule_after(0, std::move(on_done));
    return;
  }
  FlowNetwork::FlowSpec spec;
  spec.bytes = bytes;
  spec.rate_cap_Bps = n.reduce_bandwidth_Bps;
  if (auto mem = memory_resource(node)) spec.resources = {*mem};
  spec.on_complete = std::move(on_done);
  flows_.start(std::move(spec));
}

void Network::set_channel_bandwidth(topo::ChannelId channel, double bandwidth_Bps) {
  flows_.set_capacity(channel, bandwidth_Bps);
}

}  // namespace adaptsim::net
