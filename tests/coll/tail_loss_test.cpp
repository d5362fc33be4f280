// SimTransportOptions::tail_loss: on a lossy path a message whose last segment is lost arrives
// when Linux's timers resend it (the tail loss probe, then the doubling retransmission timer), or
// a round trip after the connection's next data reveals the hole; later messages wait behind it.
// Checked in closed form over many seeds: every arrival time is one of the cases the rules
// give, each case as often as the loss rate says (within 4 binomial standard deviations).

#include <doctest/doctest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "sim/core/error.h"
#include "tests/coll/sim_harness.h"

using namespace adaptsim;
using adaptsim::testing::SimCluster;

namespace {

constexpr double kLinkLoss = 0.1;                             // per NIC link
constexpr double kP = 1 - (1 - kLinkLoss) * (1 - kLinkLoss);  // per segment on the path: 19 %
constexpr TimeNs kOneWay = 10'000;                            // two NIC hops of 5 us
constexpr TimeNs kRtt = 2 * kOneWay;
constexpr TimeNs kRtoMin = 200'000'000;
constexpr TimeNs kProbeMin = 8'000'000;
constexpr TimeNs kRto = kRtt + kRtoMin;
constexpr int kSeeds = 2000;

// Two one-CPU hosts at 1 Gbit/s dropping kLinkLoss per NIC link.
topo::ClusterSpec lossy() {
  topo::ClusterSpec c = adaptsim::testing::switched(2, 1, 1.25e8, 5000);
  c.server.nic.loss = kLinkLoss;
  return c;
}

// Rank 0 sends the messages (sizes in bytes) at time 0 on its connection to rank 1; returns
// when each arrived, in order.
std::vector<TimeNs> arrivals(std::uint64_t seed, const std::vector<std::size_t>& sizes,
                             bool timers = true) {
  fabric::SimTransportOptions o;
  o.tail_loss.seed = seed;
  o.tail_loss.enabled = timers;
  SimCluster c(lossy(), o);
  std::vector<TimeNs> at(sizes.size(), -1);
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    const std::string name = "m" + std::to_string(i);
    c.fabric.transport(0).send(1, name, {nullptr, sizes[i]}, [] {});
    c.fabric.transport(1).recv(0, name, {nullptr, sizes[i]}, [&, i] { at[i] = c.engine.now(); });
  }
  c.engine.run();
  for (TimeNs t : at)
    REQUIRE(t >= 0);
  return at;
}

// Counts of each value.
std::map<TimeNs, int> histogram(const std::vector<TimeNs>& v) {
  std::map<TimeNs, int> h;
  for (TimeNs t : v)
    ++h[t];
  return h;
}

void check_rate(int count, double p, const char* what) {
  const double mean = p * kSeeds, sd = std::sqrt(kSeeds * p * (1 - p));
  CHECK_MESSAGE(std::abs(count - mean) <= 4 * sd, what, ": ", count, " of ", kSeeds, ", expected ",
                mean, " +- ", 4 * sd);
}

}  // namespace

TEST_CASE("tail loss: a one-segment message waits srtt + rto_min, then the doubling RTO") {
  // Sent alone, the segment is the only one out: the probe fires min(2 rtt + rto_min, rtt +
  // rto_min) after it left and arrives half a round trip later; each lost probe adds the
  // retransmission timer, doubled each time.
  std::vector<TimeNs> t;
  for (int s = 1; s <= kSeeds; ++s)
    t.push_back(arrivals(s, {1000})[0]);
  const auto h = histogram(t);
  const TimeNs clean = h.begin()->first;  // the flow model's arrival: last byte out + one way
  const TimeNs left = clean - kOneWay;
  const TimeNs probed = left + kRtt + kRtoMin + kRtt / 2;
  int lost = 0, probe_lost = 0;
  for (const auto& [time, n] : h) {
    if (time == clean) continue;
    lost += n;
    // probed + kRto (2^k - 1) for k lost probes.
    bool matched = false;
    for (int k = 0; k < 8 && !matched; ++k) {
      if (time == probed + kRto * ((TimeNs{1} << k) - 1)) {
        matched = true;
        if (k > 0) probe_lost += n;
      }
    }
    CHECK_MESSAGE(matched, "an arrival at ", time, " ns is none of the timers' cases");
  }
  check_rate(lost, kP, "messages whose segment was lost");
  check_rate(probe_lost, kP * kP, "messages whose probe was lost too");
  // The same seed, the same draws; the ablation: the flow model alone.
  CHECK(arrivals(7, {1000}) == arrivals(7, {1000}));
  for (int s = 1; s <= 50; ++s)
    CHECK(arrivals(s, {1000}, false)[0] == clean);
}

TEST_CASE("tail loss: a long message's probe waits for the ACK before, two lost wait probe_min") {
  // 100 kB: 70 segments. Only the last lost: it is alone once the ACK of the one before comes
  // back (a round trip), then srtt + rto_min. Two or more trailing lost: 2 srtt + probe_min
  // after the last left, and the probe's SACK shows the rest lost, resent a round trip later.
  std::vector<TimeNs> t;
  for (int s = 1; s <= kSeeds; ++s)
    t.push_back(arrivals(s, {100'000})[0]);
  const auto h = histogram(t);
  const TimeNs clean = h.begin()->first;
  const TimeNs left = clean - kOneWay;
  const TimeNs one = left + kRtt + kRto + kRtt / 2;
  const TimeNs two = left + 2 * kRtt + kProbeMin + kRtt / 2 + kRtt;
  int n_one = 0, n_two = 0;
  for (const auto& [time, n] : h) {
    if (time == clean) continue;
    if (time == one) {
      n_one += n;
    } else if (time == two) {
      n_two += n;
    } else {
      // A lost probe: the resent segment's own time, the probe's SACK case no longer applies.
      bool matched = false;
      for (int k = 1; k < 8 && !matched; ++k) {
        const TimeNs backoff = kRto * ((TimeNs{1} << k) - 1);
        matched = time == one + backoff || time == two - kRtt + backoff;
      }
      CHECK_MESSAGE(matched, "an arrival at ", time, " ns is none of the timers' cases");
    }
  }
  // The last lost and its probe arrives: p (1 - p) (not the one before) (1 - p) (probe).
  check_rate(n_one, kP * (1 - kP) * (1 - kP), "one trailing segment lost, probe arrived");
  check_rate(n_two, kP * kP * (1 - kP), "two or more trailing lost, probe arrived");
}

TEST_CASE("tail loss: the next message reveals the hole, later messages wait behind it") {
  // Two messages posted at once: the second starts as the first's last byte leaves, its first
  // segment is SACKed a round trip later and the first's lost tail resent (RACK), arriving
  // 1.5 round trips after the first's last byte left: never a 200 ms timer. The second arrives
  // in order, never before the first.
  std::vector<TimeNs> first, second;
  for (int s = 1; s <= kSeeds; ++s) {
    const std::vector<TimeNs> at = arrivals(s, {100'000, 1000});
    first.push_back(at[0]);
    second.push_back(at[1]);
    CHECK(at[1] >= at[0]);
  }
  const auto h = histogram(first);
  const TimeNs clean = h.begin()->first;
  const TimeNs revealed = clean - kOneWay + kRtt * 3 / 2;
  REQUIRE(h.size() == 2);
  CHECK(h.rbegin()->first == revealed);
  check_rate(h.rbegin()->second, kP, "first messages whose last segment was lost");
  // The second is behind a hole exactly when the first's was lost; unless its own tail was lost
  // it then arrives at the repair, with the first.
  int together = 0;
  for (int s = 0; s < kSeeds; ++s)
    together += first[s] == revealed && second[s] == revealed;
  check_rate(together, kP * (1 - kP), "second messages released with the first");
}

TEST_CASE("loss rates: a lossy connection moves at the measured goodput, interpolated in p") {
  // The table: 125 MB/s clean, 25 MB/s at a drop probability of 0.3. The path drops 19 %:
  // 125 - 100 x 0.19 / 0.3 = 61.67 MB/s of goodput, so 1e6 B take 1e6 / 61.67e6 s (the flow
  // carries bytes / (1 - p) at goodput / (1 - p)), plus the one-way latency.
  fabric::SimTransportOptions o;
  o.tail_loss.enabled = false;
  o.loss_rates = {"t.csv", {{0.0, 125e6}, {0.3, 25e6}}};
  SimCluster c(lossy(), o);
  TimeNs at = -1;
  c.fabric.transport(0).send(1, "m", {nullptr, 1'000'000}, [] {});
  c.fabric.transport(1).recv(0, "m", {nullptr, 1'000'000}, [&] { at = c.engine.now(); });
  c.engine.run();
  const double goodput = 125e6 - 100e6 * kP / 0.3;
  CHECK(static_cast<double>(at - kOneWay) == doctest::Approx(1e6 / goodput * 1e9).epsilon(1e-6));

  // Beyond the table's largest probability: one error naming the file and the path.
  fabric::SimTransportOptions short_table = o;
  short_table.loss_rates.points = {{0.0, 125e6}, {0.1, 60e6}};
  SimCluster d(lossy(), short_table);
  d.fabric.transport(0).send(1, "m", {nullptr, 1000}, [] {});
  CHECK_THROWS_WITH_AS(d.engine.run(),
                       "t.csv: measured up to a drop probability of 0.100000; the path s0.cpu0 "
                       "-> s1.cpu0 drops 0.190000 of its packets (measure that loss too)",
                       InputError);
}
