// net::Network's loss model (resent bytes and the window bound) and a link's per-connection limit,
// against hand computation.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "sim/core/event_engine.h"
#include "sim/net/network.h"
#include "sim/topo/cluster_spec.h"

using namespace adaptsim;

namespace {

// Two one-GPU servers on one switch: NIC links of `nic_Bps` and 5 us, PCIe free and instant.
topo::ClusterSpec two_hosts(double nic_Bps, double loss) {
  topo::ClusterSpec c;
  c.name = "loss";
  c.servers = 2;
  c.server.gpus = 1;
  c.server.pcie = {1e15, 0};
  c.server.nic = {nic_Bps, 5000};
  c.server.nic.loss = loss;
  return c;
}

// Completion time of one `bytes` transfer from server 0's CPU to server 1's.
TimeNs transfer_time(const topo::ClusterSpec& spec, double bytes) {
  const topo::Topology topology = topo::build_cluster(spec);
  EventEngine engine;
  net::Network network(engine, topology);
  TimeNs done = -1;
  network.transfer(*topology.find("s0.cpu0"), *topology.find("s1.cpu0"), bytes,
                   [&] { done = engine.now(); });
  engine.run();
  return done;
}

}  // namespace

TEST_CASE("the loss bound: MSS / (RTT sqrt(2 b p / 3)), b = 2") {
  // p = 1 %, RTT 1 ms: 1448 / (1e-3 x sqrt(4 x 0.01 / 3)) = 1448 / 1.1547e-4 = 12.54 MB/s.
  CHECK(net::Network::loss_limited_rate_Bps(0.01, 1'000'000) ==
        doctest::Approx(1448 / (1e-3 * std::sqrt(4 * 0.01 / 3))));
  CHECK(net::Network::loss_limited_rate_Bps(0.01, 1'000'000) ==
        doctest::Approx(12.54e6).epsilon(1e-3));
  // Four times the loss, half the rate; twice the RTT, half the rate.
  CHECK(net::Network::loss_limited_rate_Bps(0.04, 1'000'000) ==
        doctest::Approx(net::Network::loss_limited_rate_Bps(0.01, 1'000'000) / 2));
  CHECK(net::Network::loss_limited_rate_Bps(0.01, 2'000'000) ==
        doctest::Approx(net::Network::loss_limited_rate_Bps(0.01, 1'000'000) / 2));
  CHECK(net::Network::loss_limited_rate_Bps(0, 1'000'000) == net::MaxMinSolver::kUncapped);
}

TEST_CASE("a lossy path: resent bytes at the link rate where the window bound is above it") {
  // 1 Gbit/s NICs, 1 % per link: 1 - 0.99^2 = 1.99 % of the packets lost, 1e8 B / 0.9801 cross
  // the path. RTT 4 x 5 us = 20 us: the bound, 1448 / (2e-5 x sqrt(4 x 0.0199 / 3)) = 444 MB/s,
  // is above the 125 MB/s link. One-way latency 10 us.
  const double link = 1.25e8, bytes = 1e8;
  const TimeNs clean = transfer_time(two_hosts(link, 0), bytes);
  CHECK(clean == static_cast<TimeNs>(std::llround(bytes / link * 1e9)) + 10'000);
  const TimeNs lossy = transfer_time(two_hosts(link, 0.01), bytes);
  CHECK(static_cast<double>(lossy - 10'000) ==
        doctest::Approx(bytes / 0.9801 / link * 1e9).epsilon(1e-8));  // to the nanosecond
}

TEST_CASE("a lossy path: the window bound where it is below the link rate") {
  // 100 Gbit/s NICs: the bound, 444 MB/s at 1.99 % and 20 us, is far below 12.5 GB/s.
  const double link = 1.25e10, bytes = 1e8, p = 1 - 0.99 * 0.99;
  const double bound = 1448 / (2e-5 * std::sqrt(4 * p / 3));
  const TimeNs lossy = transfer_time(two_hosts(link, 0.01), bytes);
  CHECK(static_cast<double>(lossy - 10'000) ==
        doctest::Approx(bytes / (1 - p) / bound * 1e9).epsilon(1e-8));  // to the nanosecond
}

TEST_CASE("a link's per-connection limit caps each transfer, not the link") {
  // 100 Gbit/s NICs that carry at most 20 Gbit/s (2.5 GB/s) per connection: one 1e8 B message
  // takes 1e8 / 2.5e9 = 40 ms plus 10 us; five at once from five senders to five receivers each
  // keep their 2.5 GB/s (12.5 GB/s together, the link's rate).
  topo::ClusterSpec c = two_hosts(1.25e10, 0);
  c.server.nic.stream_bandwidth_Bps = 2.5e9;
  CHECK(transfer_time(c, 1e8) == 40'000'000 + 10'000);
  c.server.nic.stream_bandwidth_Bps = 0;
  CHECK(transfer_time(c, 1e8) == 8'000'000 + 10'000);  // the link's own rate
  c.servers = 6;
  c.server.nic.stream_bandwidth_Bps = 2.5e9;
  const topo::Topology topology = topo::build_cluster(c);
  EventEngine engine;
  net::Network network(engine, topology);
  std::vector<TimeNs> done;
  for (int s = 1; s < 6; ++s) {  // s -> 0: five connections into server 0's 12.5 GB/s NIC
    network.transfer(*topology.find("s" + std::to_string(s) + ".cpu0"), *topology.find("s0.cpu0"),
                     1e8, [&] { done.push_back(engine.now()); });
  }
  engine.run();
  REQUIRE(done.size() == 5);
  for (TimeNs t : done)
    CHECK(t == 40'000'000 + 10'000);
}
