#include "sim/core/units.h"

#include <doctest/doctest.h>

#include "sim/core/error.h"

using namespace adaptsim;

TEST_CASE("bandwidths: bits are lower-case b, bytes upper-case B, decimal and binary prefixes") {
  CHECK(parse_bandwidth_Bps("10Gbps") == doctest::Approx(10e9 / 8));
  CHECK(parse_bandwidth_Bps("10 Gbit/s") == doctest::Approx(1.25e9));
  CHECK(parse_bandwidth_Bps("25GB/s") == doctest::Approx(25e9));
  CHECK(parse_bandwidth_Bps("25GBps") == doctest::Approx(25e9));
  CHECK(parse_bandwidth_Bps("1GiB/s") == doctest::Approx(1073741824.0));
  CHECK(parse_bandwidth_Bps("100Mbps") == doctest::Approx(12.5e6));
  CHECK(parse_bandwidth_Bps("1.5e3 MB/s") == doctest::Approx(1.5e9));
}

TEST_CASE("durations and sizes") {
  CHECK(parse_duration_ns("5us") == 5000);
  CHECK(parse_duration_ns("1.5ms") == 1'500'000);
  CHECK(parse_duration_ns("2 s") == 2'000'000'000);
  CHECK(parse_duration_ns("0ns") == 0);
  CHECK(parse_size_bytes("1MiB") == 1048576);
  CHECK(parse_size_bytes("8B") == 8);
  CHECK(parse_size_bytes("1GiB") == 1073741824ULL);
  CHECK(parse_size_bytes("2 KB") == 2000);
}

TEST_CASE("a bare number where a unit is required is an error naming the expectation") {
  CHECK_THROWS_WITH_AS(parse_bandwidth_Bps("10"), doctest::Contains("with a unit such as 10Gbps"),
                       InputError);
  CHECK_THROWS_AS(parse_duration_ns("5"), InputError);
  CHECK_THROWS_AS(parse_size_bytes("1024"), InputError);
}

TEST_CASE("negative, zero and malformed quantities are rejected") {
  CHECK_THROWS_WITH_AS(parse_bandwidth_Bps("-10Gbps"), doctest::Contains("non-negative"),
                       InputError);
  CHECK_THROWS_WITH_AS(parse_bandwidth_Bps("0Gbps"), doctest::Contains("positive"), InputError);
  CHECK_THROWS_WITH_AS(parse_bandwidth_Bps("10 parsecs"), doctest::Contains("unknown unit"),
                       InputError);
  CHECK_THROWS_AS(parse_bandwidth_Bps("Gbps"), InputError);
  CHECK_THROWS_AS(parse_bandwidth_Bps(""), InputError);
  CHECK_THROWS_AS(parse_size_bytes("1.5B"), InputError);
  CHECK_THROWS_AS(parse_duration_ns("-1us"), InputError);
}

TEST_CASE("rates with a named unit") {
  CHECK(parse_rate_per_s("125 TFLOP/s", "FLOP") == doctest::Approx(125e12));
  CHECK(parse_rate_per_s("300 img/s", "img") == doctest::Approx(300));
  CHECK_THROWS_AS(parse_rate_per_s("300", "img"), InputError);
}

TEST_CASE("percentages are fractions and need their % sign") {
  // 2% = 2 / 100; 2.13% = 0.0213.
  CHECK(parse_percent("2%") == doctest::Approx(0.02));
  CHECK(parse_percent(" 2.13 % ") == doctest::Approx(0.0213));
  CHECK(parse_percent("0%") == 0.0);
  CHECK(parse_percent("150%") == doctest::Approx(1.5));
  CHECK_THROWS_WITH_AS(parse_percent("2"), "expected a percentage such as 2%, got \"2\"",
                       InputError);
  CHECK_THROWS_WITH_AS(parse_percent("2 pct"), doctest::Contains("expected a percentage"),
                       InputError);
  CHECK_THROWS_WITH_AS(parse_percent("-2%"), doctest::Contains("non-negative percentage"),
                       InputError);
  CHECK_THROWS_AS(parse_percent("%"), InputError);
}

TEST_CASE("formatting round-trips the common cases") {
  CHECK(format_size(1048576) == "1 MiB");
  CHECK(format_size(8) == "8 B");
  CHECK(format_bandwidth(1.25e9) == "10 Gbit/s");
  CHECK(format_duration(5000) == "5 us");
  // Seconds in messages (timeouts, step times), three significant digits.
  CHECK(format_seconds(3.0) == "3 s");
  CHECK(format_seconds(0.25) == "0.25 s");
  CHECK(format_seconds(1.23456) == "1.23 s");
  CHECK(format_seconds(3.2e-299) == "3.2e-299 s");
}

TEST_CASE("every quantity is range-checked: what integer nanoseconds hold (issue 21 item 5)") {
  // Bandwidth from 1 Kbit/s to 1 PB/s.
  CHECK(parse_bandwidth_Bps("1Kbps") == doctest::Approx(125));
  CHECK(parse_bandwidth_Bps("1000TB/s") == doctest::Approx(1e15));
  CHECK_THROWS_WITH_AS(parse_bandwidth_Bps("1e-30Gbps"),
                       doctest::Contains("expected a bandwidth from 1 Kbit/s to 1 PB/s"),
                       InputError);
  CHECK_THROWS_AS(parse_bandwidth_Bps("999bps"), InputError);
  CHECK_THROWS_AS(parse_bandwidth_Bps("1001TB/s"), InputError);
  // Durations up to 1e6 s.
  CHECK(parse_duration_ns("1000000s") == 1'000'000'000'000'000);
  CHECK_THROWS_WITH_AS(parse_duration_ns("1e30s"),
                       doctest::Contains("expected a duration of at most 1e6 s"), InputError);
  CHECK_THROWS_AS(parse_duration_ns("1e308s"), InputError);
  CHECK_THROWS_AS(parse_duration_ns("16667min"), InputError);  // 1,000,020 s
  // Sizes up to 1 PiB.
  CHECK(parse_size_bytes("1024TiB") == (1ull << 50));
  CHECK_THROWS_WITH_AS(parse_size_bytes("1025TiB"),
                       doctest::Contains("expected a size of at most 1 PiB"), InputError);
  // Rates positive and at most 1e21 per second; NaN and infinities are never numbers.
  CHECK_THROWS_AS(parse_rate_per_s("1e300 img/s", "img"), InputError);
  CHECK_THROWS_AS(parse_rate_per_s("nan img/s", "img"), InputError);
  CHECK_THROWS_AS(parse_bandwidth_Bps("inf Gbps"), InputError);
  CHECK_THROWS_AS(parse_duration_ns("nan s"), InputError);
}
