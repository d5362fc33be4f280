#pragma once
// Quantities with units, parsed from text ("10Gbps", "25GB/s", "5us", "1MiB") and formatted back.
// A unit is always required: a bare number where a quantity is expected is an error, because
// "10" could mean bits, bytes, Gbit/s or GB/s and guessing silently corrupts a whole study.
//
// Conventions: decimal prefixes (K, M, G, T) are powers of 1000, binary ones (Ki, Mi, Gi, Ti)
// powers of 1024. Lower-case "b" is bits, upper-case "B" bytes ("Gbps" = 1e9 bit/s,
// "GBps" = "GB/s" = 1e9 byte/s), as in nccl-tests (GB/s = 1e9 B/s).

#include <cstdint>
#include <string>
#include <string_view>

#include "sim/core/time.h"

namespace adaptsim {

// The range of every quantity a parser accepts. Each bound lies far outside any real system and
// keeps what the simulator derives from a value (a drain time, a sum of latencies) well inside
// integer nanoseconds (kTimeHorizonNs, 2^62 ns); a value outside is bad input at parse time.
// 1 kbit/s: below any modem a training job has run over; 1 PB/s: 300x an H100's HBM3 (3.35 TB/s).
inline constexpr double kMinBandwidthBps = 125;
inline constexpr double kMaxBandwidthBps = 1e15;
// 10^6 s (11.6 days): above any latency, overhead, cycle or timeout an input needs; thousands of
// them still add up far below the horizon.
inline constexpr TimeNs kMaxDurationNs = 1'000'000 * kNsPerSecond;
// 1 PiB: above any buffer or memory of one machine (an H200 holds 141 GB).
inline constexpr std::uint64_t kMaxSizeBytes = 1ull << 50;
// Rates (samples/s, FLOP/s): positive and finite, at most 10^21 per second (a zettaFLOP/s).
inline constexpr double kMaxRatePerS = 1e21;

// Each parser throws InputError with a message naming what was expected ("expected a bandwidth
// such as 10Gbps or 25GB/s, got \"10\""). NaN and infinities are never numbers.
double parse_bandwidth_Bps(std::string_view text);      // bytes per second, in the range above
TimeNs parse_duration_ns(std::string_view text);        // 0 .. kMaxDurationNs
std::uint64_t parse_size_bytes(std::string_view text);  // 0 .. kMaxSizeBytes, whole bytes
double parse_rate_per_s(std::string_view text, std::string_view unit);  // e.g. "125 TFLOP/s"
// A percentage as a fraction: "2%" -> 0.02, >= 0, no upper bound (a caller that needs one, such
// as a coefficient of variation below 100%, checks it). The % sign is required: a bare 2 could be
// 2% or 200%.
double parse_percent(std::string_view text);

std::string format_bandwidth(double bytes_per_s);  // "10 Gbit/s" style, for messages and manifests
std::string format_size(std::uint64_t bytes);      // "1 MiB", "8 B"
std::string format_duration(TimeNs ns);            // "5 us", "1.5 ms"
std::string format_seconds(double seconds);        // "3 s", "0.25 s", "3.2e-299 s" (%.3g)

}  // namespace adaptsim
