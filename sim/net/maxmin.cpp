#include "sim/net/maxmin.h"

#include <algorithm>
#include <cmath>

namespace adaptsim::net {
namespace {

bool heap_later(const auto& a, const auto& b) {
  return a.share != b.share ? a.share > b.share : a.resource > b.resource;
}

}  // namespace

void MaxMinSolver::solve(std::span<const double> capacity,
                         std::span<const std::span<const std::uint32_t>> flow_resources,
                         std::span<const double> flow_cap, std::span<double> rates) {
  const std::size_t n_flows = flow_resources.size();
  const std::size_t n_real = capacity.size();
  // Capped flows get a private resource after the real ones.
  std::size_t n_res = n_real;
  for (std::size_t f = 0; f < n_flows; ++f) {
    if (flow_cap[f] != kUncapped) ++n_res;
  }

  remaining_.assign(n_res, 0.0);
  unfrozen_.assign(n_res, 0);
  version_.assign(n_res, 0);
  offsets_.assign(n_res + 1, 0);
  frozen_.assign(n_flows, 0);
  std::copy(capacity.begin(), capacity.end(), remaining_.begin());

  // Count members per resource, then fill the CSR lists.
  std::size_t next_private = n_real;
  private_of_.assign(n_flows, UINT32_MAX);
  auto& private_of = private_of_;
  for (std::size_t f = 0; f < n_flows; ++f) {
    for (std::uint32_t r : flow_resources[f])
      ++offsets_[r + 1];
    if (flow_cap[f] != kUncapped) {
      private_of[f] = static_cast<std::uint32_t>(next_private);
      remaining_[next_private] = flow_cap[f];
      ++offsets_[next_private + 1];
      ++next_private;
    }
  }
  for (std::size_t r = 0; r < n_res; ++r)
    offsets_[r + 1] += offsets_[r];
  members_.assign(offsets_[n_res], 0);
  fill_.assign(offsets_.begin(), offsets_.end() - 1);
  auto& fill = fill_;
  for (std::size_t f = 0; f < n_flows; ++f) {
    for (std::uint32_t r : flow_resources[f])
      members_[fill[r]++] = static_cast<std::uint32_t>(f);
    if (private_of[f] != UINT32_MAX)
      members_[fill[private_of[f]]++] = static_cast<std::uint32_t>(f);
  }

  heap_.clear();
  std::size_t left = n_flows;
  for (std::size_t r = 0; r < n_res; ++r) {
    unfrozen_[r] = offsets_[r + 1] - offsets_[r];
    if (unfrozen_[r] > 0) {
      heap_.push_back({remaining_[r] / unfrozen_[r], static_cast<std::uint32_t>(r), 0});
    }
  }
  std::make_heap(heap_.begin(), heap_.end(), heap_later<HeapItem, HeapItem>);

  // Flows that cross nothing and have no cap are unconstrained.
  for (std::size_t f = 0; f < n_flows; ++f) {
    if (flow_resources[f].empty() && private_of[f] == UINT32_MAX) {
      rates[f] = std::numeric_limits<double>::infinity();
      frozen_[f] = 1;
      --left;
    }
  }

  auto freeze_flow = [&](std::uint32_t f, double rate, std::uint32_t bottleneck) {
    frozen_[f] = 1;
    rates[f] = rate;
    --left;
    auto touch = [&](std::uint32_t r) {
      if (r == bottleneck) return;
      remaining_[r] -= rate;
      if (remaining_[r] < 0) remaining_[r] = 0;  // rounding
      --unfrozen_[r];
      ++version_[r];
      if (unfrozen_[r] > 0) {
        heap_.push_back({remaining_[r] / unfrozen_[r], r, version_[r]});
        std::push_heap(heap_.begin(), heap_.end(), heap_later<HeapItem, HeapItem>);
      }
    };
    for (std::uint32_t r : flow_resources[f])
      touch(r);
    if (private_of[f] != UINT32_MAX) touch(private_of[f]);
  };

  while (left > 0 && !heap_.empty()) {
    std::pop_heap(heap_.begin(), heap_.end(), heap_later<HeapItem, HeapItem>);
    const HeapItem item = heap_.back();
    heap_.pop_back();
    const std::uint32_t r = item.resource;
    if (item.version != version_[r] || unfrozen_[r] == 0) continue;  // stale entry
    const double share = std::max(0.0, remaining_[r] / unfrozen_[r]);
    for (std::uint32_t i = offsets_[r]; i < offsets_[r + 1]; ++i) {
      const std::uint32_t f = members_[i];
      if (!frozen_[f]) freeze_flow(f, share, r);
    }
    remaining_[r] = 0;
    unfrozen_[r] = 0;
    ++version_[r];
  }
}

}  // namespace adaptsim::net
