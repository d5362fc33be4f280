// The loss-rate table reader (sim/io/loss_rates.h): scripts/testbed-loss.sh's CSV, medians per
// drop probability, comments skipped, and each defect one line naming the file and the line.

#include <doctest/doctest.h>

#include <string>

#include "sim/core/error.h"
#include "sim/io/loss_rates.h"

using namespace adaptsim;

namespace {

std::string error_of(const std::string& text) {
  try {
    io::parse_loss_rates(text, "l.csv");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("loss rates: the median of each probability's runs, in order, comments skipped") {
  const io::LossRateTable t = io::parse_loss_rates(
      "# measured somewhere\n"
      "nic_loss,drop_probability,MBps\n"
      "1%,0.0199,48.8\r\n"
      "0%,0,119.6\n"
      "1%,0.0199,57.6\n"
      "\n"
      "# a comment between rows\n"
      "1%,0.0199,44.6\n"
      "0%,0,119.4\n",
      "l.csv");
  CHECK(t.file == "l.csv");
  REQUIRE(t.points.size() == 2);
  CHECK(t.points[0].first == 0);
  CHECK(t.points[0].second == doctest::Approx(119.5e6));  // (119.4 + 119.6) / 2
  CHECK(t.points[1].first == 0.0199);
  CHECK(t.points[1].second == doctest::Approx(48.8e6));  // 44.6 48.8 57.6
}

TEST_CASE("loss rates: the shipped table reads") {
  const io::LossRateTable t = io::read_loss_rates(std::string(ADAPTSIM_SOURCE_DIR) +
                                                  "/traces/loss/testbed-1Gbps-cubic.csv");
  REQUIRE(t.points.size() == 7);
  for (std::size_t i = 1; i < t.points.size(); ++i)
    CHECK(t.points[i].first > t.points[i - 1].first);
}

TEST_CASE("loss rates: every defect is one line with the file and the line") {
  const std::string h = "nic_loss,drop_probability,MBps\n";
  CHECK(error_of("") ==
        "l.csv:1: the file holds no CSV header; expected drop_probability and MBps");
  CHECK(error_of("a,b\n0,1\n") ==
        "l.csv:1: expected a CSV header with drop_probability and MBps (scripts/testbed-loss.sh)");
  CHECK(error_of(h + "0%,0,119\n1%,0.02\n") == "l.csv:3: has 2 cells; expected 3 (the header's)");
  CHECK(error_of(h + "0%,0,119\n1%,1.5,50\n") ==
        "l.csv:3: drop_probability '1.5': expected a probability from 0 to below 1");
  CHECK(error_of(h + "0%,0,119\n1%,0.02,-3\n") ==
        "l.csv:3: MBps '-3': expected a rate above 0 MB/s (at most 1e9)");
  CHECK(error_of(h + "0%,0,119\n1%,0.02,fast\n") ==
        "l.csv:3: MBps 'fast': expected a rate above 0 MB/s (at most 1e9)");
  CHECK(error_of(h + "1%,0.02,50\n2%,0.04,20\n") ==
        "l.csv:3: no row at drop_probability 0; expected the clean rate too");
  CHECK(error_of(h + "0%,0,119\n0%,0,118\n") ==
        "l.csv:3: one drop probability only; expected the rate at two or more");
}
