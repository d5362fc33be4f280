#pragma once
// Deterministic pseudo-random data for kernel timing and tests, identical on host and device:
// x[i] = uniform in [-1, 1) from mix64(seed ^ (i * golden ratio)) (sim/core/rng.h). Counter-based,
// so any element can be produced independently (the GPU fill of launch::fill_uniform produces the
// same floats), and fast enough to fill 1e8 elements in well under a second.

#include <cstdint>
#include <span>

namespace adaptsim::hw {

// The float32 value of element i; 24 random bits, so every value is exact in float.
float uniform_from_hash(std::uint64_t seed, std::uint64_t i);

void fill_uniform_from_hash(std::span<float> x, std::uint64_t seed);

}  // namespace adaptsim::hw
