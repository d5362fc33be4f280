#pragma once
// Simulated and measured time. Time is an integer count of nanoseconds (TimeNs): integer time keeps
// event order exact and runs byte-identical; int64 covers +-292 years, far beyond any run.

#include <cmath>
#include <cstdint>
#include <limits>

#include "sim/core/error.h"

namespace adaptsim {

using TimeNs = std::int64_t;

inline constexpr TimeNs kNsPerUs = 1'000;
inline constexpr TimeNs kNsPerMs = 1'000'000;
inline constexpr TimeNs kNsPerSecond = 1'000'000'000;
inline constexpr TimeNs kTimeNever = std::numeric_limits<TimeNs>::max();
// Simulated time stays below this (2^62 ns, 146 years): then a time plus a delay, both below it,
// never overflows TimeNs. A delay or event time the simulator derives beyond it is TimeOverflow
// (bad input), raised by seconds_to_ns_ceil and the event engine.
inline constexpr TimeNs kTimeHorizonNs = TimeNs{1} << 62;

inline constexpr double to_seconds(TimeNs t) {
  return static_cast<double>(t) * 1e-9;
}
inline constexpr double to_us(TimeNs t) {
  return static_cast<double>(t) * 1e-3;
}

// Rounds up, so that an event computed from a real-valued duration never fires early. Throws
// TimeOverflow beyond +-kTimeHorizonNs (and for NaN) instead of an undefined conversion.
inline TimeNs seconds_to_ns_ceil(double seconds) {
  const double ns = std::ceil(seconds * 1e9 - 1e-6);
  constexpr double kLimit = static_cast<double>(kTimeHorizonNs);
  if (!(ns < kLimit && ns > -kLimit)) throw_time_overflow(seconds);
  return static_cast<TimeNs>(ns);
}
// Rounds to the nearest nanosecond (for parsed inputs such as "2.5us"); throws like the above.
inline TimeNs seconds_to_ns_round(double seconds) {
  const double ns = std::round(seconds * 1e9);
  constexpr double kLimit = static_cast<double>(kTimeHorizonNs);
  if (!(ns < kLimit && ns > -kLimit)) throw_time_overflow(seconds);
  return static_cast<TimeNs>(ns);
}

}  // namespace adaptsim
