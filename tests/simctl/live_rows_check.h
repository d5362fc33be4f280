#pragma once
// The checks every `simctl run --live` test makes of its CSV: the scenario's rows, measured live.

#include <doctest/doctest.h>

#include <map>
#include <string>
#include <vector>

#include "tests/simctl/live_support.h"

namespace adaptsim::simctl_test {

// One row per (model, system) of `sc` (its one model, MobileNetV2), mode live on sc.servers
// ranks with sc.steps measured steps. A step is at least its compute (the scaled half-K80
// profile, > 0); 14 MB of gradients all-reduced over 1 Gbit/s NICs or loopback take well under a
// second (a ring: 2 x 14 MB x 3/4 / 125 MB/s = 0.17 s), so a step stays far below 10 s.
inline void check_live_rows(const std::vector<std::map<std::string, std::string>>& rows,
                            const LiveScenario& sc) {
  REQUIRE(rows.size() == sc.systems.size());
  for (const auto& row : rows) {
    CHECK(row.at("mode") == "live");
    CHECK(row.at("n_gpus") == std::to_string(sc.servers));
    CHECK(row.at("steps") == std::to_string(sc.steps));
    const double step_ms = std::stod(row.at("step_time_ms_mean"));
    const double compute_ms = std::stod(row.at("compute_ms"));
    CHECK(compute_ms > 0);
    CHECK(step_ms >= compute_ms * 0.99);
    CHECK(step_ms < 10000);
  }
}

}  // namespace adaptsim::simctl_test
