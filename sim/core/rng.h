#pragma once
// Seeded pseudo-random numbers whose output is fixed by the seed on every platform: the generator
// is std::mt19937_64 (its sequence is specified by the C++ standard) and the distributions are
// implemented here, because std::normal_distribution & co. differ between standard libraries.

#include <cstdint>
#include <random>

namespace adaptsim {

class Rng {
 public:
  explicit Rng(std::uint64_t seed) : gen_(seed) {}

  // An independent stream derived from (seed, stream): used to give each worker, link or sweep
  // point its own sequence, so that adding a worker does not shift everyone else's numbers.
  static Rng derive(std::uint64_t seed, std::uint64_t stream);

  std::uint64_t next_u64() { return gen_(); }
  double uniform();  // [0, 1), 53 random bits
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }
  double normal(double mean, double stddev);  // Box-Muller
  std::uint64_t below(std::uint64_t n);       // uniform integer in [0, n), n > 0, unbiased

 private:
  std::mt19937_64 gen_;
  bool has_spare_ = false;
  double spare_ = 0;
};

// SplitMix64 finaliser: a cheap, well-mixed hash of a 64-bit value. Inline: FlatIndex hashes
// every route-cache and mailbox lookup with it (3 % of fig9's samples as a call of its own).
inline std::uint64_t mix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

}  // namespace adaptsim
