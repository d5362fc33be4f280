// Congestion windows per connection under Sharing::kTcp (net::TcpWindowOptions): shares of a
// standing buffer by window, growth only while a connection fills one, overflow cuts, the restart
// after idle, and a paced flow held at window / RTT behind a standing queue.

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
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

// Senders' NICs (no buffer) into one receiver port of 1e9 B/s behind a drop-tail buffer.
struct Port {
  EventEngine e;
  FlowNetwork net{e, Sharing::kTcp};
  std::vector<ResourceId> senders;
  ResourceId port = 0;
  Port(bool with_windows, const std::vector<double>& sender_Bps, TimeNs queue = kQueue,
       TcpWindowOptions w = windows()) {
    if (with_windows) net.set_tcp_windows(w);
    for (double rate : sender_Bps)
      senders.push_back(net.add_resource(rate, "sender->sw"));
    port = net.add_resource(1e9, "sw->port");
    net.set_queue_delay(port, queue);
  }
};

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
    Port p(on, {1e9, 1e9});
    TimeNs done_a = -1, done_b = -1;
    p.net.start(flow({p.senders[0], p.port}, 1e6, 1, [&] { done_a = p.e.now(); }));
    p.net.start(flow({p.senders[1], p.port}, 1e6, 2, [&] { done_b = p.e.now(); }));
    p.e.run();
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
    Port p(on, {4e9, 4e9});
    FlowNetwork& net = p.net;
    const auto bulk = net.start(flow({p.senders[0], p.port}, FlowNetwork::kInfiniteBytes, 1));
    p.e.run_until(2'000 * kMs);
    const auto fresh = net.start(flow({p.senders[1], p.port}, 1e12, 2));
    p.e.run_until(2'000 * kMs + 1);
    const double rb = net.rate(bulk), rf = net.rate(fresh);
    CAPTURE(on);
    CHECK(rb + rf == doctest::Approx(1e9).epsilon(1e-9));
    if (!on) {
      CHECK(rf == doctest::Approx(rb).epsilon(1e-12));
    } else {
      const double wb = net.window_segments(1), wf = net.window_segments(2);
      CHECK(wf == 10);
      // Two seconds against a 10 ms queue: HyStart's exit at 16 segments, then CUBIC's
      // Reno-friendly growth (0.53 segments a round trip, 200 round trips) outpaces its cubic
      // term here.
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
  Port p(true, {4e9}, kMs);
  FlowNetwork& net = p.net;
  const auto bulk = net.start(flow({p.senders[0], p.port}, FlowNetwork::kInfiniteBytes, 7));
  const double holds = 1e9 * (1e-3 + 2 * 5e-6) / kMss;
  double most = 0;
  for (int i = 1; i <= 600; ++i) {
    p.e.run_until(i * 100 * kMs);
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
    Port p(true, {4e9}, kQueue, windows(restart));
    FlowNetwork& net = p.net;
    TimeNs done = -1;
    net.start(flow({p.senders[0], p.port}, 2e8, 3, [&] { done = p.e.now(); }));
    p.e.run();
    const double grown = net.window_segments(3);
    REQUIRE(grown > 16);
    p.e.run_until(done + 1'000 * kMs);
    net.start(flow({p.senders[0], p.port}, 1e6, 3));
    CAPTURE(restart);
    if (restart) {
      CHECK(net.window_segments(3) == 10);
    } else {
      CHECK(net.window_segments(3) == grown);
    }
    p.e.run();
  }
}

TEST_CASE(
    "tcp windows: a flow paced elsewhere behind a standing queue sends at most window / RTT") {
  // X fills port P (its egress is faster than P). S's flow to P is paced by its own cap (2.5e8
  // B/s, a quarter of its NIC), so it fills nothing; but its data queue behind X's in P, so it
  // has at most its window in flight: a fresh connection's 10 segments per RTT = 2 x 5 us + 10
  // ms. Without windows it is paced at its cap.
  for (bool on : {true, false}) {
    Port p(on, {4e9, 1e9});
    FlowNetwork& net = p.net;
    const auto bulk = net.start(flow({p.senders[0], p.port}, FlowNetwork::kInfiniteBytes, 1));
    p.e.run_until(1);
    REQUIRE(net.standing_queue(p.port));
    FlowNetwork::FlowSpec spec = flow({p.senders[1], p.port}, FlowNetwork::kInfiniteBytes, 2);
    spec.rate_cap_Bps = 2.5e8;
    const auto behind = net.start(std::move(spec));
    p.e.run_until(2);
    CAPTURE(on);
    if (on) {
      const double rtt_s = (2 * kLatency + kQueue) * 1e-9;
      CHECK(net.rate(behind) == doctest::Approx(10 * kMss / rtt_s).epsilon(1e-9));
      // Held at its window, it grows it every round trip: slow start to HyStart's exit at 16
      // segments (the queue's delay is far past its threshold), then CUBIC's Reno-friendly
      // growth of 3 (1 - beta) / (1 + beta) = 0.53 segments a round trip; its rate follows its
      // window.
      p.e.run_until(2 + 2 * (2 * kLatency + kQueue));
      const double w = net.window_segments(2);
      CHECK(w > 16);
      CHECK(w < 17);
      CHECK(net.rate(behind) == doctest::Approx(w * kMss / rtt_s).epsilon(1e-9));
    } else {
      CHECK(net.rate(behind) == doctest::Approx(2.5e8).epsilon(1e-12));
    }
    net.stop(behind);
    net.stop(bulk);
  }
}

TEST_CASE(
    "tcp windows, queue from the windows: the queue holds what the windows hold beyond the path, "
    "and slow start grows by the segments acknowledged") {
  // One backlogged connection (egress 4e9) into port P (1e9 B/s, a 100 ms buffer), HyStart off
  // so that slow start runs until the buffer overflows. With the queue from the windows, P's
  // standing queue is the window's bytes beyond what the round trip without queues carries
  // (2 x 5 us at 1e9 B/s): 10 segments = 14.48 us of them, so 4.48 us at first; the window gains
  // one segment for each one acknowledged, 1e9 / 1448 a second. The overflow comes when the
  // window exceeds 1e9 x (100 ms + 10 us) / 1448 = 69 068 segments, about 100 ms in. Without the
  // option the queue is the whole buffer from the first solve.
  constexpr TimeNs kBuffer = 100 * kMs;
  const double base_ns = 2.0 * kLatency;
  for (bool fluid : {true, false}) {
    TcpWindowOptions o = windows(true, /*hystart=*/false);
    o.queue_from_windows = fluid;
    Port p(true, {4e9}, kBuffer, o);
    FlowNetwork& net = p.net;
    const auto bulk = net.start(flow({p.senders[0], p.port}, FlowNetwork::kInfiniteBytes, 1));
    p.e.run_until(1);
    CAPTURE(fluid);
    REQUIRE(net.standing_queue(p.port));
    CHECK(net.rate(bulk) == doctest::Approx(1e9).epsilon(1e-12));
    if (!fluid) {
      CHECK(net.queue_delay_ns(p.port) == static_cast<double>(kBuffer));
      net.stop(bulk);
      continue;
    }
    CHECK(net.queue_delay_ns(p.port) == doctest::Approx(10 * kMss - base_ns).epsilon(1e-9));
    // 50 ms later: the window as the last re-solve grew it (10 + 1e9 x its time / 1448), and
    // the queue from that window. The re-solves come a round trip apart, and the round trip is
    // now mostly the queue, about the time since the start: the last came after 25 ms. (Grown
    // by the round trip instead, it would have doubled every one.)
    const TimeNs t = 50 * kMs + 1;
    p.e.run_until(t);
    const double w = net.window_segments(1);
    const double grown_at_s = (w - 10) * kMss / 1e9;
    CHECK(grown_at_s <= 50e-3);
    CHECK(grown_at_s >= 25e-3);
    CHECK(net.queue_delay_ns(p.port) == doctest::Approx(w * kMss - base_ns).epsilon(1e-9));
    CHECK(net.window_cuts(1) == 0);
    // Past the overflow: cut (to 0.7 of itself, then growing again), the queue within the buffer.
    p.e.run_until(300 * kMs);
    CHECK(net.window_cuts(1) >= 1);
    CHECK(net.queue_delay_ns(p.port) <= static_cast<double>(kBuffer));
    CHECK(net.queue_delay_ns(p.port) > 0);
    CHECK(net.rate(bulk) == doctest::Approx(1e9).epsilon(1e-9));
    net.stop(bulk);
  }
}
