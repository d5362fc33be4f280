#pragma once
// A synthetic labelled data set for the model tests: pixels uniform in [1/255, 1] (no zero pixel,
// so every first-layer weight has a gradient) and labels uniform in [0, 10), from a seed.
#include <cstdint>

#include "sim/core/rng.h"
#include "sim/learn/dataset.h"
#include "sim/learn/idx_reader.h"

namespace adaptsim::learn::testing {

inline Dataset synthetic_dataset(std::uint32_t samples, std::uint32_t rows, std::uint32_t cols,
                                 std::uint64_t seed) {
  Rng rng(seed);
  IdxArray images{{samples, rows, cols}, {}};
  IdxArray labels{{samples}, {}};
  for (std::uint64_t i = 0; i < std::uint64_t{samples} * rows * cols; ++i)
    images.data.push_back(static_cast<std::uint8_t>(1 + rng.below(255)));
  for (std::uint32_t i = 0; i < samples; ++i)
    labels.data.push_back(static_cast<std::uint8_t>(rng.below(kClasses)));
  return Dataset(images, labels, "synthetic");
}

}  // namespace adaptsim::learn::testing
