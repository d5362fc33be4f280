#pragma once
// Simulated and measured time. Time is an integer count of nanoseconds (TimeNs): integer time keeps
// event order exact and runs byte-identical; int64 covers +-292 years, far beyond any run.

#include <cmath>
#include <cstdint>
#include <limits>

namespace adaptsim {

using TimeNs = std::int64_t;

inline constexpr TimeNs kNsPerUs = 1'000;
inline constexpr TimeNs kNsPerMs = 1'000'000;
inline constexpr TimeNs kNsPerSecond = 1'000'000'000;
inline constexpr TimeNs kTimeNever = std::numeric_limits<TimeNs>::max();

inline constexpr double to_seconds(TimeNs t) {
  return static_cast<double>(t) * 1e-9;
}
inline constexpr double to_us(TimeNs t) {
  return static_cast<double>(t) * 1e-3;
}

// Rounds up, so that an event computed from a real-valued duration never fires early.
inline TimeNs seconds_to_ns_ceil(double seconds) {
  return static_cast<TimeNs>(std::ceil(seconds * 1e9 - 1e-6));
}
// Rounds to the nearest nanosecond (for parsed inputs such as "2.5us").
inline TimeNs seconds_to_ns_round(double seconds) {
  return static_cast<TimeNs>(std::llround(seconds * 1e9));
}

}  // namespace adaptsim
