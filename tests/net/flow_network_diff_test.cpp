// Differential test: FlowNetwork's incremental re-solves against the reference MaxMinSolver.
//
// Thousands of random networks and flow histories (flows starting, draining, stopped, capacity
// changes, and chains of identical back-to-back messages, the pattern whose re-solves are
// elided); at random instants every transmitting flow's rate must equal the rate the reference
// solver gives the same set of flows from scratch, within 1e-9 relative.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "sim/core/event_engine.h"
#include "sim/core/rng.h"
#include "sim/net/flow_network.h"
#include "sim/net/maxmin.h"

#include <doctest/doctest.h>

using adaptsim::EventEngine;
using adaptsim::Rng;
using adaptsim::TimeNs;
using adaptsim::net::FlowNetwork;
using adaptsim::net::MaxMinSolver;
using adaptsim::net::ResourceId;
using adaptsim::net::Sharing;

namespace {

struct Tracked {
  FlowNetwork::FlowId id;
  std::vector<ResourceId> resources;
  double cap = MaxMinSolver::kUncapped;
  bool infinite = false;
  bool transmitting = true;
};

class Trial {
 public:
  Trial(std::uint64_t seed, Sharing sharing, int max_resources)
      : rng_(seed), net_(engine_, sharing), same_latency_(sharing == Sharing::kTcp) {
    const int n_res = 1 + static_cast<int>(rng_.below(static_cast<std::uint64_t>(max_resources)));
    // A few distinct capacities, so that ties between resources' levels are common.
    const double palette[] = {1e8, 2.5e8, 1e9, 1e9, 4e9, 1.25e10};
    for (int r = 0; r < n_res; ++r) {
      const double cap = rng_.below(3) == 0 ? rng_.uniform(1e8, 1e10) : palette[rng_.below(6)];
      capacity_.push_back(cap);
      net_.add_resource(cap, "r" + std::to_string(r));
    }
  }

  // Runs the history; returns the number of rate comparisons made.
  int run() {
    TimeNs t = 0;
    int checks = 0;
    const int instants = 20 + static_cast<int>(rng_.below(40));
    for (int i = 0; i < instants; ++i) {
      if (rng_.below(4) != 0) {
        engine_.schedule_at(t, [this] { act(); });
      }
      engine_.run_until(t);
      checks += check();
      t += 1 + static_cast<TimeNs>(rng_.below(rng_.below(2) == 0 ? 2'000'000 : 20'000));
    }
    return checks;
  }
  std::uint64_t paired() const { return net_.flows_paired(); }
  std::uint64_t repairs() const { return net_.repairs(); }

 private:
  std::vector<ResourceId> random_path() {
    const std::size_t n_res = capacity_.size();
    const std::size_t len = 1 + rng_.below(std::min<std::size_t>(4, n_res));
    std::vector<ResourceId> path;
    while (path.size() < len) {
      const auto r = static_cast<ResourceId>(rng_.below(n_res));
      if (std::find(path.begin(), path.end(), r) == path.end()) path.push_back(r);
    }
    return path;
  }

  // Starts a flow; `chain` more identical messages follow it back to back (each starts when
  // the previous one's last byte left), as a connection's queued chunks do.
  void start(std::vector<ResourceId> path, double bytes, double cap, int chain) {
    auto tracked = std::make_shared<Tracked>();
    tracked->resources = path;
    tracked->cap = cap;
    tracked->infinite = !std::isfinite(bytes);
    FlowNetwork::FlowSpec spec;
    spec.resources = std::move(path);
    spec.bytes = bytes;
    // Under Sharing::kTcp rates are weighted by 1 / RTT: equal latencies make it max-min.
    spec.latency = same_latency_ ? 5000 : static_cast<TimeNs>(rng_.below(3) * 5000);
    spec.rate_cap_Bps = cap;
    Tracked* raw = tracked.get();
    spec.on_transmitted = [this, raw, bytes, cap, chain] {
      raw->transmitting = false;
      if (chain > 0) start(raw->resources, bytes, cap, chain - 1);
    };
    tracked->id = net_.start(std::move(spec));
    flows_.push_back(std::move(tracked));
  }

  // Stops a random background flow; null if none runs.
  const Tracked* stop_background() {
    std::vector<Tracked*> bg;
    for (auto& f : flows_) {
      if (f->infinite && f->transmitting) bg.push_back(f.get());
    }
    if (bg.empty()) return nullptr;
    Tracked* f = bg[rng_.below(bg.size())];
    CHECK(net_.stop(f->id));
    f->transmitting = false;
    return f;
  }

  void act() {
    const int actions = 1 + static_cast<int>(rng_.below(capacity_.size() > 12 ? 24 : 6));
    for (int a = 0; a < actions; ++a) {
      switch (rng_.below(10)) {
        case 0:  // stop a random background flow
          stop_background();
          break;
        case 1: {  // a capacity change
          const auto r = static_cast<ResourceId>(rng_.below(capacity_.size()));
          capacity_[r] = rng_.uniform(1e8, 1e10);
          net_.set_capacity(r, capacity_[r]);
          break;
        }
        case 2:  // a background flow
          start(random_path(), FlowNetwork::kInfiniteBytes, random_cap(), 0);
          break;
        case 3:  // a stopped flow replaced at once by an identical one
          if (const Tracked* f = stop_background()) {
            start(f->resources, FlowNetwork::kInfiniteBytes, f->cap, 0);
          }
          break;
        default: {  // a message, often a chain of identical ones
          const double bytes =
              rng_.below(4) == 0 ? 1e3 * (1 + rng_.below(10)) : rng_.uniform(1e4, 2e7);
          const int chain = rng_.below(2) == 0 ? static_cast<int>(rng_.below(20)) : 0;
          start(random_path(), bytes, random_cap(), chain);
          break;
        }
      }
    }
  }

  double random_cap() {
    return rng_.below(4) == 0 ? rng_.uniform(5e7, 5e9) : MaxMinSolver::kUncapped;
  }

  int check() {
    std::vector<const Tracked*> active;
    for (const auto& f : flows_) {
      if (f->transmitting) active.push_back(f.get());
    }
    std::vector<std::span<const std::uint32_t>> paths;
    std::vector<double> caps, expected(active.size());
    for (const Tracked* f : active) {
      paths.emplace_back(f->resources);
      caps.push_back(f->cap);
    }
    MaxMinSolver solver;
    solver.solve(capacity_, paths, caps, expected);
    int checks = 0;
    for (std::size_t i = 0; i < active.size(); ++i) {
      const double got = net_.rate(active[i]->id);
      const double tol = 1e-9 * std::max(std::abs(expected[i]), 1.0);
      if (std::abs(got - expected[i]) > tol && !failed_) {
        failed_ = true;  // the first mismatch of a history is enough to read
        FAIL_CHECK("flow " << i << " of " << active.size() << " at t=" << engine_.now() << ": rate "
                           << got << ", reference " << expected[i]);
      }
      ++checks;
    }
    return checks;
  }

  Rng rng_;
  EventEngine engine_;
  FlowNetwork net_;
  bool same_latency_;
  bool failed_ = false;
  std::vector<double> capacity_;
  std::vector<std::shared_ptr<Tracked>> flows_;
};

void run_trials(Sharing sharing, std::uint64_t base_seed, int trials, int max_resources = 12) {
  long checks = 0;
  std::uint64_t paired = 0, repairs = 0;
  for (int i = 0; i < trials; ++i) {
    CAPTURE(i);
    Trial trial(adaptsim::mix64(base_seed + static_cast<std::uint64_t>(i)), sharing, max_resources);
    checks += trial.run();
    paired += trial.paired();
    repairs += trial.repairs();
  }
  MESSAGE(checks << " rate comparisons over " << trials << " random histories, " << paired
                 << " flows paired with an identical ended one, " << repairs << " local repairs");
  CHECK(checks > trials);  // the histories really had transmitting flows to compare
  CHECK(paired > static_cast<std::uint64_t>(trials));  // and the elided re-solves were exercised
  if (sharing == Sharing::kMaxMin) CHECK(repairs > static_cast<std::uint64_t>(trials));
}

}  // namespace

TEST_CASE("max-min sharing: incremental re-solves give the reference solver's rates") {
  run_trials(Sharing::kMaxMin, 1, 3000);
}

TEST_CASE("max-min sharing on larger networks: local repairs give the reference solver's rates") {
  run_trials(Sharing::kMaxMin, 50'000, 300, 48);
}

TEST_CASE("TCP sharing without buffers is max-min: the same rates as the reference solver") {
  run_trials(Sharing::kTcp, 100'000, 1000);
}
