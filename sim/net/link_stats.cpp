#include "sim/net/link_stats.h"

#include <algorithm>
#include <stdexcept>

#include "sim/net/flow_network.h"

namespace adaptsim::net {

LinkRecorder::LinkRecorder(TimeNs bin_ns) : bin_ns_(bin_ns) {
  if (bin_ns <= 0) throw std::invalid_argument("link statistics need a bin of at least 1 ns");
}

void LinkRecorder::carried(std::uint32_t resource, TimeNs t0, TimeNs t1, double bytes) {
  if (!(bytes > 0)) return;
  if (resource >= resources_.size()) resources_.resize(resource + 1);
  Resource& r = resources_[resource];
  if (t1 <= t0) {
    r.instants[t0] += bytes;
    return;
  }
  const double rate = bytes / to_seconds(t1 - t0);
  r.rate_changes[t0] += rate;
  r.rate_changes[t1] -= rate;
}

std::vector<LinkUse> LinkRecorder::report(const FlowNetwork& network, TimeNs end) const {
  const std::size_t bins = end > 0 ? static_cast<std::size_t>((end - 1) / bin_ns_ + 1) : 0;
  std::vector<LinkUse> out(network.resource_count());
  for (std::size_t i = 0; i < out.size(); ++i) {
    LinkUse& u = out[i];
    const auto id = static_cast<std::uint32_t>(i);
    u.name = network.resource_name(id);
    u.capacity_Bps = network.capacity(id);
    u.bin_bytes.assign(bins, 0.0);
    if (i >= resources_.size()) continue;
    const Resource& r = resources_[i];
    // Integrate the aggregate rate's steps: [t, next) at `rate`.
    double rate = 0;
    for (auto it = r.rate_changes.begin(); it != r.rate_changes.end(); ++it) {
      rate += it->second;
      const auto next = std::next(it);
      if (next == r.rate_changes.end()) break;
      const TimeNs a = it->first, b = next->first;
      // Flows that stop and start at one instant leave float residue, not a rate.
      if (!(rate > 1e-9 * std::max(1.0, u.capacity_Bps))) continue;
      u.busy_s += to_seconds(b - a);
      u.bytes += rate * to_seconds(b - a);
      u.peak_utilization = std::max(u.peak_utilization, rate / u.capacity_Bps);
      for (TimeNs t = a; t < b;) {
        const auto k = static_cast<std::size_t>(t / bin_ns_);
        const TimeNs bin_end = std::min<TimeNs>(b, static_cast<TimeNs>(k + 1) * bin_ns_);
        if (k < bins) u.bin_bytes[k] += rate * to_seconds(bin_end - t);
        t = bin_end;
      }
    }
    for (const auto& [t, bytes] : r.instants) {
      u.bytes += bytes;
      const auto k = static_cast<std::size_t>(t / bin_ns_);
      u.bin_bytes[std::min(k, bins > 0 ? bins - 1 : 0)] += bins > 0 ? bytes : 0;
    }
    if (end > 0 && u.capacity_Bps > 0)
      u.mean_utilization = u.bytes / (u.capacity_Bps * to_seconds(end));
  }
  return out;
}

}  // namespace adaptsim::net
