// Link statistics (sim/net/link_stats.h) against closed forms: bytes, busy time, peak and mean
// utilization and time bins of flows whose rates the max-min model fixes by hand.

#include "sim/net/link_stats.h"

#include <doctest/doctest.h>

#include "sim/net/flow_network.h"

using adaptsim::EventEngine;
using adaptsim::kNsPerMs;
using adaptsim::TimeNs;
using adaptsim::net::FlowNetwork;
using adaptsim::net::LinkRecorder;
using adaptsim::net::LinkUse;

namespace {

FlowNetwork::FlowSpec flow(std::vector<adaptsim::net::ResourceId> rs, double bytes) {
  FlowNetwork::FlowSpec s;
  s.resources = std::move(rs);
  s.bytes = bytes;
  return s;
}

}  // namespace

TEST_CASE("link statistics: two flows sharing a link, then one alone, then idle") {
  // Link a: 1e9 B/s. Flow 1: 1e6 B at t = 0; flow 2: 3e6 B at t = 0, also across link b
  // (4e9 B/s). Both run at 5e8 B/s until flow 1 is done at 2 ms (1e6 B each); flow 2 then has
  // 2e6 B left alone at 1e9 B/s: done at 4 ms. Flow 3, 1e6 B on a, starts at 6 ms: done at 7 ms.
  EventEngine e;
  FlowNetwork net(e);
  const auto a = net.add_resource(1e9, "a");
  const auto b = net.add_resource(4e9, "b");
  LinkRecorder rec(kNsPerMs);
  net.set_recorder(&rec);
  net.start(flow({a}, 1e6));
  net.start(flow({a, b}, 3e6));
  e.schedule_at(6 * kNsPerMs, [&] { net.start(flow({a}, 1e6)); });
  e.run();
  REQUIRE(e.now() == 7 * kNsPerMs);
  const std::vector<LinkUse> use = rec.report(net, 8 * kNsPerMs);
  REQUIRE(use.size() == 2);
  const LinkUse& la = use[0];
  CHECK(la.name == "a");
  CHECK(la.capacity_Bps == 1e9);
  CHECK(la.bytes == doctest::Approx(5e6));
  CHECK(la.bytes == doctest::Approx(net.bytes_carried(a)));
  CHECK(la.busy_s == doctest::Approx(5e-3));  // [0, 4) and [6, 7) ms
  CHECK(la.peak_utilization == doctest::Approx(1.0));
  CHECK(la.mean_utilization == doctest::Approx(5e6 / (1e9 * 8e-3)));
  // 1 ms bins over [0, 8): 1e6 B in each busy millisecond.
  REQUIRE(la.bin_bytes.size() == 8);
  const double want[] = {1e6, 1e6, 1e6, 1e6, 0, 0, 1e6, 0};
  for (std::size_t k = 0; k < 8; ++k) {
    INFO("bin " << k);
    CHECK(la.bin_bytes[k] == doctest::Approx(want[k]).epsilon(1e-9));
  }
  const LinkUse& lb = use[1];
  CHECK(lb.bytes == doctest::Approx(3e6));
  CHECK(lb.busy_s == doctest::Approx(4e-3));
  CHECK(lb.peak_utilization == doctest::Approx(0.25));  // 1e9 of 4e9 B/s, after 2 ms
  CHECK(lb.bin_bytes[0] == doctest::Approx(5e5));
  CHECK(lb.bin_bytes[3] == doctest::Approx(1e6));
}

TEST_CASE("link statistics: bins split an interval at their edges, and nothing recorded is zero") {
  // 1.5e6 B at 1e9 B/s from 0.25 ms: [0.25, 1.75) ms across 0.5 ms bins.
  EventEngine e;
  FlowNetwork net(e);
  const auto a = net.add_resource(1e9, "a");
  net.add_resource(1e9, "idle");  // resource 1: never crossed
  LinkRecorder rec(kNsPerMs / 2);
  net.set_recorder(&rec);
  e.schedule_at(kNsPerMs / 4, [&] { net.start(flow({a}, 1.5e6)); });
  e.run();
  const std::vector<LinkUse> use = rec.report(net, e.now());
  REQUIRE(use[0].bin_bytes.size() == 4);
  CHECK(use[0].bin_bytes[0] == doctest::Approx(2.5e5));
  CHECK(use[0].bin_bytes[1] == doctest::Approx(5e5));
  CHECK(use[0].bin_bytes[2] == doctest::Approx(5e5));
  CHECK(use[0].bin_bytes[3] == doctest::Approx(2.5e5));
  CHECK(use[1].bytes == 0);
  CHECK(use[1].busy_s == 0);
  CHECK(use[1].peak_utilization == 0);
  CHECK_THROWS_AS(LinkRecorder(0), std::invalid_argument);
}
