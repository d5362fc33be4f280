// SimTransportOptions::one_transport_thread: a rank's sends and receives share one thread's copy
// rate (the host's loopback stream bandwidth B), against the network-only model, in closed form:
// on one host with no memory limit, m bytes each way between two ranks take m/B with a thread
// per connection and 2m/B with one per rank; three ranks sending m to one take m/B and 3m/B;
// two disjoint pairs do not slow each other.

#include <doctest/doctest.h>

#include <string>
#include <utility>
#include <vector>

#include "sim/core/error.h"
#include "tests/coll/sim_harness.h"

using namespace adaptsim;
using adaptsim::testing::SimCluster;

namespace {

constexpr double kB = 1e9;             // loopback stream bandwidth, bytes/s
constexpr std::size_t kM = 1'000'000;  // bytes per message: m/B = 1 ms

topo::ClusterSpec one_host() {
  topo::ClusterSpec c = adaptsim::testing::switched(1, 4);
  c.server.cpu_loopback_bandwidth_Bps = kB;
  return c;
}

// Sends kM bytes (sizes only) along each (src, dst) pair at time 0; returns when the last
// arrived, in ms.
double finish_ms(bool one_thread, const std::vector<std::pair<int, int>>& pairs,
                 int host_cores = 0) {
  fabric::SimTransportOptions o;
  o.one_transport_thread = one_thread;
  o.host_cores = host_cores;
  SimCluster c(one_host(), o);
  TimeNs last = 0;
  for (const auto& [src, dst] : pairs) {
    const std::string name = "m" + std::to_string(src) + "-" + std::to_string(dst);
    c.fabric.transport(src).send(dst, name, {nullptr, kM}, [] {});
    c.fabric.transport(dst).recv(src, name, {nullptr, kM}, [&] { last = c.engine.now(); });
  }
  c.engine.run();
  return static_cast<double>(last) / 1e6;
}

}  // namespace

TEST_CASE("one transport thread per rank: an exchange takes twice as long, a fan-in 3 times") {
  CHECK(finish_ms(false, {{0, 1}, {1, 0}}) == doctest::Approx(1.0).epsilon(1e-6));
  CHECK(finish_ms(true, {{0, 1}, {1, 0}}) == doctest::Approx(2.0).epsilon(1e-6));
  CHECK(finish_ms(false, {{1, 0}, {2, 0}, {3, 0}}) == doctest::Approx(1.0).epsilon(1e-6));
  CHECK(finish_ms(true, {{1, 0}, {2, 0}, {3, 0}}) == doctest::Approx(3.0).epsilon(1e-6));
  // Disjoint pairs: each thread carries one stream.
  CHECK(finish_ms(true, {{0, 1}, {2, 3}}) == doctest::Approx(1.0).epsilon(1e-6));
}

TEST_CASE("the host's cores: a transfer runs its sender's and receiver's threads on them") {
  // host_cores c: the host's CPU carries c x B / 2 of transfer bytes a second (each byte a
  // 1/B-second copy on each of two threads). One core: a lone transfer at B / 2 (2 ms); two
  // disjoint pairs share it (4 ms). Two cores: a lone transfer at B (1 ms), two pairs at B / 2
  // each (2 ms). Four cores: as without the model.
  CHECK(finish_ms(true, {{0, 1}}, 1) == doctest::Approx(2.0).epsilon(1e-6));
  CHECK(finish_ms(true, {{0, 1}, {2, 3}}, 1) == doctest::Approx(4.0).epsilon(1e-6));
  CHECK(finish_ms(true, {{0, 1}}, 2) == doctest::Approx(1.0).epsilon(1e-6));
  CHECK(finish_ms(true, {{0, 1}, {2, 3}}, 2) == doctest::Approx(2.0).epsilon(1e-6));
  CHECK(finish_ms(true, {{0, 1}, {2, 3}}, 4) == doctest::Approx(1.0).epsilon(1e-6));
  // Without transport threads the cores are not modelled (KungFu's Go runtime).
  CHECK(finish_ms(false, {{0, 1}, {2, 3}}, 1) == doctest::Approx(1.0).epsilon(1e-6));
}

TEST_CASE("one transport thread needs host endpoints and a loopback bandwidth") {
  fabric::SimTransportOptions o;
  o.one_transport_thread = true;
  o.endpoint = fabric::Endpoint::kGpu;
  CHECK_THROWS_WITH_AS(SimCluster(one_host(), o),
                       doctest::Contains("transport_threads: one models a host transport"),
                       InputError);
  o.endpoint = fabric::Endpoint::kHost;
  topo::ClusterSpec no_loopback = one_host();
  no_loopback.server.cpu_loopback_bandwidth_Bps = 0;
  CHECK_THROWS_WITH_AS(SimCluster(no_loopback, o),
                       doctest::Contains("needs the loopback bandwidth"), InputError);
}
