#include "hw/cuda/reference_kernels.h"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "hw/cuda/hash_fill.h"

using namespace adaptsim::hw;

TEST_CASE("sum of two arrays matches the closed form a[i] + b[i] = 3i") {
  const std::size_t n = 1000;
  std::vector<float> a(n), b(n), out(n);
  for (std::size_t i = 0; i < n; ++i) {
    a[i] = static_cast<float>(i);
    b[i] = static_cast<float>(2 * i);
  }
  sum_arrays(out, a, b);
  // Integers below 2^24 are exact in float, so the sum is exact.
  for (std::size_t i = 0; i < n; ++i)
    CHECK(out[i] == static_cast<float>(3 * i));
}

TEST_CASE("sum of k arrays x_w[i] = w + i is k(k-1)/2 + k i") {
  const std::size_t n = 513;
  const int k = 7;
  std::vector<std::vector<float>> data(k, std::vector<float>(n));
  std::vector<std::span<const float>> inputs;
  for (int w = 0; w < k; ++w) {
    for (std::size_t i = 0; i < n; ++i)
      data[w][i] = static_cast<float>(w + i);
    inputs.emplace_back(data[w]);
  }
  std::vector<float> out(n);
  sum_arrays(out, inputs);
  for (std::size_t i = 0; i < n; ++i) {
    CHECK(out[i] == static_cast<float>(k * (k - 1) / 2 + k * i));
  }
}

TEST_CASE("the k-array sum equals a chain of two-array sums bit for bit and may alias input 0") {
  const std::size_t n = 1001;
  std::vector<std::vector<float>> data(5, std::vector<float>(n));
  std::vector<std::span<const float>> inputs;
  for (std::size_t w = 0; w < data.size(); ++w) {
    fill_uniform_from_hash(data[w], 100 + w);
    inputs.emplace_back(data[w]);
  }
  // Expected: ((x0 + x1) + x2) + ... in float.
  std::vector<float> chain(data[0]);
  for (std::size_t w = 1; w < data.size(); ++w)
    sum_arrays(chain, chain, data[w]);

  std::vector<float> out(n);
  sum_arrays(out, inputs);
  CHECK(out == chain);

  std::vector<float> aliased(data[0]);
  inputs[0] = aliased;
  sum_arrays(aliased, inputs);
  CHECK(aliased == chain);
}

TEST_CASE("squared L2 norm of 1..n is n(n+1)(2n+1)/6 exactly") {
  const std::uint64_t n = 100000;
  std::vector<float> x(n);
  for (std::uint64_t i = 0; i < n; ++i)
    x[i] = static_cast<float>(i + 1);
  // Each square and every partial sum is an integer below 2^53: exact in double.
  const double expected = static_cast<double>(n * (n + 1) * (2 * n + 1) / 6);
  CHECK(squared_l2_norm(x) == expected);
  CHECK(squared_l2_norm(std::span<const float>()) == 0.0);
}

TEST_CASE("variance of known worker gradients") {
  // Two workers: g1 = (1, 2, 3), g2 = (3, 2, 7).
  // mean = (2, 2, 5), E[g^2] = (5, 4, 29), var = E[g^2] - mean^2 = (1, 0, 4), ||var|| = sqrt(17).
  const std::vector<float> g1 = {1, 2, 3}, g2 = {3, 2, 7};
  const std::span<const float> grads[] = {g1, g2};
  std::vector<float> var(3);
  const double norm = gradient_variance(var, grads);
  CHECK(var == std::vector<float>{1, 0, 4});
  CHECK(norm == doctest::Approx(std::sqrt(17.0)).epsilon(1e-15));

  // Four workers holding 1, 2, 3, 4 everywhere: population variance (1+4+9+16)/4 - 2.5^2 = 1.25.
  std::vector<std::vector<float>> four;
  std::vector<std::span<const float>> spans;
  for (int w = 1; w <= 4; ++w)
    four.emplace_back(10, static_cast<float>(w));
  for (const auto& g : four)
    spans.emplace_back(g);
  std::vector<float> var4(10);
  const double norm4 = gradient_variance(var4, spans);
  for (float v : var4)
    CHECK(v == 1.25f);
  CHECK(norm4 == doctest::Approx(1.25 * std::sqrt(10.0)).epsilon(1e-15));
}

TEST_CASE("variance from moments matches variance from the workers' gradients") {
  const std::size_t n = 4096;
  const int k = 8;
  std::vector<std::vector<float>> grads(k, std::vector<float>(n));
  std::vector<std::span<const float>> spans;
  for (int w = 0; w < k; ++w) {
    fill_uniform_from_hash(grads[w], 7 + w);
    spans.emplace_back(grads[w]);
  }
  std::vector<float> mean(n), mean_sq(n);
  for (std::size_t i = 0; i < n; ++i) {
    double s = 0, s2 = 0;
    for (int w = 0; w < k; ++w) {
      s += grads[w][i];
      s2 += static_cast<double>(grads[w][i]) * grads[w][i];
    }
    mean[i] = static_cast<float>(s / k);
    mean_sq[i] = static_cast<float>(s2 / k);
  }
  std::vector<float> var_direct(n), var_moments(n);
  const double norm_direct = gradient_variance(var_direct, spans);
  const double norm_moments = gradient_variance_from_moments(var_moments, mean_sq, mean);
  // The moments were rounded to float (relative 2^-24 each); var ~ 1/3 here, so no cancellation.
  for (std::size_t i = 0; i < n; ++i) {
    CHECK(var_moments[i] == doctest::Approx(var_direct[i]).epsilon(1e-5));
  }
  CHECK(norm_moments == doctest::Approx(norm_direct).epsilon(1e-6));
}

TEST_CASE("mismatched sizes and empty input lists are rejected") {
  std::vector<float> a(3), b(4), out(3);
  CHECK_THROWS_AS(sum_arrays(out, a, b), std::invalid_argument);
  CHECK_THROWS_AS(sum_arrays(out, std::span<const std::span<const float>>()),
                  std::invalid_argument);
  CHECK_THROWS_AS(gradient_variance(out, std::span<const std::span<const float>>()),
                  std::invalid_argument);
  CHECK_THROWS_AS(gradient_variance_from_moments(out, a, b), std::invalid_argument);
}
