#include "sim/core/units.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "sim/core/error.h"
#include "sim/core/strings.h"

namespace adaptsim {
namespace {

struct Unit {
  std::string_view name;
  double factor;  // multiplier to the base unit
};

// Bandwidth units; base unit is bytes per second.
constexpr Unit kBandwidthUnits[] = {
    {"bps", 1.0 / 8},
    {"Kbps", 1e3 / 8},
    {"Mbps", 1e6 / 8},
    {"Gbps", 1e9 / 8},
    {"Tbps", 1e12 / 8},
    {"bit/s", 1.0 / 8},
    {"Kbit/s", 1e3 / 8},
    {"Mbit/s", 1e6 / 8},
    {"Gbit/s", 1e9 / 8},
    {"Tbit/s", 1e12 / 8},
    {"b/s", 1.0 / 8},
    {"Kb/s", 1e3 / 8},
    {"Mb/s", 1e6 / 8},
    {"Gb/s", 1e9 / 8},
    {"Tb/s", 1e12 / 8},
    {"Bps", 1},
    {"KBps", 1e3},
    {"MBps", 1e6},
    {"GBps", 1e9},
    {"TBps", 1e12},
    {"B/s", 1},
    {"KB/s", 1e3},
    {"MB/s", 1e6},
    {"GB/s", 1e9},
    {"TB/s", 1e12},
    {"KiB/s", 1024.0},
    {"MiB/s", 1048576.0},
    {"GiB/s", 1073741824.0},
    {"TiB/s", 1099511627776.0},
};

// Duration units; base unit is seconds.
constexpr Unit kDurationUnits[] = {
    {"ns", 1e-9}, {"us", 1e-6},  {"\xC2\xB5s", 1e-6}, {"ms", 1e-3},
    {"s", 1.0},   {"min", 60.0}, {"h", 3600.0},
};

// Size units; base unit is bytes.
constexpr Unit kSizeUnits[] = {
    {"B", 1},           {"KB", 1e3},           {"MB", 1e6},
    {"GB", 1e9},        {"TB", 1e12},          {"KiB", 1024.0},
    {"MiB", 1048576.0}, {"GiB", 1073741824.0}, {"TiB", 1099511627776.0},
};

// Splits "12.5 GB/s" into (12.5, "GB/s"). Throws with `what` in the message when the number is
// missing or malformed. The unit may be empty (the caller decides whether that is allowed).
std::pair<double, std::string_view> split_number(std::string_view text, std::string_view what,
                                                 std::string_view example) {
  std::string_view s = trim(text);
  std::size_t i = 0;
  while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.' ||
                          s[i] == '-' || s[i] == '+' ||
                          ((s[i] == 'e' || s[i] == 'E') && i > 0 && i + 1 < s.size() &&
                           (std::isdigit(static_cast<unsigned char>(s[i + 1])) || s[i + 1] == '-' ||
                            s[i + 1] == '+')))) {
    ++i;
  }
  std::string number(s.substr(0, i));
  double value = 0;
  auto [ptr, ec] = std::from_chars(number.data(), number.data() + number.size(), value);
  if (number.empty() || ec != std::errc() || ptr != number.data() + number.size() ||
      !std::isfinite(value)) {
    throw InputError("expected " + std::string(what) + " such as " + std::string(example) +
                     ", got \"" + std::string(text) + "\"");
  }
  return {value, trim(s.substr(i))};
}

double parse_with(std::string_view text, std::span<const Unit> units, std::string_view what,
                  std::string_view example) {
  auto [value, unit] = split_number(text, what, example);
  if (unit.empty()) {
    throw InputError("expected " + std::string(what) + " with a unit such as " +
                     std::string(example) + ", got the bare number \"" + std::string(trim(text)) +
                     "\"");
  }
  for (const Unit& u : units) {
    if (u.name == unit) {
      if (value < 0) {
        // `what` reads "a bandwidth": drop the article after "a non-negative".
        throw InputError("expected a non-negative " + std::string(what.substr(2)) + ", got \"" +
                         std::string(trim(text)) + "\"");
      }
      return value * u.factor;
    }
  }
  std::string known;
  for (const Unit& u : units) {
    if (!known.empty()) known += ", ";
    known += u.name;
  }
  throw InputError("unknown unit \"" + std::string(unit) + "\" in " + std::string(what) + " \"" +
                   std::string(trim(text)) + "\" (known: " + known + ")");
}

std::string format_number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

}  // namespace

double parse_bandwidth_Bps(std::string_view text) {
  double v = parse_with(text, kBandwidthUnits, "a bandwidth", "10Gbps or 25GB/s");
  if (v <= 0) {
    throw InputError("expected a positive bandwidth, got \"" + std::string(trim(text)) + "\"");
  }
  if (!(v >= kMinBandwidthBps && v <= kMaxBandwidthBps)) {
    throw InputError("expected a bandwidth from 1 Kbit/s to 1 PB/s, got \"" +
                     std::string(trim(text)) + "\"");
  }
  return v;
}

TimeNs parse_duration_ns(std::string_view text) {
  const double seconds = parse_with(text, kDurationUnits, "a duration", "5us or 1.5ms");
  if (!(seconds <= to_seconds(kMaxDurationNs))) {
    throw InputError("expected a duration of at most 1e6 s (11.6 days), got \"" +
                     std::string(trim(text)) + "\"");
  }
  return seconds_to_ns_round(seconds);
}

std::uint64_t parse_size_bytes(std::string_view text) {
  double v = parse_with(text, kSizeUnits, "a size", "1MiB or 8B");
  if (v != std::floor(v)) {
    throw InputError("expected a whole number of bytes, got \"" + std::string(trim(text)) + "\"");
  }
  if (!(v <= static_cast<double>(kMaxSizeBytes))) {
    throw InputError("expected a size of at most 1 PiB, got \"" + std::string(trim(text)) + "\"");
  }
  return static_cast<std::uint64_t>(v);
}

double parse_rate_per_s(std::string_view text, std::string_view unit) {
  // "<number> [prefix]<unit>/s", prefix one of K M G T P (powers of 1000).
  std::string example = "125 T" + std::string(unit) + "/s";
  auto [value, rest] = split_number(text, "a rate", example);
  const std::pair<std::string_view, double> prefixes[] = {{"", 1},    {"K", 1e3},  {"M", 1e6},
                                                          {"G", 1e9}, {"T", 1e12}, {"P", 1e15}};
  for (auto [prefix, factor] : prefixes) {
    if (rest == std::string(prefix) + std::string(unit) + "/s") {
      if (value <= 0) {
        throw InputError("expected a positive rate, got \"" + std::string(trim(text)) + "\"");
      }
      if (!(value * factor <= kMaxRatePerS)) {
        throw InputError("expected a rate of at most 1e21 per second, got \"" +
                         std::string(trim(text)) + "\"");
      }
      return value * factor;
    }
  }
  throw InputError("expected a rate such as " + example + ", got \"" + std::string(trim(text)) +
                   "\"");
}

double parse_percent(std::string_view text) {
  auto [value, rest] = split_number(text, "a percentage", "2%");
  if (rest != "%") {
    throw InputError("expected a percentage such as 2%, got \"" + std::string(trim(text)) + "\"");
  }
  if (value < 0) {
    throw InputError("expected a non-negative percentage such as 2%, got \"" +
                     std::string(trim(text)) + "\"");
  }
  return value / 100.0;
}

std::string format_bandwidth(double bytes_per_s) {
  double bits = bytes_per_s * 8;
  if (bits >= 1e12) return format_number(bits / 1e12) + " Tbit/s";
  if (bits >= 1e9) return format_number(bits / 1e9) + " Gbit/s";
  if (bits >= 1e6) return format_number(bits / 1e6) + " Mbit/s";
  if (bits >= 1e3) return format_number(bits / 1e3) + " Kbit/s";
  return format_number(bits) + " bit/s";
}

std::string format_size(std::uint64_t bytes) {
  const char* names[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int i = 0;
  while (v >= 1024 && i < 4 && std::fmod(v, 1024) == 0) {
    v /= 1024;
    ++i;
  }
  return format_number(v) + " " + names[i];
}

std::string format_seconds(double seconds) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g s", seconds);
  return buf;
}

std::string format_duration(TimeNs ns) {
  double v = static_cast<double>(ns);
  if (ns >= kNsPerSecond) return format_number(v / 1e9) + " s";
  if (ns >= kNsPerMs) return format_number(v / 1e6) + " ms";
  if (ns >= kNsPerUs) return format_number(v / 1e3) + " us";
  return format_number(v) + " ns";
}

}  // namespace adaptsim
