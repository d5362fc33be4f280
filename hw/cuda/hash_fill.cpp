#include "hw/cuda/hash_fill.h"

#include "sim/core/rng.h"

namespace adaptsim::hw {

float uniform_from_hash(std::uint64_t seed, std::uint64_t i) {
  const std::uint64_t h = mix64(seed ^ (i * 0x9E3779B97F4A7C15ull));
  // Top 24 bits / 2^24 is in [0, 1) and exact in float; * 2 - 1 stays exact.
  return static_cast<float>(static_cast<double>(h >> 40) / static_cast<double>(1ull << 24)) * 2.0f -
         1.0f;
}

void fill_uniform_from_hash(std::span<float> x, std::uint64_t seed) {
  for (std::size_t i = 0; i < x.size(); ++i)
    x[i] = uniform_from_hash(seed, i);
}

}  // namespace adaptsim::hw
