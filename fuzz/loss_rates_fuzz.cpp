// Fuzz target: a loss-rate table (sim/io/loss_rates.h, a workload's `loss_rates:`) read with
// io::parse_loss_rates from the input's text, then the table checked against what the reader
// promises: two or more points by increasing drop probability, the first at 0, every
// probability below 1 and every rate above 0 and finite.
//
// InputError is the documented outcome of bad input; any other exception, a crash, a sanitizer
// report, a hang or a table outside the promises is a finding.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "sim/core/error.h"
#include "sim/io/loss_rates.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const adaptsim::io::LossRateTable t = adaptsim::io::parse_loss_rates(text, "fuzz.csv");
    if (t.points.size() < 2 || t.points.front().first != 0) std::abort();
    for (std::size_t i = 0; i < t.points.size(); ++i) {
      const auto& [p, rate] = t.points[i];
      if (!(p >= 0 && p < 1) || !(rate > 0) || !std::isfinite(rate)) std::abort();
      if (i > 0 && !(p > t.points[i - 1].first)) std::abort();
    }
  } catch (const adaptsim::InputError&) {
    // Bad input, reported as one line: what the reader promises.
  }
  return 0;
}
