#include "sim/net/maxmin.h"

#include <doctest/doctest.h>

#include <cmath>
#include <vector>

using adaptsim::net::MaxMinSolver;

namespace {

std::vector<double> solve(std::vector<double> capacity,
                          std::vector<std::vector<std::uint32_t>> paths,
                          std::vector<double> caps = {}) {
  if (caps.empty()) caps.assign(paths.size(), MaxMinSolver::kUncapped);
  std::vector<std::span<const std::uint32_t>> spans(paths.begin(), paths.end());
  std::vector<double> rates(paths.size());
  MaxMinSolver solver;
  solver.solve(capacity, spans, caps, rates);
  return rates;
}

}  // namespace

TEST_CASE("two flows on one link get half each") {
  // C = 10: each of the two flows gets C/2 = 5.
  auto r = solve({10.0}, {{0}, {0}});
  CHECK(r[0] == doctest::Approx(5.0));
  CHECK(r[1] == doctest::Approx(5.0));
}

TEST_CASE("three flows with a bottleneck elsewhere get the water-filling answer") {
  // Links: L0 capacity 10, L1 capacity 4.
  // f0 crosses L0 only; f1 crosses L0 and L1; f2 crosses L1 only.
  // Fill: L1's fair share is 4/2 = 2 < L0's 10/2 = 5, so L1 saturates first: f1 = f2 = 2.
  // Then L0 has 10 - 2 = 8 left for f0 alone: f0 = 8.
  auto r = solve({10.0, 4.0}, {{0}, {0, 1}, {1}});
  CHECK(r[0] == doctest::Approx(8.0));
  CHECK(r[1] == doctest::Approx(2.0));
  CHECK(r[2] == doctest::Approx(2.0));
}

TEST_CASE("the classic parking-lot: a long flow and local flows on a chain") {
  // Chain L0..L2 of capacity 1; f_long crosses all three, f_i crosses L_i alone.
  // Every link has two flows: every flow gets 1/2.
  auto r = solve({1.0, 1.0, 1.0}, {{0, 1, 2}, {0}, {1}, {2}});
  for (double x : r)
    CHECK(x == doctest::Approx(0.5));
}

TEST_CASE("a rate cap frees capacity for the others") {
  // One link of 9 shared by three flows, one capped at 1: the other two split 9 - 1 = 8.
  auto r = solve({9.0}, {{0}, {0}, {0}}, {1.0, MaxMinSolver::kUncapped, MaxMinSolver::kUncapped});
  CHECK(r[0] == doctest::Approx(1.0));
  CHECK(r[1] == doctest::Approx(4.0));
  CHECK(r[2] == doctest::Approx(4.0));
}

TEST_CASE("a flow crossing nothing is unconstrained unless capped") {
  auto r = solve({}, {{}, {}}, {MaxMinSolver::kUncapped, 3.0});
  CHECK(std::isinf(r[0]));
  CHECK(r[1] == doctest::Approx(3.0));
}

TEST_CASE("a zero-capacity link stalls its flows without affecting disjoint ones") {
  auto r = solve({0.0, 6.0}, {{0}, {0, 1}, {1}});
  CHECK(r[0] == 0.0);
  CHECK(r[1] == 0.0);
  CHECK(r[2] == doctest::Approx(6.0));
}

TEST_CASE("allocation is max-min fair: every flow has a saturated bottleneck where it is largest") {
  // A random-ish instance, checked against the definition instead of a hand answer.
  std::vector<double> cap = {10, 7, 3, 12, 5};
  std::vector<std::vector<std::uint32_t>> paths = {{0, 1}, {1, 2}, {2, 3}, {3, 4}, {0, 4},
                                                   {1, 3}, {0},    {4},    {2}};
  auto r = solve(cap, paths);
  std::vector<double> load(cap.size(), 0);
  for (std::size_t f = 0; f < paths.size(); ++f) {
    for (auto l : paths[f])
      load[l] += r[f];
  }
  for (std::size_t l = 0; l < cap.size(); ++l)
    CHECK(load[l] <= cap[l] * (1 + 1e-12));
  for (std::size_t f = 0; f < paths.size(); ++f) {
    bool has_bottleneck = false;
    for (auto l : paths[f]) {
      if (load[l] < cap[l] * (1 - 1e-9)) continue;  // not saturated
      double max_on_link = 0;
      for (std::size_t g = 0; g < paths.size(); ++g) {
        for (auto m : paths[g]) {
          if (m == l) max_on_link = std::max(max_on_link, r[g]);
        }
      }
      if (r[f] >= max_on_link * (1 - 1e-9)) has_bottleneck = true;
    }
    CHECK_MESSAGE(has_bottleneck, "flow " << f << " has no bottleneck");
  }
}
