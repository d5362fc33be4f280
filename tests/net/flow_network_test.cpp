#include "sim/net/flow_network.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "sim/core/rng.h"
#include "sim/topo/cluster_spec.h"
#include "sim/net/network.h"

#include <doctest/doctest.h>

using adaptsim::EventEngine;
using adaptsim::TimeNs;
using adaptsim::net::FlowNetwork;

namespace {

FlowNetwork::FlowSpec flow(adaptsim::net::ResourceId r, double bytes, TimeNs latency,
                           FlowNetwork::Callback done) {
  FlowNetwork::FlowSpec s;
  s.resources = {r};
  s.bytes = bytes;
  s.latency = latency;
  s.on_complete = std::move(done);
  return s;
}

}  // namespace

TEST_CASE("a lone flow completes at latency + bytes / capacity") {
  // 1e6 bytes at 1e9 B/s = 1 ms, plus 5 us latency.
  EventEngine e;
  FlowNetwork net(e);
  auto link = net.add_resource(1e9, "l");
  TimeNs done = -1;
  net.start(flow(link, 1e6, 5000, [&] { done = e.now(); }));
  e.run();
  CHECK(done == 1'000'000 + 5'000);
}

TEST_CASE("two flows share a link, and the survivor speeds up when one ends") {
  // Link 1e9 B/s. A carries 1e6 B, B carries 3e6 B, both start at 0.
  // Both at 5e8 B/s until A drains at t = 1e6 / 5e8 = 2 ms (B has sent 1e6, 2e6 left);
  // then B alone at 1e9 B/s: 2e6 / 1e9 = 2 ms more, so B ends at 4 ms.
  EventEngine e;
  FlowNetwork net(e);
  auto link = net.add_resource(1e9, "l");
  TimeNs a = -1, b = -1;
  net.start(flow(link, 1e6, 0, [&] { a = e.now(); }));
  net.start(flow(link, 3e6, 0, [&] { b = e.now(); }));
  e.run();
  CHECK(a == 2'000'000);
  CHECK(b == 4'000'000);
  CHECK(net.bytes_carried(link) == doctest::Approx(4e6));
}

TEST_CASE("a capacity change mid-flow re-rates the flow") {
  // 2e6 B on a 1e9 B/s link; at 1 ms (1e6 sent) capacity drops to 2.5e8 B/s:
  // the remaining 1e6 B take 4 ms, so the flow ends at 5 ms.
  EventEngine e;
  FlowNetwork net(e);
  auto link = net.add_resource(1e9, "l");
  TimeNs done = -1;
  net.start(flow(link, 2e6, 0, [&] { done = e.now(); }));
  e.schedule_at(1'000'000, [&] { net.set_capacity(link, 2.5e8); });
  e.run();
  CHECK(done == 5'000'000);
}

TEST_CASE("a background flow takes its share until stopped") {
  // Background flow (infinite bytes) and a 1e6 B flow share 1e9 B/s: 5e8 each.
  // The background stops at 1 ms (the flow has sent 5e5); the rest goes at 1e9: 0.5 ms more.
  EventEngine e;
  FlowNetwork net(e);
  auto link = net.add_resource(1e9, "l");
  auto bg = net.start(flow(link, FlowNetwork::kInfiniteBytes, 0, nullptr));
  TimeNs done = -1;
  net.start(flow(link, 1e6, 0, [&] { done = e.now(); }));
  e.run_until(0);  // rates are assigned once per instant, after its other events
  CHECK(net.rate(bg) == doctest::Approx(5e8));
  e.schedule_at(1'000'000, [&] { CHECK(net.stop(bg)); });
  e.run();
  CHECK(done == 1'500'000);
  CHECK_FALSE(net.stop(bg));
}

TEST_CASE("disjoint components are re-solved independently") {
  // Starting a flow on link B must not re-rate the flow on link A.
  EventEngine e;
  FlowNetwork net(e);
  auto a = net.add_resource(1e9, "a");
  auto b = net.add_resource(1e9, "b");
  net.start(flow(a, 1e9, 0, nullptr));
  e.run_until(1);
  const auto rerated = net.flows_rerated();
  net.start(flow(b, 1e9, 0, nullptr));
  e.run_until(2);
  CHECK(net.flows_rerated() == rerated + 1);  // only the new flow
  e.run();
}

TEST_CASE("changes within one instant are coalesced into one re-solve") {
  // Ten flows start at t = 0 on one link: one solve gives each a tenth.
  EventEngine e;
  FlowNetwork net(e);
  auto link = net.add_resource(1e9, "l");
  for (int i = 0; i < 10; ++i)
    net.start(flow(link, 1e6, 0, nullptr));
  e.run_until(0);
  CHECK(net.solves() == 1);
  e.run();
}

TEST_CASE("a zero-byte flow costs only the latency") {
  EventEngine e;
  FlowNetwork net(e);
  auto link = net.add_resource(1e9, "l");
  TimeNs done = -1;
  net.start(flow(link, 0, 700, [&] { done = e.now(); }));
  e.run();
  CHECK(done == 700);
}

TEST_CASE("the network's in-place progressive filling equals the reference solver") {
  // Random instances: 12 resources, 40 flows over 1-4 resources, some rate-capped. All flows start
  // at t = 0; after the instant's re-solve, every rate must equal MaxMinSolver's answer.
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    adaptsim::Rng rng(seed);
    EventEngine e;
    FlowNetwork net(e);
    std::vector<double> cap(12);
    for (auto& c : cap)
      c = 1e8 * (1 + 9 * rng.uniform());
    std::vector<adaptsim::net::ResourceId> ids;
    for (double c : cap)
      ids.push_back(net.add_resource(c, "r"));
    std::vector<std::vector<std::uint32_t>> paths(40);
    std::vector<double> caps(40, adaptsim::net::MaxMinSolver::kUncapped);
    std::vector<FlowNetwork::FlowId> flows;
    for (int f = 0; f < 40; ++f) {
      const int len = 1 + static_cast<int>(rng.below(4));
      for (int k = 0; k < len; ++k)
        paths[f].push_back(static_cast<std::uint32_t>(rng.below(12)));
      std::sort(paths[f].begin(), paths[f].end());
      paths[f].erase(std::unique(paths[f].begin(), paths[f].end()), paths[f].end());
      if (rng.below(4) == 0) caps[f] = 1e7 * (1 + 20 * rng.uniform());
      FlowNetwork::FlowSpec s;
      s.resources.assign(paths[f].begin(), paths[f].end());
      s.bytes = 1e12;
      s.rate_cap_Bps = caps[f];
      flows.push_back(net.start(std::move(s)));
    }
    e.run_until(0);
    std::vector<std::span<const std::uint32_t>> spans(paths.begin(), paths.end());
    std::vector<double> expect(40);
    adaptsim::net::MaxMinSolver solver;
    solver.solve(cap, spans, caps, expect);
    for (int f = 0; f < 40; ++f) {
      CHECK_MESSAGE(net.rate(flows[f]) == doctest::Approx(expect[f]).epsilon(1e-9),
                    "seed " << seed << " flow " << f);
    }
  }
}

TEST_CASE("bottleneck sharing: the smallest fair share along the path, without redistribution") {
  // Links A = 10 and B = 4 (units of 1e8 B/s). f0 crosses A, f1 crosses A and B, f2 crosses B.
  // Max-min: B saturates first (f1 = f2 = 2), then f0 takes A's remaining 8.
  // Bottleneck: f0 = A/2 = 5 (A has two flows), f1 = min(A/2, B/2) = 2, f2 = B/2 = 2: the 3 units
  // f1 cannot use on A are not redistributed, so f0's rate is a lower bound of max-min's.
  for (auto sharing : {adaptsim::net::Sharing::kMaxMin, adaptsim::net::Sharing::kBottleneck}) {
    EventEngine e;
    FlowNetwork net(e, sharing);
    auto a = net.add_resource(10e8, "A");
    auto b = net.add_resource(4e8, "B");
    FlowNetwork::FlowSpec s1 = flow(a, 1e12, 0, nullptr);
    FlowNetwork::FlowSpec s2 = flow(a, 1e12, 0, nullptr);
    s2.resources.push_back(b);
    FlowNetwork::FlowSpec s3 = flow(b, 1e12, 0, nullptr);
    auto f0 = net.start(std::move(s1));
    auto f1 = net.start(std::move(s2));
    auto f2 = net.start(std::move(s3));
    e.run_until(0);
    const bool maxmin = sharing == adaptsim::net::Sharing::kMaxMin;
    CHECK(net.rate(f0) == doctest::Approx(maxmin ? 8e8 : 5e8));
    CHECK(net.rate(f1) == doctest::Approx(2e8));
    CHECK(net.rate(f2) == doctest::Approx(2e8));
  }
}

TEST_CASE("bottleneck sharing equals max-min on one shared link and re-rates when a flow ends") {
  // Two flows on 1e9 B/s: 1e6 and 3e6 bytes -> 2 ms and 4 ms, as in the max-min case above.
  EventEngine e;
  FlowNetwork net(e, adaptsim::net::Sharing::kBottleneck);
  auto link = net.add_resource(1e9, "l");
  TimeNs a = -1, b = -1;
  net.start(flow(link, 1e6, 0, [&] { a = e.now(); }));
  net.start(flow(link, 3e6, 0, [&] { b = e.now(); }));
  e.run();
  CHECK(a == 2'000'000);
  CHECK(b == 4'000'000);
}

// --- Sharing::kTcp -----------------------------------------------------------------------------
// Resources: each sender's paced NIC egress (no buffer) and a receiver port with a drop-tail
// buffer of Q = 10 ms (a switch output port).

namespace {

FlowNetwork::FlowSpec path_flow(std::vector<adaptsim::net::ResourceId> path, double bytes,
                                TimeNs latency, FlowNetwork::Callback done) {
  FlowNetwork::FlowSpec s;
  s.resources = std::move(path);
  s.bytes = bytes;
  s.latency = latency;
  s.on_complete = std::move(done);
  return s;
}

constexpr TimeNs kQueue = 10'000'000;  // 10 ms

}  // namespace

TEST_CASE("tcp sharing: a lone flow paced by its own NIC makes no standing queue") {
  // Sender egress 1e9 B/s (no buffer) -> receiver port 1e9 B/s (buffer 10 ms). Both saturate,
  // but the sender's own NIC limits the flow, so nothing queues at the port: 1e6 B take 1 ms,
  // plus 5 us latency, exactly as max-min.
  EventEngine e;
  FlowNetwork net(e, adaptsim::net::Sharing::kTcp);
  auto egress = net.add_resource(1e9, "a->sw");
  auto port = net.add_resource(1e9, "sw->c");
  net.set_queue_delay(port, kQueue);
  TimeNs done = -1;
  net.start(path_flow({egress, port}, 1e6, 5'000, [&] { done = e.now(); }));
  e.run_until(1);
  CHECK_FALSE(net.standing_queue(port));
  e.run();
  CHECK(done == 1'000'000 + 5'000);
}

TEST_CASE("tcp sharing: a fan-in fills the receiver's buffer, a broadcast does not") {
  // A and B (egress 1e9 B/s each, half used) both send 1e6 B to C through C's port (1e9 B/s,
  // 10 ms buffer): the port limits both and neither sender does, so loss-based TCP keeps the
  // buffer full. Equal RTTs: equal shares, 5e8 B/s each, both done at 2 ms + 5 us.
  {
    EventEngine e;
    FlowNetwork net(e, adaptsim::net::Sharing::kTcp);
    auto a = net.add_resource(1e9, "a->sw");
    auto b = net.add_resource(1e9, "b->sw");
    auto port = net.add_resource(1e9, "sw->c");
    net.set_queue_delay(port, kQueue);
    TimeNs done_a = -1, done_b = -1;
    net.start(path_flow({a, port}, 1e6, 5'000, [&] { done_a = e.now(); }));
    net.start(path_flow({b, port}, 1e6, 5'000, [&] { done_b = e.now(); }));
    e.run_until(1);
    CHECK(net.standing_queue(port));
    e.run();
    CHECK(done_a == 2'000'000 + 5'000);
    CHECK(done_b == 2'000'000 + 5'000);
    CHECK_FALSE(net.standing_queue(port));  // empty once the flows are gone
  }
  // Both flows leave through one sender NIC (a broadcast): the NIC, which has no buffer, limits
  // them to 5e8 B/s each; the receivers' ports (1e9 B/s) are not saturated.
  {
    EventEngine e;
    FlowNetwork net(e, adaptsim::net::Sharing::kTcp);
    auto a = net.add_resource(1e9, "a->sw");
    auto port_b = net.add_resource(1e9, "sw->b");
    auto port_c = net.add_resource(1e9, "sw->c");
    net.set_queue_delay(port_b, kQueue);
    net.set_queue_delay(port_c, kQueue);
    net.start(path_flow({a, port_b}, 1e6, 5'000, nullptr));
    net.start(path_flow({a, port_c}, 1e6, 5'000, nullptr));
    e.run_until(1);
    CHECK_FALSE(net.standing_queue(port_b));
    CHECK_FALSE(net.standing_queue(port_c));
    e.run();
  }
}

TEST_CASE("tcp sharing: messages within TCP's initial window make no standing queue") {
  // The fan-in above with 1e4 B messages (under 10 x 1448 B): one flight each, no window to grow.
  EventEngine e;
  FlowNetwork net(e, adaptsim::net::Sharing::kTcp);
  auto a = net.add_resource(1e9, "a->sw");
  auto b = net.add_resource(1e9, "b->sw");
  auto port = net.add_resource(1e9, "sw->c");
  net.set_queue_delay(port, kQueue);
  net.start(path_flow({a, port}, 1e4, 5'000, nullptr));
  net.start(path_flow({b, port}, 1e4, 5'000, nullptr));
  e.run_until(1);
  CHECK_FALSE(net.standing_queue(port));
  e.run();
}

TEST_CASE("tcp sharing: max-min mode never reports standing queues nor caps by ACK paths") {
  // The fan-in into C's port, and a flow E -> D whose ACKs cross that port: plain max-min gives
  // the fan-in 5e8 B/s each and E -> D its whole 1e9 B/s path.
  EventEngine e;
  FlowNetwork net(e);
  auto a = net.add_resource(1e9, "a->sw");
  auto b = net.add_resource(1e9, "b->sw");
  auto port = net.add_resource(1e9, "sw->c");
  auto e_nic = net.add_resource(1e9, "e->sw");
  auto port_d = net.add_resource(1e9, "sw->d");
  net.set_queue_delay(port, kQueue);
  auto ia = net.start(path_flow({a, port}, 1e6, 0, nullptr));
  net.start(path_flow({b, port}, 1e6, 0, nullptr));
  auto ed = path_flow({e_nic, port_d}, 1e9, 0, nullptr);
  ed.ack_resources = {port};
  auto ied = net.start(std::move(ed));
  e.run_until(1);
  CHECK_FALSE(net.standing_queue(port));
  CHECK(net.rate(ia) == doctest::Approx(5e8));
  CHECK(net.rate(ied) == doctest::Approx(1e9));
  net.stop(ied);
  e.run();
}

TEST_CASE("tcp sharing: a flow crossing two standing queues gets the RTT-weighted share") {
  // Ports P1 and P2 (1e9 B/s, 10 ms buffers). Flow X crosses P1 and P2; flow Y only P1; flow Z
  // only P2; no sender NICs (unconstrained senders), latency 0. With unit weights every port is
  // saturated by flows limited there: both queues stand. RTTs: X 20 ms, Y and Z 10 ms, so
  // weights 50 and 100 (1/s). Weighted filling: P1 saturates at level L with 50 L + 100 L = 1e9,
  // L = 1e9 / 150, P2 likewise: X = 50 L = 1e9 / 3 B/s, Y = Z = 2e9 / 3 (max-min: 5e8 each).
  // X carries 1e6 B and drains at 1e6 / (1e9 / 3) = 3 ms (+1 ns of drain-time rounding).
  EventEngine e;
  FlowNetwork net(e, adaptsim::net::Sharing::kTcp);
  auto p1 = net.add_resource(1e9, "p1");
  auto p2 = net.add_resource(1e9, "p2");
  net.set_queue_delay(p1, kQueue);
  net.set_queue_delay(p2, kQueue);
  TimeNs done_x = -1;
  auto x = net.start(path_flow({p1, p2}, 1e6, 0, [&] { done_x = e.now(); }));
  auto y = net.start(path_flow({p1}, 1e9, 0, nullptr));
  auto z = net.start(path_flow({p2}, 1e9, 0, nullptr));
  e.run_until(1'000'000);
  CHECK(net.standing_queue(p1));
  CHECK(net.standing_queue(p2));
  CHECK(net.rate(x) == doctest::Approx(1e9 / 3));
  CHECK(net.rate(y) == doctest::Approx(2e9 / 3));
  CHECK(net.rate(z) == doctest::Approx(2e9 / 3));
  e.run_until(10'000'000);
  CHECK(done_x >= 3'000'000);
  CHECK(done_x <= 3'000'001);
  net.stop(y);
  net.stop(z);
}

TEST_CASE("tcp sharing: connection shares divide a standing buffer in proportion") {
  // The two-sender fan-in with shares 3 and 1 (equal RTTs): the port's 1e9 B/s splits 3:1.
  EventEngine e;
  FlowNetwork net(e, adaptsim::net::Sharing::kTcp);
  auto a = net.add_resource(1e9, "a->sw");
  auto b = net.add_resource(1e9, "b->sw");
  auto port = net.add_resource(1e9, "sw->c");
  net.set_queue_delay(port, kQueue);
  auto fa = path_flow({a, port}, 1e9, 0, nullptr);
  fa.share = 3;
  auto fb = path_flow({b, port}, 1e9, 0, nullptr);
  auto ia = net.start(std::move(fa));
  auto ib = net.start(std::move(fb));
  e.run_until(1);
  CHECK(net.rate(ia) == doctest::Approx(7.5e8));
  CHECK(net.rate(ib) == doctest::Approx(2.5e8));
  net.stop(ia);
  net.stop(ib);
  e.run();
}

TEST_CASE("tcp sharing: a connection's share counts where it fills a buffer, not at its NIC") {
  // A fan-out: A's NIC (1e9 B/s, no buffer) to B's and C's ports (buffers, no other traffic)
  // with shares 3 and 1. Both flows are paced by A's NIC, so they split it evenly, 5e8 each,
  // not 7.5e8 / 2.5e8 as in a buffer they fill (the fan-in test above).
  {
    EventEngine e;
    FlowNetwork net(e, adaptsim::net::Sharing::kTcp);
    auto a_nic = net.add_resource(1e9, "a->sw");
    auto port_b = net.add_resource(1e9, "sw->b");
    auto port_c = net.add_resource(1e9, "sw->c");
    net.set_queue_delay(port_b, kQueue);
    net.set_queue_delay(port_c, kQueue);
    auto ab = path_flow({a_nic, port_b}, 1e9, 0, nullptr);
    ab.share = 3;
    auto ia = net.start(std::move(ab));
    auto ic = net.start(path_flow({a_nic, port_c}, 1e9, 0, nullptr));
    e.run_until(1);
    CHECK(net.rate(ia) == doctest::Approx(5e8));
    CHECK(net.rate(ic) == doctest::Approx(5e8));
    CHECK_FALSE(net.standing_queue(port_b));
    net.stop(ia);
    net.stop(ic);
    e.run();
  }
  // An all-to-all of two senders into two ports, shares 3 and 1 crosswise: every NIC and port
  // is full, and under even sharing each flow is limited by its sender's NIC, so the shares do
  // not count: 5e8 each, and no buffer stands (under the shares alone A->C would take 7.5e8 of
  // port C). This is the multi-root fan-in of docs/validation.md item 18.
  {
    EventEngine e;
    FlowNetwork net(e, adaptsim::net::Sharing::kTcp);
    auto a_nic = net.add_resource(1e9, "a->sw");
    auto b_nic = net.add_resource(1e9, "b->sw");
    auto port_c = net.add_resource(1e9, "sw->c");
    auto port_d = net.add_resource(1e9, "sw->d");
    net.set_queue_delay(port_c, kQueue);
    net.set_queue_delay(port_d, kQueue);
    std::vector<FlowNetwork::FlowId> ids;
    for (auto [nic, port, share] :
         {std::tuple{a_nic, port_c, 3.0}, std::tuple{a_nic, port_d, 1.0},
          std::tuple{b_nic, port_c, 1.0}, std::tuple{b_nic, port_d, 3.0}}) {
      auto f = path_flow({nic, port}, 1e9, 0, nullptr);
      f.share = share;
      ids.push_back(net.start(std::move(f)));
    }
    e.run_until(1);
    for (auto id : ids)
      CHECK(net.rate(id) == doctest::Approx(5e8));
    CHECK_FALSE(net.standing_queue(port_c));
    CHECK_FALSE(net.standing_queue(port_d));
    for (auto id : ids)
      net.stop(id);
    e.run();
  }
}

TEST_CASE("tcp sharing: a flow whose ACKs queue in a standing buffer sends at most window / RTT") {
  // B and D fill A's port (1e9 B/s, 10 ms buffer = 1e7 B): a standing queue with two flows
  // filling it, 5e8 B/s each. A sends to C through its own NIC (1e9 B/s, no buffer) and C's port
  // (not saturated); A->C's ACKs return through A's full port. Its RTT is the 10 ms queue, its
  // window that of a flow filling the buffer, 5e8 B/s * 10 ms = 5e6 B: A->C sends
  // 5e6 B / 10 ms = 5e8 B/s although A's NIC could give it 1e9 (max-min, or no ACK path).
  // A->C's own share does not change its window (docs/validation.md item 18: a root's
  // broadcasts leave evenly), so share 0.5 gives the same rate.
  for (const double share : {1.0, 0.5}) {
    EventEngine e;
    FlowNetwork net(e, adaptsim::net::Sharing::kTcp);
    auto a_nic = net.add_resource(1e9, "a->sw");
    auto b_nic = net.add_resource(1e9, "b->sw");
    auto d_nic = net.add_resource(1e9, "d->sw");
    auto port_a = net.add_resource(1e9, "sw->a");
    auto port_c = net.add_resource(1e9, "sw->c");
    net.set_queue_delay(port_a, kQueue);
    net.set_queue_delay(port_c, kQueue);
    auto ib = net.start(path_flow({b_nic, port_a}, 1e9, 0, nullptr));
    auto id = net.start(path_flow({d_nic, port_a}, 1e9, 0, nullptr));
    auto ac = path_flow({a_nic, port_c}, 1e9, 0, nullptr);
    ac.ack_resources = {port_a};
    ac.share = share;
    auto iac = net.start(std::move(ac));
    e.run_until(1);
    CHECK(net.standing_queue(port_a));
    CHECK_FALSE(net.standing_queue(port_c));
    CHECK(net.rate(ib) == doctest::Approx(5e8));
    CHECK(net.rate(id) == doctest::Approx(5e8));
    CHECK(net.rate(iac) == doctest::Approx(5e8));
    // Once A's port drains (B and D stop), the ACKs queue nowhere and A->C takes its NIC.
    net.stop(ib);
    net.stop(id);
    e.run_until(2);
    CHECK_FALSE(net.standing_queue(port_a));
    CHECK(net.rate(iac) == doctest::Approx(1e9));
    net.stop(iac);
    e.run();
  }
}

TEST_CASE("tcp sharing: a filling flow's window counts its own ACK path's queue") {
  // Two opposite full buffers, P and Q (1e9 B/s, 10 ms each), two flows filling each (5e8 B/s)
  // whose ACKs return through the other one, as over the two directions of a leaf uplink: their
  // RTT is 20 ms, so each keeps 5e8 B/s * 20 ms = 1e7 B in flight. A->C fills nothing (A's NIC
  // and C's port have room, 4e9 B/s) and its ACKs cross P: RTT 10 ms, window 1e7 B whatever
  // its share, so it sends 1e9 (the depth split among P's fillers, 5e6 B, would give half that).
  // Once Q drains, P's fillers' RTT is 10 ms, their window 5e6 B, and A->C's rate halves.
  for (const double share : {1.0, 0.5}) {
    EventEngine e;
    FlowNetwork net(e, adaptsim::net::Sharing::kTcp);
    auto p = net.add_resource(1e9, "p");
    auto q = net.add_resource(1e9, "q");
    auto a_nic = net.add_resource(4e9, "a->sw");
    auto port_c = net.add_resource(4e9, "sw->c");
    net.set_queue_delay(p, kQueue);
    net.set_queue_delay(q, kQueue);
    net.set_queue_delay(port_c, kQueue);
    std::vector<FlowNetwork::FlowId> fillers;
    for (auto [data, ack] : {std::pair{p, q}, std::pair{p, q}, std::pair{q, p}, std::pair{q, p}}) {
      auto f = path_flow({data}, 1e9, 0, nullptr);
      f.ack_resources = {ack};
      fillers.push_back(net.start(std::move(f)));
    }
    auto ac = path_flow({a_nic, port_c}, 1e9, 0, nullptr);
    ac.ack_resources = {p};
    ac.share = share;
    auto iac = net.start(std::move(ac));
    e.run_until(1);
    CHECK(net.standing_queue(p));
    CHECK(net.standing_queue(q));
    CHECK_FALSE(net.standing_queue(port_c));
    for (auto id : fillers)
      CHECK(net.rate(id) == doctest::Approx(5e8));
    CHECK(net.rate(iac) == doctest::Approx(1e9));
    net.stop(fillers[2]);
    net.stop(fillers[3]);
    e.run_until(2);
    CHECK_FALSE(net.standing_queue(q));
    CHECK(net.rate(iac) == doctest::Approx(5e8));
    net.stop(fillers[0]);
    net.stop(fillers[1]);
    net.stop(iac);
    e.run();
  }
}

TEST_CASE(
    "connection shares: log-normal with mean 1 and the given CV, fixed per (seed, src, dst)") {
  adaptsim::topo::ClusterSpec c;
  c.name = "t";
  c.servers = 2;
  c.server.gpus = 1;
  c.server.pcie = {1e15, 0};
  c.server.cpu_loopback_bandwidth_Bps = 1e15;
  c.server.nic = {1e9, 1000};
  const adaptsim::topo::Topology topo = adaptsim::topo::build_cluster(c);
  EventEngine e;
  adaptsim::net::Network net(e, topo, adaptsim::net::Sharing::kTcp);
  CHECK(net.connection_share(0, 1) == 1);  // no dispersion by default
  net.set_share_dispersion(0.4, 7);
  std::vector<double> shares;
  for (int i = 0; i < 60; ++i) {
    for (int j = 0; j < 60; ++j) {
      if (i != j) shares.push_back(net.connection_share(i, j));
    }
  }
  double mean = 0, var = 0;
  for (double s : shares)
    mean += s;
  mean /= static_cast<double>(shares.size());
  for (double s : shares)
    var += (s - mean) * (s - mean);
  const double cv = std::sqrt(var / static_cast<double>(shares.size() - 1)) / mean;
  INFO("mean " << mean << " cv " << cv << " over " << shares.size() << " connections");
  CHECK(mean == doctest::Approx(1).epsilon(0.03));
  CHECK(cv == doctest::Approx(0.4).epsilon(0.1));
  CHECK(*std::min_element(shares.begin(), shares.end()) > 0);
  CHECK(net.connection_share(3, 5) == net.connection_share(3, 5));  // drawn once
  CHECK(net.connection_share(3, 5) != net.connection_share(5, 3));  // each direction its own
  adaptsim::net::Network again(e, topo, adaptsim::net::Sharing::kTcp);
  again.set_share_dispersion(0.4, 7);
  CHECK(again.connection_share(3, 5) == net.connection_share(3, 5));  // same seed, same share
  again.set_share_dispersion(0.4, 8);
  CHECK(again.connection_share(3, 5) != net.connection_share(3, 5));
}
