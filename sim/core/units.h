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

// Each parser throws InputError with a message naming what was expected ("expected a bandwidth
// such as 10Gbps or 25GB/s, got \"10\"").
double parse_bandwidth_Bps(std::string_view text);                      // bytes per second, > 0
TimeNs parse_duration_ns(std::string_view text);                        // >= 0
std::uint64_t parse_size_bytes(std::string_view text);                  // >= 0, whole bytes
double parse_rate_per_s(std::string_view text, std::string_view unit);  // e.g. "125 TFLOP/s"
// A percentage as a fraction: "2%" -> 0.02, >= 0, no upper bound (a caller that needs one, such
// as a coefficient of variation below 100%, checks it). The % sign is required: a bare 2 could be
// 2% or 200%.
double parse_percent(std::string_view text);

std::string format_bandwidth(double bytes_per_s);  // "10 Gbit/s" style, for messages and manifests
std::string format_size(std::uint64_t bytes);      // "1 MiB", "8 B"
std::string format_duration(TimeNs ns);            // "5 us", "1.5 ms"

}  // namespace adaptsim
