// Congestion windows per connection under Sharing::kTcp (net::TcpWindowOptions): shares of a
// standing buffer by window, growth only while a connection fills one, overflow cuts, the restart
// after idle, and a paced flow held at window / RTT behind a standing queue.

#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "sim/core/event_engine.h"
#include "sim/net/flow_network.h"

using adaptsim::EventEngine;
using adaptsim::TimeNs;
using adaptsim::net::FlowNetwork;
using adaptsim::net::ResourceId;
using adaptsim::net::Sharing;
using adaptsim::net::TcpWindowOptions;

namespace {

constexpr double kMss = 1448;
constexpr TimeNs kLatency = 5'000;     // one way
constexpr TimeNs kQueue = 10'000'000;  // the port's drop-tail buffer, 10 ms
constexpr TimeNs kMs = 1'000'000;

FlowNetwork::FlowSpec flow(std::vector<ResourceId> path, double bytes, std::uint64_t connection,
                           FlowNetwork::Callback done = nullptr) {
  FlowNetwork::FlowSpec s;
  s.resources = std::move(path);
  s.bytes = bytes;
  s.latency = kLatency;
  s.connection = connection;
  s.on_complete = std::move(done);
  return s;
}

TcpWindowOptions windows(bool restart_after_idle = true, bool hystart = true) {
  TcpWindowOptions o;
  o.enabled = true;
  o.restart_after_idle = restart_after_idle;
  o.hystart = hystart;
  return o;
}

}  // namespace

TEST_CASE(
    "tcp windows: only under tcp sharing; a connection that never sent has its initial window") {
  EventEngine e;
  FlowNetwork maxmin(e, Sharing::kMaxMin);
  CHECK_THROWS_AS(maxmin.set_tcp_windows(windows()), std::invalid_argument);
  TcpWindowOptions off;
  maxmin.set_tcp_windows(off);  // off is fine anywhere
  FlowNetwork net(e, Sharing::kTcp);
  net.set_tcp_windows(windows());
  CHECK(net.window_segments(42) == 10);
  CHECK(net.window_cuts(42) == 0);
}

TEST_CASE("tcp windows: equal windows divide a filled buffer as plain tcp sharing does") {
  // A fan-in of two fresh connections into one buffered port (as "tcp sharing: a fan-in fills
  // the receiver's buffer"): the same windows, the same shares, the same completion.
  for (bool on : {false, true}) {
    EventEngine e;
    FlowNetwork net(e, Sharing::kTcp);
    if (on) net.set_tcp_windows(windows());
    const ResourceId a = net.add_resource(1e9, "a->sw");
    const ResourceId b = net.add_resource(1e9, "b->sw");
    const ResourceId port = net.add_resource(1e9, "sw->c");
    net.set_queue_delay(port, kQueue);
    TimeNs done_a = -1, done_b = -1;
    net.start(flow({a, port}, 1e6, 1, [&] { done_a = e.now(); }));
    net.start(flow({b, port}, 1e6, 2, [&] { done_b = e.now(); }));
    e.run();
    CAPTURE(on);
    CHECK(done_a == 2'000'000 + kLatency);
    CHECK(done_b == 2'000'000 + kLatency);
  }
}

TEST_CASE("tcp windows: a backlogged connection grows its window and takes more of the buffer") {
  // X (egress 4e9) sends without end into port P (1e9, 10 ms buffer): it fills P, so its window
  // grows. After 2 s a fresh connection from Y joins: P's rate splits in proportion to the two
  // windows (equal RTTs), so the newcomer gets less than half. Without windows: half each.
  for (bool on : {false, true}) {
    EventEngine e;
    FlowNetwork net(e, Sharing::kTcp);
    if (on) net.set_tcp_windows(windows());
    const ResourceId x = net.add_resource(4e9, "x->sw");
    const ResourceId y = net.add_resource(4e9, "y->sw");
    const ResourceId port = net.add_resource(1e9, "sw->p");
    net.set_queue_delay(port, kQueue);
    const auto bulk = net.start(flow({x, port}, FlowNetwork::kInfiniteBytes, 1));
    e.run_until(2'000 * kMs);
    const auto fresh = net.start(flow({y, port}, 1e12, 2));
    e.run_until(2'000 * kMs + 1);
    const double rb = net.rate(bulk), rf = net.rate(fresh);
    CAPTURE(on);
    CHECK(rb + rf == doctest::Approx(1e9).epsilon(1e-9));
    if (!on) {
      CHECK(rf == doctest::Approx(rb).epsilon(1e-12));
    } else {
      const double wb = net.window_segments(1), wf = net.window_segments(2);
      CHECK(wf == 10);
      // Two seconds against a 10 ms queue: HyStart's exit at 16 segments, then CUBIC's
      // Reno-friendly growth (0.53 segments a round trip, 200 round trips) outpaces its cubic term
      // here.
      CHECK(wb > 5 * wf);
      CHECK(rf / rb == doctest::Approx(wf / wb).epsilon(1e-9));
    }
    net.stop(bulk);
    net.stop(fresh);
  }
}

TEST_CASE("tcp windows: a buffer whose windows outgrow it cuts them, and they regrow") {
  // One backlogged connection into a port with a 1 ms buffer: 1e9 B/s x (1 ms + 10 us) holds
  // 697.5 segments. CUBIC grows the window past that, the overflow cuts it to 0.7 of itself
  // (tcp_cubic.c's beta 717/1024), and it grows back: cut again and again, never far above.
  EventEngine e;
  FlowNetwork net(e, Sharing::kTcp);
  net.set_tcp_windows(windows());
  const ResourceId x = net.add_resource(4e9, "x->sw");
  const ResourceId port = net.add_resource(1e9, "sw->p");
  net.set_queue_delay(port, kMs);
  const auto bulk = net.start(flow({x, port}, FlowNetwork::kInfiniteBytes, 7));
  const double holds = 1e9 * (1e-3 + 2 * 5e-6) / kMss;
  double most = 0;
  for (int i = 1; i <= 600; ++i) {
    e.run_until(i * 100 * kMs);
    most = std::max(most, net.window_segments(7));
  }
  CHECK(net.window_cuts(7) >= 3);
  CHECK(most > holds * 0.7);
  CHECK(most < holds * 1.5 * 1.01);  // at most one round trip's growth past it (1.5x, cnt >= 2)
  CHECK(net.rate(bulk) == doctest::Approx(1e9).epsilon(1e-9));  // it fills the port throughout
  net.stop(bulk);
}

TEST_CASE("tcp windows: after an idle spell longer than the RTO the window restarts") {
  // A message through a port it fills grows the connection's window; after 1 s of idle (more
  // than the RTO: 200 ms + its 10 ms round trip) the next message starts from the initial window
  // (tcp_cwnd_restart), unless slow start after idle is off.
  for (bool restart : {true, false}) {
    EventEngine e;
    FlowNetwork net(e, Sharing::kTcp);
    net.set_tcp_windows(windows(restart));
    const ResourceId x = net.add_resource(4e9, "x->sw");
    const ResourceId port = net.add_resource(1e9, "sw->p");
    net.set_queue_delay(port, kQueue);
    TimeNs done = -1;
    net.start(flow({x, port}, 2e8, 3, [&] { done = e.now(); }));
    e.run();
    const double grown = net.window_segments(3);
    REQUIRE(grown > 16);
    e.run_until(done + 1'000 * kMs);
    net.start(flow({x, port}, 1e6, 3));
    CAPTURE(restart);
    if (restart) {
      CHECK(net.window_segments(3) == 10);
    } else {
      CHECK(net.window_segments(3) == grown);
    }
    e.run();
  }
}

TEST_CASE(
    "tcp windows: a flow paced elsewhere behind a standing queue sends at most window / RTT") {
  // X fills port P (its egress is faster than P). S's flow to P is paced by its own cap (2.5e8
  // B/s, a quarter of its NIC), so it fills nothing; but its data queue behind X's in P, so it
  // has at most its window in flight: a fresh connection's 10 segments per RTT = 2 x 5 us + 10 ms.
  EventEngine e;
  FlowNetwork net(e, Sharing::kTcp);
  net.set_tcp_windows(windows());
  const ResourceId x = net.add_resource(4e9, "x->sw");
  const ResourceId s = net.add_resource(1e9, "s->sw");
  const ResourceId port = net.add_resource(1e9, "sw->p");
  net.set_queue_delay(port, kQueue);
  const auto bulk = net.start(flow({x, port}, FlowNetwork::kInfiniteBytes, 1));
  e.run_until(1);
  REQUIRE(net.standing_queue(port));
  FlowNetwork::FlowSpec spec = flow({s, port}, FlowNetwork::kInfiniteBytes, 2);
  spec.rate_cap_Bps = 2.5e8;
  const auto behind = net.start(std::move(spec));
  e.run_until(2);
  const double rtt_s = (2 * kLatency + kQueue) * 1e-9;
  CHECK(net.rate(behind) == doctest::Approx(10 * kMss / rtt_s).epsilon(1e-9));
  // Held at its window, it grows it every round trip: slow start to HyStart's exit at 16
  // segments (the queue's delay is far past its threshold), then CUBIC's Reno-friendly growth of
  // 3 (1 - beta) / (1 + beta) = 0.53 segments a round trip; its rate follows its window.
  e.run_until(2 + 2 * (2 * kLatency + kQueue));
  const double w = net.window_segments(2);
  CHECK(w > 16);
  CHECK(w < 17);
  CHECK(net.rate(behind) == doctest::Approx(w * kMss / rtt_s).epsilon(1e-9));
  // Without windows it is paced at its cap.
  EventEngine e2;
  FlowNetwork plain(e2, Sharing::kTcp);
  const ResourceId x2 = plain.add_resource(4e9, "x->sw");
  const ResourceId s2 = plain.add_resource(1e9, "s->sw");
  const ResourceId port2 = plain.add_resource(1e9, "sw->p");
  plain.set_queue_delay(port2, kQueue);
  plain.start(flow({x2, port2}, FlowNetwork::kInfiniteBytes, 1));
  FlowNetwork::FlowSpec spec2 = flow({s2, port2}, FlowNetwork::kInfiniteBytes, 2);
  spec2.rate_cap_Bps = 2.5e8;
  const auto behind2 = plain.start(std::move(spec2));
  e2.run_until(2);
  CHECK(plain.rate(behind2) == doctest::Approx(2.5e8).epsilon(1e-12));
  net.stop(behind);
  net.stop(bulk);
}
