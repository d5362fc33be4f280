#include "sim/net/network.h"

#include "sim/core/error.h"

namespace adaptsim::net {

Network::Network(EventEngine& engine, const Topology& topology)
    : engine_(engine), topology_(topology), flows_(engine) {
  // Channel i is resource i.
  for (ChannelId c = 0; c < topology_.channel_count(); ++c) {
    const Channel& ch = topology_.channel(c);
    flows_.add_resource(ch.params.bandwidth_Bps, topology_.node(ch.from).name + "->" +
                                                     topology_.node(ch.to).name);
  }
}

Network::FlowId Network::transfer(NodeId src, NodeId dst, double bytes, Callback on_done,
                                  double rate_cap_Bps, Callback on_transmitted) {
  FlowNetwork::FlowSpec spec;
  spec.bytes = bytes;
  spec.rate_cap_Bps = rate_cap_Bps;
  spec.on_complete = std::move(on_done);
  spec.on_transmitted = std::move(on_transmitted);
  if (src == dst) {
    auto it = loopback_.find(src);
    if (it == loopback_.end()) {
      const Node& n = topology_.node(src);
      if (n.loopback_bandwidth_Bps <= 0) {
        throw InputError("topology '" + topology_.name + "': node " + n.name +
                         " hosts several communicating ranks but has no loopback bandwidth");
      }
      it = loopback_.emplace(src, flows_.add_resource(n.loopback_bandwidth_Bps, n.name + ".loopback"))
               .first;
    }
    spec.resources = {it->second};
  } else {
    const auto& path = topology_.route(src, dst);
    spec.resources.assign(path.begin(), path.end());
    spec.latency = topology_.path_latency(path);
  }
  return flows_.start(std::move(spec));
}

std::optional<ResourceId> Network::reduce_resource(NodeId node) {
  if (auto it = reduce_.find(node); it != reduce_.end()) return it->second;
  const Node& n = topology_.node(node);
  if (n.reduce_bandwidth_Bps <= 0) return std::nullopt;
  return reduce_.emplace(node, flows_.add_resource(n.reduce_bandwidth_Bps, n.name + ".reduce"))
      .first->second;
}

void Network::set_channel_bandwidth(ChannelId channel, double bandwidth_Bps) {
  flows_.set_capacity(channel, bandwidth_Bps);
}

}  // namespace adaptsim::net
