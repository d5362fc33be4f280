// Open MPI's all-reduce model (sim/coll/ompi_allreduce.h) and ob1's rendezvous
// (sim/coll/rendezvous_transport.h): the decisions by release, exact sums with real bytes for
// every algorithm and rank count, and times against closed forms on an uncontended switch.

#include <doctest/doctest.h>

#include <cmath>
#include <memory>
#include <vector>

#include "sim/coll/ompi_allreduce.h"
#include "sim/coll/rendezvous_transport.h"
#include "sim/core/error.h"
#include "tests/coll/sim_harness.h"

using namespace adaptsim;
using namespace adaptsim::coll;
using adaptsim::testing::kAlpha;
using adaptsim::testing::kB;
using adaptsim::testing::kHop;
using adaptsim::testing::SimCluster;
using adaptsim::testing::switched;

namespace {

OmpiOptions forced(OmpiAllreduce a, std::uint64_t segment_bytes = 0) {
  OmpiOptions o;
  o.forced = a;
  o.forced_segment_bytes = segment_bytes;
  return o;
}

// Runs one all-reduce of `count` float32 on n ranks (one per host) and checks every element on
// every rank; rendezvous above `eager` bytes when eager > 0.
void check_sum(const OmpiOptions& o, int n, std::size_t count, std::size_t eager, bool in_place) {
  SimCluster c(switched(n, 1));
  OmpiAllReduce algo(o);
  std::vector<std::unique_ptr<RendezvousTransport>> rv;
  std::vector<std::vector<float>> send(n, std::vector<float>(count)),
      recv(n, std::vector<float>(count, -1));
  int finished = 0;
  for (int r = 0; r < n; ++r) {
    for (std::size_t i = 0; i < count; ++i)
      send[r][i] = static_cast<float>((r + 1) * ((i % 11) + 1));
    if (in_place) recv[r] = send[r];
    Workspace w;
    w.name = "grad";
    w.send = {reinterpret_cast<const std::byte*>((in_place ? recv : send)[r].data()), count * 4};
    w.recv = {reinterpret_cast<std::byte*>(recv[r].data()), count * 4};
    w.count = count;
    Transport* t = &c.fabric.transport(r);
    if (eager > 0) {
      rv.push_back(std::make_unique<RendezvousTransport>(*t, eager));
      t = rv.back().get();
    }
    algo.run(*t, w, [&] { ++finished; });
  }
  c.engine.run();
  REQUIRE(finished == n);
  const float factor = static_cast<float>(n * (n + 1) / 2);
  for (int r = 0; r < n; ++r) {
    for (std::size_t i = 0; i < count; ++i) {
      if (recv[r][i] != factor * static_cast<float>((i % 11) + 1)) {
        FAIL("n=" << n << " count=" << count << " eager=" << eager << " rank " << r << " element "
                  << i << ": " << recv[r][i]);
      }
    }
  }
}

// Seconds until every rank's all-reduce of `bytes` (size only) finished.
double simulate(const OmpiOptions& o, int n, std::size_t bytes, std::size_t eager = 0) {
  SimCluster c(switched(n, 1, kB, kHop));
  OmpiAllReduce algo(o);
  std::vector<std::unique_ptr<RendezvousTransport>> rv;
  TimeNs end = 0;
  for (int r = 0; r < n; ++r) {
    const Workspace w = adaptsim::testing::size_only_workspace("t", bytes);
    Transport* t = &c.fabric.transport(r);
    if (eager > 0) {
      rv.push_back(std::make_unique<RendezvousTransport>(*t, eager));
      t = rv.back().get();
    }
    algo.run(*t, w, [&] { end = std::max(end, c.engine.now()); });
  }
  c.engine.run();
  return to_seconds(end);
}

void check_close(double got, double expect, double rel = 1e-3) {
  CHECK_MESSAGE(std::abs(got - expect) <= rel * expect, "got " << got << " expected " << expect);
}

}  // namespace

TEST_CASE("releases: 2.0-4.0 share the old decision, 4.1 has its own, others are refused") {
  CHECK(ompi_rules_for_version("4.0.0") == OmpiRules::kBefore41);
  CHECK(ompi_rules_for_version("2.1.1") == OmpiRules::kBefore41);
  CHECK(ompi_rules_for_version("3.1") == OmpiRules::kBefore41);
  CHECK(ompi_rules_for_version("4.1") == OmpiRules::k41);
  CHECK(ompi_rules_for_version("4.1.4") == OmpiRules::k41);
  for (const char* bad :
       {"", "4", "4.", "4.0.", "4.0.x", "x.1", "1.10.2", "4.2.0", "5.0.0", "4.0.0.1", " 4.0"}) {
    CHECK_MESSAGE(!ompi_rules_for_version(bad), bad);
  }
  CHECK(parse_ompi_allreduce("segmented_ring") == OmpiAllreduce::kSegmentedRing);
  CHECK(!parse_ompi_allreduce("ignore"));
  CHECK(!parse_ompi_allreduce("RING"));
}

TEST_CASE(
    "the decision before 4.1: recursive doubling below 10000 B, ring to n MiB, then segments") {
  using A = OmpiAllreduce;
  const OmpiOptions o;                                                // 4.0.0
  CHECK(ompi_allreduce_for(o, 4, 2499, 4) == A::kRecursiveDoubling);  // 9996 B
  CHECK(ompi_allreduce_for(o, 4, 2500, 4) == A::kRing);               // 10000 B
  CHECK(ompi_allreduce_for(o, 4, 1 << 20, 4) == A::kRing);            // 4 MiB = 4 x 1 MiB
  CHECK(ompi_allreduce_for(o, 4, (1 << 20) + 1, 4) == A::kSegmentedRing);
  CHECK(ompi_allreduce_for(o, 32, 8 << 20, 4) == A::kRing);            // 32 MiB
  CHECK(ompi_allreduce_for(o, 32, 16 << 20, 4) == A::kSegmentedRing);  // 64 MiB
  // 4.1 at 32 ranks: Rabenseifner from 128 B; a forced ring with fewer elements than ranks
  // runs recursive doubling, a forced segmented ring without a segment size the ring.
  OmpiOptions v41;
  v41.version = "4.1.4";
  v41.rules = OmpiRules::k41;
  CHECK(ompi_allreduce_for(v41, 32, 1 << 20, 4) == A::kRabenseifner);
  CHECK(ompi_allreduce_for(forced(A::kRing), 8, 7, 4) == A::kRecursiveDoubling);
  CHECK(ompi_allreduce_for(forced(A::kSegmentedRing), 8, 1 << 20, 4) == A::kRing);
  CHECK(ompi_allreduce_for(forced(A::kSegmentedRing, 1 << 16), 8, 1 << 20, 4) == A::kSegmentedRing);
}

TEST_CASE("every modelled algorithm gives the exact sum, eager and by rendezvous, in place too") {
  using A = OmpiAllreduce;
  const std::vector<OmpiOptions> cases = {forced(A::kRing), forced(A::kSegmentedRing, 64),
                                          forced(A::kRecursiveDoubling), forced(A::kRabenseifner),
                                          OmpiOptions{}};
  for (const OmpiOptions& o : cases) {
    for (int n = 1; n <= 9; ++n) {
      for (std::size_t count :
           {std::size_t{1}, std::size_t{7}, std::size_t{100}, std::size_t{1001}}) {
        if (o.forced == A::kRabenseifner && count < 8 && n >= 2) continue;  // basic linear
        check_sum(o, n, count, 0, false);
        check_sum(o, n, count, 64, false);
        check_sum(o, n, count, 64, true);
      }
    }
  }
}

TEST_CASE("Open MPI's ring: 2(n-1)(alpha + S/(nB)) eager, 2(n-1)(3 alpha + S/(nB)) by rendezvous") {
  const double S = 64.0 * 1024 * 1024;
  for (int n : {2, 4, 8}) {
    const double eager = 2 * (n - 1) * (kAlpha + S / (n * kB));
    check_close(simulate(forced(OmpiAllreduce::kRing), n, static_cast<std::size_t>(S)), eager);
    // Each step's block first sends a header and waits for the acknowledgement (the receive is
    // always posted in time): two more path latencies and two headers' transmissions.
    const double rndv = 2 * (n - 1) * (3 * kAlpha + S / (n * kB) + 2 * 40 / kB);
    check_close(simulate(forced(OmpiAllreduce::kRing), n, static_cast<std::size_t>(S), 65536),
                rndv);
  }
}

TEST_CASE("the segmented ring reduce-scatters phase by phase, then gathers whole blocks") {
  // 4 ranks, 16 MiB, 1 MiB segments: 4 phases of 3 steps of S/16, then 3 steps of S/4.
  const int n = 4;
  const double S = 16.0 * 1024 * 1024;
  const double expect = 4 * 3 * (kAlpha + S / (16 * kB)) + 3 * (kAlpha + S / (4 * kB));
  check_close(simulate(OmpiOptions{}, n, static_cast<std::size_t>(S)), expect);
}

TEST_CASE(
    "recursive doubling: lg p exchanges of the whole buffer, two more when p is not a power") {
  const double S = 1.0 * 1024 * 1024;
  check_close(simulate(forced(OmpiAllreduce::kRecursiveDoubling), 8, static_cast<std::size_t>(S)),
              3 * (kAlpha + S / kB));
  // 6 ranks: 0 and 2 fold into 1 and 3, four survivors exchange twice, 1 and 3 hand back: at
  // least 4 (alpha + S/B). Ranks 4 and 5 skip the fold, so rank 4's second exchange reaches
  // rank 1 while rank 1 still receives its first from rank 3: one more S/B at rank 1's NIC.
  const double got =
      simulate(forced(OmpiAllreduce::kRecursiveDoubling), 6, static_cast<std::size_t>(S));
  CHECK(got > 4 * (kAlpha + S / kB) * 1.1);
  CHECK(got <= (4 * kAlpha + 5 * S / kB) * 1.001);
}

// Counts the bytes each rank sends through it.
class CountingTransport final : public DelegatingTransport {
 public:
  CountingTransport(Transport& inner, double& sent) : DelegatingTransport(inner), sent_(sent) {}
  int rank() const override { return base_.rank(); }
  int size() const override { return base_.size(); }
  int host_of(int rank) const override { return base_.host_of(rank); }
  void send(int peer, const std::string& name, ConstBytes data, Callback done) override {
    sent_ += static_cast<double>(data.size);
    base_.send(peer, name, data, std::move(done));
  }
  void recv(int peer, const std::string& name, Bytes into, Callback done) override {
    base_.recv(peer, name, into, std::move(done));
  }

 private:
  double& sent_;
};

TEST_CASE("Open MPI's Rabenseifner: the folding pairs exchange halves and the even rank goes on") {
  // ompi_coll_base_allreduce_intra_redscat_allgather (v4.1.4): with r = n - p' folding pairs, an
  // even rank below 2r sends half in the fold, 2(p'-1)/p' S in the reduce-scatter and all-gather
  // and the whole result to its odd partner; the odd one half and its reduced half; the others
  // 2(p'-1)/p' S. MPICH's fold (the even rank sends everything, the odd one goes on) would load
  // the odd ranks instead: live Open MPI 4.1.4 on 3 testbed hosts sent 2.5 S from rank 0 and S
  // from ranks 1 and 2 (docs/validation.md).
  const double S = 1 << 20;
  const std::vector<std::pair<int, std::vector<double>>> cases = {
      {3, {2.5, 1, 1}}, {4, {1.5, 1.5, 1.5, 1.5}}, {6, {3, 1, 3, 1, 1.5, 1.5}}};
  for (const auto& [n, expect] : cases) {
    CAPTURE(n);
    SimCluster c(switched(n, 1, kB, kHop));
    OmpiAllReduce algo(forced(OmpiAllreduce::kRabenseifner));
    std::vector<double> sent(static_cast<std::size_t>(n), 0);
    std::vector<std::unique_ptr<CountingTransport>> ts;
    for (int r = 0; r < n; ++r) {
      ts.push_back(std::make_unique<CountingTransport>(c.fabric.transport(r), sent[r]));
      Workspace w;
      w.name = "t";
      w.send = {nullptr, static_cast<std::size_t>(S)};
      w.recv = {nullptr, static_cast<std::size_t>(S)};
      w.count = static_cast<std::size_t>(S) / 4;
      algo.run(*ts.back(), w, [] {});
    }
    c.engine.run();
    for (int r = 0; r < n; ++r) {
      CAPTURE(r);
      CHECK(sent[static_cast<std::size_t>(r)] == expect[static_cast<std::size_t>(r)] * S);
    }
  }
}

TEST_CASE(
    "rendezvous: the payload waits for the receive to be posted and for the acknowledgement") {
  const std::size_t bytes = 1 << 20;
  for (bool late : {false, true}) {
    SimCluster c(switched(2, 1, kB, kHop));
    RendezvousTransport a(c.fabric.transport(0), 65536), b(c.fabric.transport(1), 65536);
    TimeNs sent = -1, received = -1;
    a.send(1, "m", ConstBytes{nullptr, bytes}, [&] { sent = c.engine.now(); });
    const TimeNs post = late ? 1000000 : 0;
    c.engine.schedule_at(post, [&] {
      b.recv(0, "m", Bytes{nullptr, bytes}, [&] { received = c.engine.now(); });
    });
    c.engine.run();
    // Header out (alpha), and the acknowledgement back once the receive is posted (alpha),
    // then the payload (alpha + S/B).
    const double start = late ? 1e-3 : kAlpha + 40 / kB;
    const double expect = start + 40 / kB + 2 * kAlpha + bytes / kB;
    check_close(to_seconds(received), expect, 1e-4);
    CHECK(sent <= received);
    CHECK(sent > 0);
  }
  // At the eager limit a message leaves at once.
  SimCluster c(switched(2, 1, kB, kHop));
  RendezvousTransport a(c.fabric.transport(0), 65536), b(c.fabric.transport(1), 65536);
  TimeNs received = -1;
  a.send(1, "m", ConstBytes{nullptr, 65536}, [] {});
  b.recv(0, "m", Bytes{nullptr, 65536}, [&] { received = c.engine.now(); });
  c.engine.run();
  check_close(to_seconds(received), kAlpha + 65536 / kB, 1e-4);
}

TEST_CASE(
    "rendezvous: an exchange whose partner comes late sends the two payloads one after the "
    "other (the answer is matched in the receive call and queues behind the payload)") {
  // ompi_coll_base_sendrecv on both ranks: the receive posted, then the send. Rank 1 starts
  // `late` after rank 0. On time, both announcements cross, both answers leave on idle
  // connections and the payloads overlap: about S/B. Late by more than a one-way latency, rank 1
  // finds rank 0's announcement in its receive call and answers before announcing its own; rank
  // 0 then sends its payload, and its answer to rank 1 leaves behind it on their one connection:
  // rank 1's payload starts only once rank 0's has left, about 2 S/B.
  const std::size_t bytes = 1 << 20;
  const double s_over_b = bytes / kB;
  for (const TimeNs late : {TimeNs{0}, TimeNs{50000}}) {
    SimCluster c(switched(2, 1, kB, kHop));
    RendezvousTransport a(c.fabric.transport(0), 65536), b(c.fabric.transport(1), 65536);
    TimeNs at0 = -1, at1 = -1;
    a.recv(1, "x", Bytes{nullptr, bytes}, [&] { at0 = c.engine.now(); });
    a.send(1, "x", ConstBytes{nullptr, bytes}, [] {});
    c.engine.schedule_at(late, [&] {
      b.recv(0, "x", Bytes{nullptr, bytes}, [&] { at1 = c.engine.now(); });
      b.send(0, "x", ConstBytes{nullptr, bytes}, [] {});
    });
    c.engine.run();
    const double t0 = to_seconds(at0 - late), t1 = to_seconds(at1 - late);
    if (late == 0) {
      CHECK(t0 == doctest::Approx(t1));
      CHECK(t0 < s_over_b + 10 * kAlpha);
      CHECK(t0 > s_over_b);
    } else {
      CHECK(t1 > s_over_b);  // rank 0's payload, first
      CHECK(t1 < s_over_b + 10 * kAlpha);
      CHECK(t0 > 2 * s_over_b);  // rank 1's, only after it
      CHECK(t0 < 2 * s_over_b + 10 * kAlpha);
    }
  }
}

TEST_CASE("rendezvous: a receive of another size fails the run naming both ranks and sizes") {
  SimCluster c(switched(2, 1, kB, kHop));
  RendezvousTransport a(c.fabric.transport(0), 64), b(c.fabric.transport(1), 64);
  std::vector<std::byte> out(200), in(100);
  a.send(1, "m", ConstBytes{out.data(), out.size()}, [] {});
  b.recv(0, "m", Bytes{in.data(), in.size()}, [] {});
  CHECK_THROWS_WITH_AS(
      c.engine.run(), "rank 1: rank 0 announced 200 bytes for message 'm', the receive expects 100",
      RuntimeFailure);
}

TEST_CASE("an algorithm the model does not run fails with what Open MPI would have run") {
  SimCluster c(switched(4, 1));
  OmpiAllReduce algo(forced(OmpiAllreduce::kBasicLinear));
  Workspace w;
  w.name = "t";
  w.send = {nullptr, 64};
  w.recv = {nullptr, 64};
  w.count = 16;
  CHECK_THROWS_WITH_AS(algo.run(c.fabric.transport(0), w, [] {}),
                       "Open MPI 4.0.0 would run its basic_linear all-reduce for 16 elements on 4 "
                       "ranks, which is not modelled",
                       RuntimeFailure);
}
