#include "sim/core/rng.h"

#include <cmath>
#include <numbers>

namespace adaptsim {

Rng Rng::derive(std::uint64_t seed, std::uint64_t stream) {
  return Rng(mix64(mix64(seed) ^ mix64(stream + 0x632BE59BD9B4E019ULL)));
}

double Rng::uniform() {
  return static_cast<double>(gen_() >> 11) * 0x1.0p-53;
}

double Rng::normal(double mean, double stddev) {
  if (has_spare_) {
    has_spare_ = false;
    return mean + stddev * spare_;
  }
  double u1 = uniform();
  while (u1 <= 0)
    u1 = uniform();
  const double u2 = uniform();
  const double r = std::sqrt(-2.0 * std::log(u1));
  const double theta = 2.0 * std::numbers::pi * u2;
  spare_ = r * std::sin(theta);
  has_spare_ = true;
  return mean + stddev * r * std::cos(theta);
}

std::uint64_t Rng::below(std::uint64_t n) {
  // Rejection sampling removes the modulo bias.
  const std::uint64_t limit = UINT64_MAX - UINT64_MAX % n;
  std::uint64_t x;
  do {
    x = gen_();
  } while (x >= limit);
  return x % n;
}

}  // namespace adaptsim
