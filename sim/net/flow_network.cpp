#include "sim/net/flow_network.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "sim/core/rng.h"

namespace adaptsim::net {

ResourceId FlowNetwork::add_resource(double capacity_Bps, std::string name) {
  if (!(capacity_Bps >= 0)) throw std::invalid_argument("resource capacity must be >= 0");
  Resource r;
  r.capacity = capacity_Bps;
  r.name = std::move(name);
  resources_.push_back(std::move(r));
  return static_cast<ResourceId>(resources_.size() - 1);
}

void FlowNetwork::set_capacity(ResourceId r, double capacity_Bps) {
  if (!(capacity_Bps >= 0)) throw std::invalid_argument("resource capacity must be >= 0");
  resources_.at(r).capacity = capacity_Bps;
  capacity_changed_ = true;
  const ResourceId touched[] = {r};
  touch(touched);
}

FlowNetwork::FlowId FlowNetwork::start(FlowSpec spec) {
  return start_from(spec);
}

FlowNetwork::FlowId FlowNetwork::start_from(FlowSpec& spec) {
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
  // Copied into the slot's own vectors (a reused slot keeps their capacity): no allocation per
  // flow once the slots have grown, and the caller may reuse spec's.
  f.resources.assign(spec.resources.begin(), spec.resources.end());
  for (ResourceId r : spec.ack_resources) {
    if (r >= resources_.size()) throw std::out_of_range("flow's ACKs cross an unknown resource");
  }
  f.ack_resources.assign(spec.ack_resources.begin(), spec.ack_resources.end());
  f.remaining = spec.bytes;
  f.bytes = spec.bytes;
  if (!(spec.share > 0)) throw std::invalid_argument("flow share must be > 0");
  f.share = spec.share;
  f.rate = 0;
  f.cap = spec.rate_cap_Bps;
  f.own_cap = spec.rate_cap_Bps;
  f.updated = engine_.now();
  f.latency = spec.latency;
  f.drain_at = kTimeNever;
  f.on_complete = std::move(spec.on_complete);
  f.on_transmitted = std::move(spec.on_transmitted);
  f.in_use = true;
  f.pending_start = false;
  f.window = UINT32_MAX;
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
  if (f.resources.empty()) {
    // Crosses no shared resource: only its own cap limits it.
    f.rate = f.cap;
    if (std::isfinite(f.rate)) {
      if (std::isfinite(f.remaining)) {
        f.drain_at = engine_.now() + seconds_to_ns_ceil(f.remaining / f.rate);
        drain_update(index);
      }
    } else if (std::isfinite(f.remaining)) {
      engine_.schedule_after(0, [this, index] { on_drained(index); });
    }
    return id;
  }
  for (ResourceId r : f.resources)
    resources_[r].flows.push_back(index);
  for (ResourceId r : f.ack_resources)
    resources_[r].ack_flows.push_back(index);
  if (tcp_windows_.enabled && spec.connection != 0) attach_window(index, spec.connection);
  note_started(index);
  return id;
}

bool FlowNetwork::stop(FlowId id) {
  if (!id.valid() || id.index >= flows_.size()) return false;
  Flow& f = flows_[id.index];
  if (!f.in_use || f.generation != id.generation) return false;
  if (!f.transmitting) return false;  // already in its latency tail: let it complete
  settle(f);
  drain_remove(id.index);
  if (f.window != UINT32_MAX) detach_window(f);
  // A flow started in this instant has no rate yet and never counted: it just goes (its entry
  // in started_ no longer matches its generation).
  if (!f.pending_start) note_ended(id.index);
  detach(id.index);
  f.on_complete = nullptr;
  f.on_transmitted = nullptr;
  f.in_use = false;
  ++f.generation;
  --active_count_;
  free_flows_.push_back(id.index);
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
    total += std::min(f.remaining, f.rate * to_seconds(engine_.now() - f.updated));
  }
  return total;
}

void FlowNetwork::settle(Flow& f) {
  const TimeNs now = engine_.now();
  if (now > f.updated && f.rate > 0 && std::isfinite(f.rate)) {
    double sent = f.rate * to_seconds(now - f.updated);
    if (sent > f.remaining) sent = f.remaining;
    f.remaining -= sent;
    for (ResourceId r : f.resources) {
      resources_[r].carried_bytes += sent;
      if (recorder_ != nullptr) recorder_->carried(r, f.updated, now, sent);
    }
  }
  f.updated = now;
}

void FlowNetwork::detach(std::uint32_t index) {
  Flow& f = flows_[index];
  auto remove = [index](std::vector<std::uint32_t>& list) {
    auto it = std::find(list.begin(), list.end(), index);
    *it = list.back();
    list.pop_back();
  };
  for (ResourceId r : f.resources)
    remove(resources_[r].flows);
  for (ResourceId r : f.ack_resources)
    remove(resources_[r].ack_flows);
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

void FlowNetwork::on_drained(std::uint32_t index) {
  Flow& f = flows_[index];
  settle(f);
  // The drain time was rounded up to the next nanosecond; whatever is left is rounding.
  for (ResourceId r : f.resources) {
    resources_[r].carried_bytes += f.remaining;
    if (recorder_ != nullptr) recorder_->carried(r, engine_.now(), engine_.now(), f.remaining);
  }
  f.remaining = 0;
  f.drain_at = kTimeNever;
  if (f.window != UINT32_MAX) detach_window(f);
  note_ended(index);
  detach(index);
  engine_.schedule_after(f.latency, [this, index] { release(index); });
  if (f.on_transmitted) {
    Callback cb = std::move(f.on_transmitted);
    f.on_transmitted = nullptr;
    cb();  // may start flows and grow flows_: `f` is not used after this
  }
}

// ---------------------------------------------------------------------------------------------
// Drain-time heap

bool FlowNetwork::drain_less(std::uint32_t a, std::uint32_t b) const {
  const TimeNs ta = flows_[a].drain_at, tb = flows_[b].drain_at;
  return ta != tb ? ta < tb : a < b;  // index breaks ties: deterministic order
}

void FlowNetwork::drain_swap(std::size_t a, std::size_t b) {
  std::swap(drain_heap_[a], drain_heap_[b]);
  flows_[drain_heap_[a]].heap_pos = static_cast<std::uint32_t>(a);
  flows_[drain_heap_[b]].heap_pos = static_cast<std::uint32_t>(b);
}

void FlowNetwork::drain_sift_up(std::size_t pos) {
  while (pos > 0) {
    const std::size_t parent = (pos - 1) / 2;
    if (!drain_less(drain_heap_[pos], drain_heap_[parent])) break;
    drain_swap(pos, parent);
    pos = parent;
  }
}

void FlowNetwork::drain_sift_down(std::size_t pos) {
  const std::size_t n = drain_heap_.size();
  while (true) {
    std::size_t best = pos;
    const std::size_t l = 2 * pos + 1, r = l + 1;
    if (l < n && drain_less(drain_heap_[l], drain_heap_[best])) best = l;
    if (r < n && drain_less(drain_heap_[r], drain_heap_[best])) best = r;
    if (best == pos) return;
    drain_swap(pos, best);
    pos = best;
  }
}

void FlowNetwork::drain_remove(std::uint32_t index) {
  Flow& f = flows_[index];
  if (f.heap_pos == kNotQueued) return;
  const std::size_t pos = f.heap_pos;
  drain_swap(pos, drain_heap_.size() - 1);
  drain_heap_.pop_back();
  f.heap_pos = kNotQueued;
  if (pos < drain_heap_.size()) {
    drain_sift_up(pos);
    drain_sift_down(flows_[drain_heap_[pos]].heap_pos);
  }
  rearm_drain_event();
}

void FlowNetwork::drain_update(std::uint32_t index) {
  Flow& f = flows_[index];
  if (f.drain_at == kTimeNever) {
    drain_remove(index);
    return;
  }
  if (f.heap_pos == kNotQueued) {
    f.heap_pos = static_cast<std::uint32_t>(drain_heap_.size());
    drain_heap_.push_back(index);
    drain_sift_up(f.heap_pos);
  } else {
    drain_sift_up(f.heap_pos);
    drain_sift_down(f.heap_pos);
  }
  rearm_drain_event();
}

void FlowNetwork::rearm_drain_event() {
  const TimeNs next = drain_heap_.empty() ? kTimeNever : flows_[drain_heap_.front()].drain_at;
  if (next == drain_event_at_) return;
  engine_.cancel(drain_event_);
  drain_event_ = {};
  drain_event_at_ = next;
  if (next != kTimeNever) drain_event_ = engine_.schedule_at(next, [this] { on_drain_event(); });
}

void FlowNetwork::on_drain_event() {
  drain_event_ = {};
  drain_event_at_ = kTimeNever;
  const TimeNs now = engine_.now();
  // Every flow due now, in (time, index) order. on_drained may start flows (touch only marks
  // resources; the re-solve runs later in this instant), so the heap is stable here.
  while (!drain_heap_.empty() && flows_[drain_heap_.front()].drain_at <= now) {
    const std::uint32_t index = drain_heap_.front();
    drain_swap(0, drain_heap_.size() - 1);
    drain_heap_.pop_back();
    flows_[index].heap_pos = kNotQueued;
    if (!drain_heap_.empty()) drain_sift_down(0);
    on_drained(index);
  }
  rearm_drain_event();
}

// ---------------------------------------------------------------------------------------------
// Re-solve

void FlowNetwork::touch(std::span<const ResourceId> resources) {
  dirty_.insert(dirty_.end(), resources.begin(), resources.end());
  schedule_resolve();
}

void FlowNetwork::schedule_resolve() {
  if (resolve_pending_) return;
  resolve_pending_ = true;
  engine_.schedule_after(0, [this] { reallocate(); });
}

FlowNetwork::Change FlowNetwork::describe(const Flow& f) const {
  const bool tcp = sharing_ == Sharing::kTcp;
  Change c{};
  c.n_resources = static_cast<std::uint32_t>(f.resources.size());
  c.n_ack = static_cast<std::uint32_t>(f.ack_resources.size());
  c.cap = f.own_cap;
  c.share = f.share;
  c.latency = tcp ? f.latency : 0;  // only RTT weights read it
  c.small = tcp && f.bytes <= kInitialWindowBytes;
  std::uint64_t h = mix64(c.n_resources * 0x9e3779b97f4a7c15ULL + c.n_ack);
  for (ResourceId r : f.resources)
    h = mix64(h ^ r);
  for (ResourceId r : f.ack_resources)
    h = mix64(h ^ (r + 0x100000000ULL));
  h = mix64(h ^ std::bit_cast<std::uint64_t>(c.cap));
  h = mix64(h ^ std::bit_cast<std::uint64_t>(c.share));
  h = mix64(h ^ static_cast<std::uint64_t>(c.latency) ^ (c.small ? 1ULL << 63 : 0));
  c.key = h;
  return c;
}

void FlowNetwork::note_started(std::uint32_t index) {
  Flow& f = flows_[index];
  Change c = describe(f);
  c.flow = index;
  c.generation = f.generation;
  f.pending_start = true;
  started_.push_back(c);
  schedule_resolve();
}

void FlowNetwork::note_ended(std::uint32_t index) {
  const Flow& f = flows_[index];
  Change c = describe(f);
  c.flow = UINT32_MAX;
  c.begin = static_cast<std::uint32_t>(ended_resources_.size());
  ended_resources_.insert(ended_resources_.end(), f.resources.begin(), f.resources.end());
  ended_resources_.insert(ended_resources_.end(), f.ack_resources.begin(), f.ack_resources.end());
  c.rate = f.rate;
  c.bottleneck = f.bottleneck;
  ended_.push_back(c);
  schedule_resolve();
}

double FlowNetwork::saturation_level(ResourceId r) {
  // The level at which r saturates when the fresh flows on it rise from 0 beside its other
  // flows at their rates: C = sum of the rates below t + t x (flows at or above t, fresh ones
  // included). Water-filling over the other flows' rates in ascending order.
  const Resource& res = resources_[r];
  level_scratch_.clear();
  std::size_t fresh = 0;
  for (std::uint32_t fi : res.flows) {
    if (flows_[fi].fresh) {
      ++fresh;
    } else {
      level_scratch_.push_back(flows_[fi].rate);
    }
  }
  std::sort(level_scratch_.begin(), level_scratch_.end());
  double remaining = res.capacity;
  std::size_t rising = fresh + level_scratch_.size();
  for (double x : level_scratch_) {
    const double t = remaining / static_cast<double>(rising);
    if (t <= x) return std::max(0.0, t);
    remaining -= x;
    --rising;
  }
  return std::max(0.0, remaining / static_cast<double>(rising));
}

void FlowNetwork::pair_changes() {
  // The restart level: progressive filling over the new set of flows runs exactly as it ran
  // over the old one below min(the rate of every flow that ended unpaired, the level at which
  // every resource of a fresh flow saturates with it), so flows whose rate is below it keep
  // their rates (docs/performance.md). Only max-min sharing restarts above 0: TCP sharing's
  // weights depend on every standing queue of the component.
  restart_level_ = (sharing_ == Sharing::kMaxMin && !capacity_changed_)
                       ? std::numeric_limits<double>::infinity()
                       : 0.0;
  capacity_changed_ = false;
  if (started_.empty() && ended_.empty()) return;
  // Ended flows by key; equal keys in the order they ended (deterministic pairing).
  std::sort(ended_.begin(), ended_.end(), [](const Change& a, const Change& b) {
    return a.key != b.key ? a.key < b.key : a.begin < b.begin;
  });
  auto same = [&](const Change& e, const Change& s, const Flow& f) {
    // A flow's weight follows its own connection's window: no two are interchangeable.
    if (tcp_windows_.enabled) return false;
    if (e.n_resources != s.n_resources || e.n_ack != s.n_ack || e.cap != s.cap ||
        e.share != s.share || e.latency != s.latency || e.small != s.small) {
      return false;
    }
    const ResourceId* saved = ended_resources_.data() + e.begin;
    return std::equal(f.resources.begin(), f.resources.end(), saved) &&
           std::equal(f.ack_resources.begin(), f.ack_resources.end(), saved + e.n_resources);
  };
  for (Change& s : started_) {
    Flow& f = flows_[s.flow];
    if (!f.in_use || f.generation != s.generation || !f.transmitting) continue;  // stopped
    f.pending_start = false;
    auto it = std::lower_bound(ended_.begin(), ended_.end(), s.key,
                               [](const Change& e, std::uint64_t key) { return e.key < key; });
    for (; it != ended_.end() && it->key == s.key; ++it) {
      if (!it->paired && same(*it, s, f)) break;
    }
    if (it != ended_.end() && it->key == s.key) {
      it->paired = true;
      ++flows_paired_;
      f.bottleneck = it->bottleneck;
      apply_rate(s.flow, it->rate);
    } else {
      dirty_.insert(dirty_.end(), f.resources.begin(), f.resources.end());
      f.fresh = true;
      fresh_.push_back(s.flow);
    }
  }
  for (const Change& e : ended_) {
    if (e.paired) continue;
    const ResourceId* saved = ended_resources_.data() + e.begin;
    dirty_.insert(dirty_.end(), saved, saved + e.n_resources);
    restart_level_ = std::min(restart_level_, e.rate);
  }
  if (restart_level_ > 0) {
    for (std::uint32_t fi : fresh_) {
      for (ResourceId r : flows_[fi].resources)
        restart_level_ = std::min(restart_level_, saturation_level(r));
    }
  }
  started_.clear();
  ended_.clear();
  ended_resources_.clear();
}

namespace {
bool fill_later(const auto& a, const auto& b) {
  if (a.share != b.share) return a.share > b.share;
  if (a.cap != b.cap) return a.cap;  // resources before caps at equal shares
  return a.id > b.id;
}
}  // namespace

void FlowNetwork::fill_component() {
  // Progressive filling (see MaxMinSolver, the reference implementation with its own tests), run
  // in place over the persistent per-resource flow lists. Weighted: every unfrozen flow's rate
  // rises as weight x level; a resource saturates at level remaining / (sum of its unfrozen
  // weights). With unit weights this is plain max-min.
  // Flow weights are set by the caller (1, or 1 / RTT under Sharing::kTcp).
  // Flows of a touched resource left out of comp_flows_ (below the restart level, see
  // reallocate) keep their rates: their resources' capacity less those rates is what is shared.
  for (std::uint32_t fi : comp_flows_)
    flows_[fi].frozen = false;
  fill_heap_.clear();
  for (ResourceId r : comp_resources_) {
    Resource& res = resources_[r];
    res.remaining = res.capacity;
    res.unfrozen = 0;
    res.unfrozen_weight = 0;
    for (std::uint32_t fi : res.flows) {
      const Flow& g = flows_[fi];
      if (g.stamp == stamp_) {
        ++res.unfrozen;
        res.unfrozen_weight += g.weight;
      } else {
        res.remaining -= g.rate;
      }
    }
    res.remaining = std::max(0.0, res.remaining);
    ++res.version;
    if (res.unfrozen > 0) {
      fill_heap_.push_back({res.remaining / res.unfrozen_weight, r, res.version, false});
    }
  }
  for (std::uint32_t fi : comp_flows_) {
    const Flow& f = flows_[fi];
    if (f.cap != MaxMinSolver::kUncapped) fill_heap_.push_back({f.cap / f.weight, fi, 0, true});
  }
  std::make_heap(fill_heap_.begin(), fill_heap_.end(), fill_later<FillItem, FillItem>);

  std::size_t left = comp_flows_.size();
  auto freeze = [&](std::uint32_t fi, double level, std::uint32_t except) {
    Flow& f = flows_[fi];
    const double rate = f.weight * level;
    f.frozen = true;
    f.bottleneck = except;  // the resource it froze at; UINT32_MAX: its cap
    new_rates_[f.pos] = rate;
    --left;
    // No heap push here: freezing flows at the current minimum level only raises the other
    // resources' levels, so their heap keys stay lower bounds and are refreshed when popped.
    for (ResourceId r : f.resources) {
      if (r == except) continue;
      Resource& res = resources_[r];
      res.remaining = std::max(0.0, res.remaining - rate);
      res.unfrozen_weight = std::max(0.0, res.unfrozen_weight - f.weight);
      --res.unfrozen;
      ++res.version;
    }
  };
  while (left > 0 && !fill_heap_.empty()) {
    std::pop_heap(fill_heap_.begin(), fill_heap_.end(), fill_later<FillItem, FillItem>);
    const FillItem item = fill_heap_.back();
    fill_heap_.pop_back();
    if (item.cap) {
      if (!flows_[item.id].frozen) freeze(item.id, item.share, UINT32_MAX);
      continue;
    }
    Resource& res = resources_[item.id];
    if (res.unfrozen == 0) continue;  // all its flows are frozen already
    if (item.version != res.version) {
      // Stale key (a lower bound): re-queue at the current level.
      fill_heap_.push_back({res.remaining / res.unfrozen_weight, item.id, res.version, false});
      std::push_heap(fill_heap_.begin(), fill_heap_.end(), fill_later<FillItem, FillItem>);
      continue;
    }
    const double level = std::max(0.0, res.remaining / res.unfrozen_weight);
    for (std::uint32_t fi : res.flows) {
      if (flows_[fi].stamp == stamp_ && !flows_[fi].frozen) freeze(fi, level, item.id);
    }
    res.remaining = 0;
    res.unfrozen = 0;
    res.unfrozen_weight = 0;
    ++res.version;
  }
}

void FlowNetwork::mark_standing_queues() {
  // From new_rates_: a flow is limited at a resource when the resource is saturated and no flow
  // there has a higher level (rate / weight), the weighted max-min bottleneck condition. The
  // filling scratch is reused: remaining = rate used, unfrozen_weight = highest level.
  constexpr double kTol = 1e-9;
  auto rate_of = [&](std::uint32_t fi) { return new_rates_[flows_[fi].pos]; };
  filling_pairs_.clear();
  for (ResourceId r : comp_resources_) {
    Resource& res = resources_[r];
    res.standing = false;
    res.filling = 0;
    res.remaining = 0;
    res.unfrozen_weight = 0;
    for (std::uint32_t g : res.flows) {
      res.remaining += rate_of(g);
      res.unfrozen_weight = std::max(res.unfrozen_weight, rate_of(g) / flows_[g].weight);
    }
  }
  auto limited_at = [&](std::uint32_t fi, ResourceId r) {
    const Resource& res = resources_[r];
    return res.remaining >= res.capacity * (1 - kTol) &&
           rate_of(fi) / flows_[fi].weight >= res.unfrozen_weight * (1 - kTol);
  };
  for (std::uint32_t fi : comp_flows_) {
    Flow& f = flows_[fi];
    bool paced = f.cap != MaxMinSolver::kUncapped && rate_of(fi) >= f.cap * (1 - kTol);
    for (ResourceId r : f.resources) {
      if (paced) break;
      paced = resources_[r].queue_ns == 0 && limited_at(fi, r);
    }
    f.paced = paced;
    if (paced || f.bytes <= kInitialWindowBytes) continue;
    for (ResourceId r : f.resources) {
      if (resources_[r].queue_ns > 0 && limited_at(fi, r)) {
        resources_[r].standing = true;
        ++resources_[r].filling;
        filling_pairs_.emplace_back(fi, r);
      }
    }
  }
}

void FlowNetwork::solve_tcp() {
  // 1. Unit weights: which buffers fill, and which flows are paced by their own NIC (or cap).
  // 2. RTT weights from those queues (times the connection's share for the flows that are not
  // paced), the weighted solve, and the queues it leaves standing (standing_queue() reports them).
  for (std::uint32_t fi : comp_flows_) {
    flows_[fi].weight = 1;
    flows_[fi].cap = flows_[fi].own_cap;
  }
  fill_component();
  mark_standing_queues();
  set_queue_delays();
  // RTT: twice the path latency, plus the standing queues on the data path and, since ACKs queued
  // in a standing buffer on the way back lengthen it too (a sender whose own port is full:
  // docs/validation.md items 7 and 14), those on the ACK path.
  for (std::uint32_t fi : comp_flows_) {
    Flow& f = flows_[fi];
    double rtt = 2 * static_cast<double>(f.latency);
    f.data_queue = false;
    for (ResourceId r : f.resources) {
      if (resources_[r].standing) {
        rtt += resources_[r].queue_delay_ns;
        f.data_queue = true;
      }
    }
    for (ResourceId r : f.ack_resources) {
      if (resources_[r].standing) rtt += resources_[r].queue_delay_ns;
    }
    f.rtt_ns = std::max(rtt, static_cast<double>(kNsPerUs));
  }
  // A flow filling a buffer has as much in flight as its rate × its RTT (the RTT includes its
  // own ACK path's queue: with both directions of a leaf uplink full, about twice the buffer's
  // delay; docs/validation.md item 16), its rate here the even split of step 1.
  if (tcp_windows_.enabled) update_windows();
  for (ResourceId r : comp_resources_)
    resources_[r].fill_window = 0;
  for (const auto& [fi, r] : filling_pairs_) {
    const Flow& g = flows_[fi];
    resources_[r].fill_window += new_rates_[g.pos] * g.rtt_ns * 1e-9;
  }
  for (std::uint32_t fi : comp_flows_) {
    Flow& f = flows_[fi];
    // A connection's share is how its window fares in a drop-tail buffer, so it counts only for
    // a flow limited at one; a flow paced by its own NIC gets its NIC's even split
    // (docs/validation.md item 18).
    // With windows, a flow filling a buffer claims it in proportion to its window too.
    const double claim = tcp_windows_.enabled ? window_factor_[f.pos] : 1.0;
    f.weight = (f.paced ? 1.0 : f.share * claim) / f.rtt_ns;
    // With windows, a flow paced elsewhere whose data still queue in a standing buffer has at
    // most its window in flight: window / RTT, the RTT with that queue (docs/figures.md, Figure
    // 5: the new root's broadcast into host 0 beside the background's bulk windows).
    if (tcp_windows_.enabled && f.window != UINT32_MAX && f.data_queue && f.paced) {
      const double by_window = windows_[f.window].cwnd * kMss / (f.rtt_ns * 1e-9);
      if (by_window < f.cap) {
        f.cap = by_window;
        window_capped_[f.pos] = true;
      }
    }
    // A flow that fills no buffer itself is not window-limited by one, but its window is what
    // TCP's history left it, not unbounded: the model gives it the window of a flow filling its
    // ACK buffer (their mean window; no share: a root's broadcasts leave evenly, item 18), so it
    // sends at most window / RTT while that buffer stands.
    if (f.data_queue || f.bytes <= kInitialWindowBytes) continue;
    double window = std::numeric_limits<double>::infinity();
    for (ResourceId r : f.ack_resources) {
      const Resource& res = resources_[r];
      if (!res.standing || res.filling == 0) continue;
      window = std::min(window, res.fill_window / static_cast<double>(res.filling));
    }
    if (std::isfinite(window)) f.cap = std::min(f.own_cap, window / (f.rtt_ns * 1e-9));
  }
  std::fill(new_rates_.begin(), new_rates_.end(), 0.0);
  fill_component();
  mark_standing_queues();
  if (tcp_windows_.enabled) note_growing();
}

// ---------------------------------------------------------------------------------------------
// Congestion windows (TcpWindowOptions)

namespace {
// tcp_cubic.c: beta = 717 / 1024, bic_scale = 41 (C = 41 * 10 / 1024 = 0.4 segments / s^3), and
// tcp_friendliness's Reno estimate, 3 (1 - beta) / (1 + beta) segments a round trip.
constexpr double kCubicBeta = 717.0 / 1024.0;
constexpr double kCubicC = 0.4;
constexpr double kRenoAlpha = 3 * (1 - kCubicBeta) / (1 + kCubicBeta);
constexpr double kInitialWindow = 10;         // segments, RFC 6928
constexpr double kHystartLow = 16;            // hystart_low_window
constexpr double kHystartMinNs = 4e6;         // HYSTART_DELAY_MIN, 4 ms
constexpr double kHystartMaxNs = 16e6;        // HYSTART_DELAY_MAX, 16 ms
constexpr TimeNs kRtoMinNs = 200 * kNsPerMs;  // TCP_RTO_MIN
}  // namespace

void FlowNetwork::set_tcp_windows(const TcpWindowOptions& options) {
  if (options.enabled && sharing_ != Sharing::kTcp) {
    throw std::invalid_argument("congestion windows need Sharing::kTcp");
  }
  tcp_windows_ = options;
}

double FlowNetwork::window_segments(std::uint64_t connection) const {
  const auto it = window_of_.find(connection);
  return it == window_of_.end() ? kInitialWindow : windows_[it->second].cwnd;
}

std::uint64_t FlowNetwork::window_cuts(std::uint64_t connection) const {
  const auto it = window_of_.find(connection);
  return it == window_of_.end() ? 0 : windows_[it->second].cuts;
}

void FlowNetwork::attach_window(std::uint32_t index, std::uint64_t connection) {
  const TimeNs now = engine_.now();
  Flow& f = flows_[index];
  const auto [it, fresh] =
      window_of_.try_emplace(connection, static_cast<std::uint32_t>(windows_.size()));
  if (fresh) {
    windows_.emplace_back();
    Window& w = windows_.back();
    // The handshake's round trip, before any queue: what HyStart's delay is measured against.
    w.min_rtt_ns = static_cast<double>(std::max<TimeNs>(2 * f.latency, kNsPerUs));
    w.updated = now;
  }
  f.window = it->second;
  Window& w = windows_[it->second];
  w.flow = index;
  if (w.active++ > 0) return;
  // CA_EVENT_TX_START after an idle spell (cubictcp_cwnd_event): the epoch moves by the idle
  // time, so the window follows its cubic curve on; and with slow start after idle, a spell
  // longer than the RTO restarts the window (tcp_cwnd_restart: ssthresh kept at 3/4 of the
  // window or more, the window halved for every RTO of idle down to the initial window).
  if (w.idle_since >= 0) {
    const TimeNs idle = now - w.idle_since;
    if (w.epoch >= 0) w.epoch = std::min(now, w.epoch + idle);
    const TimeNs rto = kRtoMinNs + static_cast<TimeNs>(w.srtt_ns);
    if (tcp_windows_.restart_after_idle && idle > rto) {
      w.ssthresh = std::max(w.ssthresh, 0.75 * w.cwnd);
      const double restart = std::min(kInitialWindow, w.cwnd);
      double cwnd = w.cwnd;
      for (TimeNs d = idle - rto; d > 0 && cwnd > restart; d -= rto)
        cwnd = std::floor(cwnd / 2);
      w.cwnd = std::max(cwnd, restart);
    }
  }
  w.idle_since = -1;
  w.updated = now;
  w.growing = false;
}

void FlowNetwork::detach_window(Flow& f) {
  Window& w = windows_[f.window];
  const TimeNs now = engine_.now();
  grow(w, now);
  if (--w.active == 0) {
    w.idle_since = now;
    w.growing = false;
  }
  f.window = UINT32_MAX;
}

void FlowNetwork::grow(Window& w, TimeNs now) {
  const TimeNs from = w.updated;
  w.updated = now;
  if (!w.growing || now <= from || !(w.grow_rtt_ns > 0)) return;
  // The round trip it had while it filled the buffer (the queue's delay included).
  const double rtt_s = w.grow_rtt_ns * 1e-9;
  double dt = static_cast<double>(now - from) * 1e-9;
  // With the queue from the windows, growth is clocked by the ACKs, as Linux grows a window per
  // acknowledged segment (tcp_slow_start: +1 each; bictcp_update: at most +1/2 each, cnt >= 2):
  // the flow's rate between two solves is constant, so dt brings rate x dt / MSS of them. (With
  // a full buffer the round trip bounds it instead: the window doubles, or grows 1.5x, per RTT.)
  const bool clocked = tcp_windows_.queue_from_windows && w.ack_rate > 0;
  const double acks_per_s = w.ack_rate / kMss;
  if (w.cwnd < w.ssthresh) {
    // Slow start: the window doubles every round trip, up to ssthresh; HyStart ends it from 16
    // segments once the round trip has grown past its threshold (a standing queue).
    const bool delayed =
        tcp_windows_.hystart &&
        w.grow_rtt_ns >= w.min_rtt_ns + std::clamp(w.min_rtt_ns / 8, kHystartMinNs, kHystartMaxNs);
    const double until = delayed ? std::min(w.ssthresh, std::max(kHystartLow, w.cwnd)) : w.ssthresh;
    const double reached = clocked ? w.cwnd + acks_per_s * dt : w.cwnd * std::exp2(dt / rtt_s);
    if (reached < until) {
      w.cwnd = reached;
      return;
    }
    dt -= clocked ? (until - w.cwnd) / acks_per_s : std::log2(until / w.cwnd) * rtt_s;
    w.cwnd = until;
    if (delayed) w.ssthresh = w.cwnd;
    if (w.cwnd < w.ssthresh || dt <= 0) return;
  }
  // Congestion avoidance (bictcp_update): the cubic curve from the epoch's start, at most 1.5x
  // a round trip (cnt >= 2), and never under the Reno estimate.
  if (w.epoch < 0) {
    w.epoch = now - static_cast<TimeNs>(dt * 1e9);
    if (w.w_last_max <= w.cwnd) {
      w.k_s = 0;
      w.origin = w.cwnd;
    } else {
      w.k_s = std::cbrt((w.w_last_max - w.cwnd) / kCubicC);
      w.origin = w.w_last_max;
    }
    w.w_est = w.cwnd;
  }
  const double t = static_cast<double>(now - w.epoch) * 1e-9 + w.min_rtt_ns * 1e-9 - w.k_s;
  const double most = clocked ? w.cwnd + 0.5 * acks_per_s * dt : w.cwnd * std::pow(1.5, dt / rtt_s);
  const double cubic = std::min(w.origin + kCubicC * t * t * t, most);
  // tcp_friendliness: the Reno estimate gains kRenoAlpha for every window's worth acknowledged.
  w.w_est += clocked ? kRenoAlpha * acks_per_s * dt / w.cwnd : kRenoAlpha * dt / rtt_s;
  w.cwnd = std::max({w.cwnd, cubic, w.w_est});
}

void FlowNetwork::cut(Window& w) {
  // cubictcp_recalc_ssthresh, with fast convergence: a window cut again before it regained its
  // last maximum remembers less of it.
  w.epoch = -1;
  w.w_last_max = w.cwnd < w.w_last_max ? w.cwnd * (1 + kCubicBeta) / 2 : w.cwnd;
  w.cwnd = std::max(2.0, w.cwnd * kCubicBeta);
  w.ssthresh = w.cwnd;
  w.last_cut = engine_.now();
  ++w.cuts;
}

void FlowNetwork::set_queue_delays() {
  for (ResourceId r : comp_resources_)
    resources_[r].queue_delay_ns = static_cast<double>(resources_[r].queue_ns);
  if (!tcp_windows_.enabled) return;
  // Each window of the component grown up to now, at the round trip it had (the RTTs below are
  // the ones it will have from now on).
  const TimeNs now = engine_.now();
  for (std::uint32_t fi : comp_flows_) {
    if (flows_[fi].window != UINT32_MAX) grow(windows_[flows_[fi].window], now);
  }
  if (!tcp_windows_.queue_from_windows) return;
  // A fluid queue: the windows filling a buffer hold window_sum segments in flight; the path
  // carries capacity x base round trip of them, the buffer the rest, up to its size.
  sum_filling_windows();
  for (ResourceId r : comp_resources_) {
    Resource& res = resources_[r];
    if (!res.standing || window_count_[r] == 0 || window_missing_[r]) continue;
    const double held_ns = window_sum_[r] * kMss / res.capacity * 1e9 - window_base_[r];
    res.queue_delay_ns = std::clamp(held_ns, 0.0, static_cast<double>(res.queue_ns));
  }
}

void FlowNetwork::update_windows() {
  // 1. Each window's round trip (its windows were grown up to now by set_queue_delays).
  for (std::uint32_t fi : comp_flows_) {
    const Flow& f = flows_[fi];
    if (f.window == UINT32_MAX) continue;
    Window& w = windows_[f.window];
    w.srtt_ns = f.rtt_ns;
    w.min_rtt_ns = std::min(w.min_rtt_ns, f.rtt_ns);
  }
  // 2. The weights' factors: a filling flow's window over the mean window of the flows filling
  // its (first) standing buffer; 1 for the rest, so equal windows give the plain kTcp shares.
  sum_filling_windows();
  window_factor_.assign(comp_flows_.size(), 1.0);
  window_capped_.assign(comp_flows_.size(), false);
  std::vector<bool>& set = window_factor_set_;
  set.assign(comp_flows_.size(), false);
  for (const auto& [fi, r] : filling_pairs_) {
    const Flow& f = flows_[fi];
    if (f.window == UINT32_MAX || set[f.pos]) continue;
    set[f.pos] = true;
    const double mean = window_sum_[r] / window_count_[r];
    window_factor_[f.pos] = windows_[f.window].cwnd / mean;
  }
}

void FlowNetwork::sum_filling_windows() {
  if (window_sum_.size() < resources_.size()) {
    window_sum_.resize(resources_.size());
    window_count_.resize(resources_.size());
    window_base_.resize(resources_.size());
    window_missing_.resize(resources_.size());
  }
  for (ResourceId r : comp_resources_) {
    window_sum_[r] = 0;
    window_count_[r] = 0;
    window_base_[r] = std::numeric_limits<double>::infinity();
    window_missing_[r] = false;
  }
  for (const auto& [fi, r] : filling_pairs_) {
    const Flow& f = flows_[fi];
    if (f.window == UINT32_MAX) {
      window_missing_[r] = true;
      continue;
    }
    window_sum_[r] += windows_[f.window].cwnd;
    ++window_count_[r];
    window_base_[r] = std::min(window_base_[r], 2.0 * static_cast<double>(f.latency));
  }
}

void FlowNetwork::note_growing() {
  // A standing buffer overflows when the windows of the flows filling it hold more than its
  // depth and the path's own round trip can: a drop-tail queue then drops from every sender
  // filling it, and each cuts its window (at most once a round trip); the next solve shares by
  // the cut windows, as a sender learns of its loss a round trip later.
  const TimeNs now = engine_.now();
  sum_filling_windows();
  for (const auto& [fi, r] : filling_pairs_) {
    const Flow& f = flows_[fi];
    if (f.window == UINT32_MAX) continue;
    const Resource& res = resources_[r];
    const double holds =
        res.capacity * (static_cast<double>(res.queue_ns) + window_base_[r]) * 1e-9 / kMss;
    Window& w = windows_[f.window];
    if (window_sum_[r] > holds && (w.last_cut < 0 || now - w.last_cut >= f.rtt_ns)) cut(w);
  }
  // A window grows while it limits its sender: while its flow fills a standing buffer. Until the
  // next solve, a tick every round trip grows the windows and re-solves.
  double next_ns = std::numeric_limits<double>::infinity();
  for (std::uint32_t fi : comp_flows_) {
    const Flow& f = flows_[fi];
    if (f.window != UINT32_MAX) windows_[f.window].growing = false;
  }
  auto grows = [&](const Flow& f) {
    Window& w = windows_[f.window];
    w.growing = true;
    w.grow_rtt_ns = f.rtt_ns;
    w.ack_rate = new_rates_[f.pos];
    next_ns = std::min(next_ns, f.rtt_ns);
  };
  // (Only where its round trip holds the standing queue it fills: a buffer found standing by
  // the weighted solve alone, not by the unit one the RTTs came from, waits for the next solve.)
  for (const auto& [fi, r] : filling_pairs_) {
    if (flows_[fi].window != UINT32_MAX && flows_[fi].data_queue) grows(flows_[fi]);
  }
  // And a flow held at its window's rate (above) grows it.
  for (std::uint32_t fi : comp_flows_) {
    const Flow& f = flows_[fi];
    if (window_capped_[f.pos] && new_rates_[f.pos] >= f.cap * (1 - 1e-9)) grows(f);
  }
  if (window_tick_pending_ || !std::isfinite(next_ns)) return;
  window_tick_pending_ = true;
  engine_.schedule_after(std::max<TimeNs>(static_cast<TimeNs>(next_ns), kNsPerMs),
                         [this] { on_window_tick(); });
}

void FlowNetwork::on_window_tick() {
  window_tick_pending_ = false;
  bool any = false;
  for (std::uint32_t i = 0; i < windows_.size(); ++i) {
    const Window& w = windows_[i];
    if (!w.growing || w.active == 0) continue;
    const Flow& f = flows_[w.flow];
    if (!f.in_use || !f.transmitting || f.window != i) continue;
    dirty_.insert(dirty_.end(), f.resources.begin(), f.resources.end());
    any = true;
  }
  if (any) schedule_resolve();
}

void FlowNetwork::apply_rate(std::uint32_t fi, double new_rate) {
  Flow& f = flows_[fi];
  if (new_rate == f.rate && f.heap_pos != kNotQueued) return;
  settle(f);
  f.rate = new_rate;
  ++flows_rerated_;
  f.drain_at = (f.rate > 0 && std::isfinite(f.remaining))
                   ? engine_.now() + seconds_to_ns_ceil(f.remaining / f.rate)
                   : kTimeNever;
  drain_update(fi);
}

void FlowNetwork::reallocate_bottleneck() {
  ++stamp_;
  for (ResourceId r : dirty_) {
    for (std::uint32_t fi : resources_[r].flows) {
      Flow& f = flows_[fi];
      if (f.stamp == stamp_) continue;
      f.stamp = stamp_;
      double rate = f.cap;
      for (ResourceId q : f.resources) {
        const Resource& res = resources_[q];
        rate = std::min(rate, res.capacity / static_cast<double>(res.flows.size()));
      }
      apply_rate(fi, rate);
    }
  }
}

bool FlowNetwork::repair_locally() {
  // Max-min fairness holds iff every flow has a bottleneck: a saturated resource on its path
  // where no flow has a higher rate (or its own cap, reached). Starting from the flows on the
  // changed resources, re-solve that set with every other flow's rate held (fill_component on
  // the capacity they leave), then check the condition where rates moved: a re-solved flow
  // whose bottleneck holds a faster held flow, or a held flow whose bottleneck no longer holds,
  // joins the set, and the set is solved again. When nothing joins, every flow has a
  // bottleneck and the rates are the max-min ones (the differential test checks them against
  // MaxMinSolver). A change that spreads too far gives up (false) for the component solve.
  constexpr double kTol = 1e-10;
  constexpr int kMaxRounds = 6;
  // The cheaper way wins: where repairs spread (a symmetric collective on one switch, whose
  // every flow shares the level that moves) they cost more than the component solve. Both
  // costs (flow entries scanned) are tracked as moving averages; while repairs cost more, only
  // every 16th re-solve tries one, to follow the traffic as it changes. Either way the rates
  // are the same; this only picks the work.
  if (repair_work_ > solve_work_ && (++repair_trial_ & 15) != 0) return false;
  double work = 0;
  auto give_up = [&] {
    repair_work_ += (work - repair_work_) / 16;
    return false;
  };
  ++stamp_;
  comp_flows_.clear();
  comp_resources_.clear();
  auto add_resource = [&](ResourceId r) {
    if (resources_[r].stamp == stamp_) return;
    resources_[r].stamp = stamp_;
    comp_resources_.push_back(r);
  };
  // Flows below the restart level keep their rates (pair_changes): they are never re-solved.
  const double restart = restart_level_ * (1 - 1e-9);
  auto add_flow = [&](std::uint32_t fi) {
    Flow& f = flows_[fi];
    if (f.stamp == stamp_ || (!f.fresh && f.rate < restart)) return;
    f.stamp = stamp_;
    comp_flows_.push_back(fi);
    for (ResourceId r : f.resources)
      add_resource(r);
  };
  for (ResourceId r : dirty_) {
    add_resource(r);
    for (std::uint32_t fi : resources_[r].flows)
      add_flow(fi);
  }
  auto rate_now = [&](std::uint32_t fi) {
    const Flow& g = flows_[fi];
    return g.stamp == stamp_ ? new_rates_[g.pos] : g.rate;
  };
  // Scratch after the solve: remaining = the resource's load, unfrozen_weight = its top rate.
  auto bottleneck_at = [&](std::uint32_t fi, ResourceId r) {
    const Resource& res = resources_[r];
    return res.remaining >= res.capacity * (1 - kTol) &&
           rate_now(fi) >= res.unfrozen_weight * (1 - kTol);
  };
  for (int round = 0;; ++round) {
    // A set that is a large share of every active flow costs more re-solved round by round
    // than the component solve does.
    if (round == kMaxRounds || comp_flows_.size() * 4 > active_count_) return give_up();
    new_rates_.assign(comp_flows_.size(), 0.0);
    for (std::size_t i = 0; i < comp_flows_.size(); ++i) {
      Flow& f = flows_[comp_flows_[i]];
      f.pos = static_cast<std::uint32_t>(i);
      f.weight = 1;
    }
    fill_component();
    for (ResourceId r : comp_resources_) {
      Resource& res = resources_[r];
      // The solve's scan and this one, weighted by their cost per entry measured against the
      // component solve's (perf, MULTI_BINARY_TREE_STAR on 32 VMs: about 3x).
      work += 6.0 * static_cast<double>(res.flows.size());
      res.remaining = 0;
      res.unfrozen_weight = 0;
      for (std::uint32_t fi : res.flows) {
        const double x = rate_now(fi);
        res.remaining += x;
        res.unfrozen_weight = std::max(res.unfrozen_weight, x);
      }
    }
    const std::size_t flows_before = comp_flows_.size();
    const std::size_t resources_before = comp_resources_.size();
    for (std::size_t i = 0; i < flows_before; ++i) {
      const std::uint32_t fi = comp_flows_[i];
      const ResourceId b = flows_[fi].bottleneck;
      if (b == UINT32_MAX || bottleneck_at(fi, b)) continue;
      for (std::uint32_t g : resources_[b].flows)
        add_flow(g);  // a held flow is faster there: re-solve them all
    }
    for (std::size_t k = 0; k < resources_before; ++k) {
      for (std::uint32_t g : resources_[comp_resources_[k]].flows) {
        Flow& held = flows_[g];
        if (held.stamp == stamp_ || held.bottleneck == UINT32_MAX) continue;
        if (resources_[held.bottleneck].stamp != stamp_) continue;  // untouched: still holds
        if (bottleneck_at(g, held.bottleneck)) continue;
        bool found = false;
        for (ResourceId q : held.resources) {
          if (resources_[q].stamp == stamp_ && bottleneck_at(g, q)) {
            held.bottleneck = q;
            found = true;
            break;
          }
        }
        if (!found) add_flow(g);
      }
    }
    if (comp_flows_.size() == flows_before) break;
  }
  repair_work_ += (work - repair_work_) / 16;
  ++repairs_;
  for (std::size_t i = 0; i < comp_flows_.size(); ++i)
    apply_rate(comp_flows_[i], new_rates_[i]);
  return true;
}

void FlowNetwork::reallocate() {
  if (engine_.next_time() == engine_.now()) {
    // Other events of this instant are still queued (a connection's next message may start
    // in one): solve once after them, when the instant's changes can pair up.
    engine_.schedule_after(0, [this] { reallocate(); });
    return;
  }
  resolve_pending_ = false;
  pair_changes();
  if (dirty_.empty()) return;  // every change was paired: no rate moves
  ++solves_;
  if (sharing_ == Sharing::kBottleneck) {
    reallocate_bottleneck();
  } else if (restart_level_ == 0 || !repair_locally()) {  // 0 under TCP sharing (pair_changes)
    solve_components();
  }
  for (std::uint32_t fi : fresh_)
    flows_[fi].fresh = false;
  fresh_.clear();
  dirty_.clear();
}

void FlowNetwork::solve_components() {
  // 1. The component reachable from the touched resources through shared flows.
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
  // Under Sharing::kTcp a buffer's queue also caps the flows whose ACKs cross it, so those
  // links join components too.
  const bool ack_links = sharing_ == Sharing::kTcp;
  auto enqueue = [&](ResourceId r2) {
    if (resources_[r2].stamp != stamp_) {
      resources_[r2].stamp = stamp_;
      queue_.push_back(r2);
    }
  };
  // Flows below the restart level keep their rates and do not join the component.
  const double restart = restart_level_ * (1 - 1e-9);
  auto visit = [&](std::uint32_t fi) {
    Flow& f = flows_[fi];
    if (f.stamp == stamp_) return;
    if (!f.fresh && f.rate < restart) return;
    f.stamp = stamp_;
    comp_flows_.push_back(fi);
    for (ResourceId r2 : f.resources)
      enqueue(r2);
    if (ack_links) {
      for (ResourceId r2 : f.ack_resources)
        enqueue(r2);
    }
  };
  for (std::size_t qi = 0; qi < queue_.size(); ++qi) {
    const ResourceId r = queue_[qi];
    comp_resources_.push_back(r);
    for (std::uint32_t fi : resources_[r].flows)
      visit(fi);
    if (ack_links) {
      for (std::uint32_t fi : resources_[r].ack_flows)
        visit(fi);
    }
  }
  for (ResourceId r : comp_resources_)
    resources_[r].standing = false;
  if (comp_flows_.empty()) return;

  if (sharing_ == Sharing::kMaxMin) {  // what repair_locally weighs itself against
    double work = 0;
    for (ResourceId r : comp_resources_)
      work += 2.0 * static_cast<double>(resources_[r].flows.size());  // the search's and solve's
    solve_work_ += (work - solve_work_) / 16;
  }

  // 2. Solve.
  new_rates_.assign(comp_flows_.size(), 0.0);
  for (std::size_t i = 0; i < comp_flows_.size(); ++i) {
    flows_[comp_flows_[i]].pos = static_cast<std::uint32_t>(i);
  }
  if (sharing_ == Sharing::kTcp) {
    solve_tcp();
  } else {
    for (std::uint32_t fi : comp_flows_)
      flows_[fi].weight = 1;
    fill_component();
  }

  // 3. Apply: settle bytes at the old rate, then move the flows whose rate changed.
  for (std::size_t i = 0; i < comp_flows_.size(); ++i)
    apply_rate(comp_flows_[i], new_rates_[i]);
}

}  // namespace adaptsim::net
