#include "sim/net/flow_network.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace adaptsim::net {

ResourceId FlowNetwork::add_resource(double capacity_Bps, std::string name) {
  if (!(capacity_Bps >= 0)) throw std::invalid_argument("resource capacity must be >= 0");
  resources_.push_back(Resource{capacity_Bps, std::move(name), {}, 0.0, 0});
  local_index_.push_back(0);
  return static_cast<ResourceId>(resources_.size() - 1);
}

void FlowNetwork::set_capacity(ResourceId r, double capacity_Bps) {
  if (!(capacity_Bps >= 0)) throw std::invalid_argument("resource capacity must be >= 0");
  resources_.at(r).capacity = capacity_Bps;
  const ResourceId touched[] = {r};
  touch(touched);
}

FlowNetwork::FlowId FlowNetwork::start(FlowSpec spec) {
  for (ResourceId r : spec.resources) {
    if (r >= resources_.size()) throw std::out_of_range("flow crosses an unknown resource");
  }
  if (!(spec.bytes >= 0)) throw std::invalid_argument("flow size must be >= 0");
  std::uint32_t index;
  if (!free_flows_.empty()) {
    index = free_flows_.back();
    free_flows_.pop_back();
  } else {
    index = static_cast<std::uint32_t>(flows_.size());
    flows_.emplace_back();
  }
  Flow& f = flows_[index];
  f.resources = std::move(spec.resources);
  f.remaining = spec.bytes;
  f.rate = 0;
  f.cap = spec.rate_cap_Bps;
  f.updated = engine_.now();
  f.latency = spec.latency;
  f.on_complete = std::move(spec.on_complete);
  f.on_transmitted = std::move(spec.on_transmitted);
  f.drain_event = {};
  f.in_use = true;
  ++active_count_;
  const FlowId id{index, f.generation};

  if (spec.bytes == 0) {
    // Nothing to transmit: only the path latency.
    f.transmitting = false;
    if (f.on_transmitted) engine_.schedule_after(0, std::move(f.on_transmitted));
    engine_.schedule_after(f.latency, [this, index] { release(index); });
    return id;
  }
  f.transmitting = true;
  for (ResourceId r : f.resources) resources_[r].flows.push_back(index);
  if (f.resources.empty()) {
    // Crosses no shared resource: only its own cap limits it.
    f.rate = f.cap;
    if (std::isfinite(f.rate)) {
      schedule_drain(index);
    } else if (std::isfinite(f.remaining)) {
      engine_.schedule_after(0, [this, index] { on_drained(index); });
    }
    return id;
  }
  touch(f.resources);
  return id;
}

bool FlowNetwork::stop(FlowId id) {
  if (!id.valid() || id.index >= flows_.size()) return false;
  Flow& f = flows_[id.index];
  if (!f.in_use || f.generation != id.generation) return false;
  if (!f.transmitting) return false;  // already in its latency tail: let it complete
  engine_.cancel(f.drain_event);
  settle(f);
  std::vector<ResourceId> touched = f.resources;
  detach(id.index);
  f.on_complete = nullptr;
  f.on_transmitted = nullptr;
  f.in_use = false;
  ++f.generation;
  --active_count_;
  free_flows_.push_back(id.index);
  touch(touched);
  return true;
}

double FlowNetwork::rate(FlowId id) const {
  if (!id.valid() || id.index >= flows_.size()) return 0;
  const Flow& f = flows_[id.index];
  if (!f.in_use || f.generation != id.generation || !f.transmitting) return 0;
  return f.rate;
}

double FlowNetwork::bytes_carried(ResourceId r) const {
  double total = resources_.at(r).carried_bytes;
  // Include what active flows have sent since they were last settled.
  for (std::uint32_t fi : resources_[r].flows) {
    const Flow& f = flows_[fi];
    total += f.rate * to_seconds(engine_.now() - f.updated);
  }
  return total;
}

void FlowNetwork::settle(Flow& f) {
  const TimeNs now = engine_.now();
  if (now > f.updated && f.rate > 0 && std::isfinite(f.rate)) {
    double sent = f.rate * to_seconds(now - f.updated);
    if (sent > f.remaining) sent = f.remaining;
    f.remaining -= sent;
    for (ResourceId r : f.resources) resources_[r].carried_bytes += sent;
  }
  f.updated = now;
}

void FlowNetwork::detach(std::uint32_t index) {
  Flow& f = flows_[index];
  for (ResourceId r : f.resources) {
    auto& list = resources_[r].flows;
    auto it = std::find(list.begin(), list.end(), index);
    *it = list.back();
    list.pop_back();
  }
  f.transmitting = false;
}

void FlowNetwork::release(std::uint32_t index) {
  Flow& f = flows_[index];
  Callback cb = std::move(f.on_complete);
  f.on_complete = nullptr;
  f.in_use = false;
  ++f.generation;
  --active_count_;
  free_flows_.push_back(index);
  if (cb) cb();
}

void FlowNetwork::schedule_drain(std::uint32_t index) {
  Flow& f = flows_[index];
  engine_.cancel(f.drain_event);
  f.drain_event = {};
  if (!(f.rate > 0) || !std::isfinite(f.remaining)) return;  // stalled, or background traffic
  const TimeNs delay = seconds_to_ns_ceil(f.remaining / f.rate);
  f.drain_event = engine_.schedule_after(std::max<TimeNs>(delay, 0),
                                         [this, index] { on_drained(index); });
}

void FlowNetwork::on_drained(std::uint32_t index) {
  Flow& f = flows_[index];
  f.drain_event = {};
  settle(f);
  // The drain time was rounded up to the next nanosecond; whatever is left is rounding.
  for (ResourceId r : f.resources) resources_[r].carried_bytes += f.remaining;
  f.remaining = 0;
  detach(index);
  touch(f.resources);
  engine_.schedule_after(f.latency, [this, index] { release(index); });
  if (f.on_transmitted) {
    Callback cb = std::move(f.on_transmitted);
    f.on_transmitted = nullptr;
    cb();  // may start flows and grow flows_: `f` is not used after this
  }
}

void FlowNetwork::touch(std::span<const ResourceId> resources) {
  dirty_.insert(dirty_.end(), resources.begin(), resources.end());
  if (resolve_pending_) return;
  resolve_pending_ = true;
  engine_.schedule_after(0, [this] { reallocate(); });
}

void FlowNetwork::reallocate() {
  resolve_pending_ = false;
  ++solves_;
  // 1. Collect the component reachable from the touched resources.
  ++stamp_;
  comp_flows_.clear();
  comp_resources_.clear();
  queue_.clear();
  for (ResourceId r : dirty_) {
    if (resources_[r].stamp != stamp_) {
      resources_[r].stamp = stamp_;
      queue_.push_back(r);
    }
  }
  dirty_.clear();
  for (std::size_t qi = 0; qi < queue_.size(); ++qi) {
    const ResourceId r = queue_[qi];
    local_index_[r] = static_cast<std::uint32_t>(comp_resources_.size());
    comp_resources_.push_back(r);
    for (std::uint32_t fi : resources_[r].flows) {
      Flow& f = flows_[fi];
      if (f.stamp == stamp_) continue;
      f.stamp = stamp_;
      comp_flows_.push_back(fi);
      for (ResourceId r2 : f.resources) {
        if (resources_[r2].stamp != stamp_) {
          resources_[r2].stamp = stamp_;
          queue_.push_back(r2);
        }
      }
    }
  }
  if (comp_flows_.empty()) return;

  // 2. Build the local problem and solve it.
  local_capacity_.resize(comp_resources_.size());
  for (std::size_t i = 0; i < comp_resources_.size(); ++i) {
    local_capacity_[i] = resources_[comp_resources_[i]].capacity;
  }
  local_links_.clear();
  for (std::uint32_t fi : comp_flows_) {
    for (ResourceId r : flows_[fi].resources) local_links_.push_back(local_index_[r]);
  }
  local_paths_.resize(comp_flows_.size());
  local_caps_.resize(comp_flows_.size());
  local_rates_.resize(comp_flows_.size());
  std::size_t offset = 0;
  for (std::size_t i = 0; i < comp_flows_.size(); ++i) {
    const Flow& f = flows_[comp_flows_[i]];
    local_paths_[i] = std::span<const std::uint32_t>(local_links_.data() + offset, f.resources.size());
    offset += f.resources.size();
    local_caps_[i] = f.cap;
  }
  solver_.solve(local_capacity_, local_paths_, local_caps_, local_rates_);

  // 3. Apply: settle bytes at the old rate, then reschedule the flows whose rate changed.
  for (std::size_t i = 0; i < comp_flows_.size(); ++i) {
    const std::uint32_t fi = comp_flows_[i];
    Flow& f = flows_[fi];
    const double new_rate = local_rates_[i];
    if (new_rate == f.rate && f.drain_event.valid()) continue;
    settle(f);
    f.rate = new_rate;
    ++flows_rerated_;
    schedule_drain(fi);
  }
}

}  // namespace adaptsim::net
