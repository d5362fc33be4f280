#pragma once
// Splitting an element range into parts, as KungFu's plan.EvenPartition does
// (srcs/go/plan/interval.go): k parts whose lengths differ by at most one, the first
// (count mod k) parts one element longer.

#include <cstddef>
#include <vector>

namespace adaptsim::coll {

struct Interval {
  std::size_t begin = 0;
  std::size_t end = 0;
  std::size_t length() const { return end - begin; }
};

inline std::vector<Interval> even_partition(Interval range, std::size_t k) {
  std::vector<Interval> parts;
  if (k == 0) return parts;
  parts.reserve(k);
  const std::size_t quo = range.length() / k;
  const std::size_t rem = range.length() % k;
  std::size_t offset = range.begin;
  for (std::size_t i = 0; i < k; ++i) {
    const std::size_t len = quo + (i < rem ? 1 : 0);
    parts.push_back({offset, offset + len});
    offset += len;
  }
  return parts;
}

inline std::size_t ceil_div(std::size_t a, std::size_t b) {
  return (a + b - 1) / b;
}

}  // namespace adaptsim::coll
