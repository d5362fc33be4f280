// Fuzz target: a device profile (traces/devices/*.yaml) read with train::parse_device_profile,
// then asked for step times as a training workload asks (every listed point's model and
// precision, at its batch, at batch 1 and between and beyond the listed batches) and for its
// sourced numbers. The input is the file's text.
//
// InputError is the documented outcome of bad input (and of a step-time query the profile
// cannot answer); any other exception, a crash, a sanitizer report or a hang is a finding.

#include <algorithm>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <string>

#include "sim/core/error.h"
#include "sim/train/device_profile.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using adaptsim::InputError;
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const adaptsim::train::DeviceProfile d =
        adaptsim::train::parse_device_profile(text, "fuzz.yaml");
    (void)d.sourced_numbers();
    for (const adaptsim::train::ThroughputPoint& p : d.throughput()) {
      const std::int64_t b = p.batch;
      for (const std::int64_t batch : {b, std::int64_t{1}, b / 2 + 1, 2 * b + 1}) {
        try {
          const int query = static_cast<int>(std::min<std::int64_t>(batch, INT_MAX));
          (void)d.step_compute_time_s(p.model, query, p.precision);
        } catch (const InputError&) {
          // A query the profile cannot answer (no point for the model, batch < 1).
        }
      }
    }
  } catch (const InputError&) {
    // Bad input, reported as one line: what the reader promises.
  }
  return 0;
}
