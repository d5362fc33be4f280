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

// Part i of the k parts below, without building the others.
inline Interval even_part(Interval range, std::size_t k, std::size_t i) {
  const std::size_t quo = range.length() / k;
  const std::size_t rem = range.length() % k;
  const std::size_t begin = range.begin + i * quo + (i < rem ? i : rem);
  return {begin, begin + quo + (i < rem ? 1 : 0)};
}

inline std::vector<Interval> even_partition(Interval range, std::size_t k) {
  std::vector<Interval> parts;
  parts.reserve(k);
  for (std::size_t i = 0; i < k; ++i)
    parts.push_back(even_part(range, k, i));
  return parts;
}

inline std::size_t ceil_div(std::size_t a, std::size_t b) {
  return (a + b - 1) / b;
}

}  // namespace adaptsim::coll
