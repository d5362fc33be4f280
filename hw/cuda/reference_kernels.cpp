#include "hw/cuda/reference_kernels.h"

#include <cmath>
#include <stdexcept>
#include <string>

namespace adaptsim::hw {
namespace {

void require_same_size(std::size_t expected, std::size_t got, const char* what) {
  if (expected != got) {
    throw std::invalid_argument(std::string(what) + ": size " + std::to_string(got) +
                                " differs from the output size " + std::to_string(expected));
  }
}

}  // namespace

void sum_arrays(std::span<float> out, std::span<const float> a, std::span<const float> b) {
  require_same_size(out.size(), a.size(), "sum_arrays input a");
  require_same_size(out.size(), b.size(), "sum_arrays input b");
  for (std::size_t i = 0; i < out.size(); ++i)
    out[i] = a[i] + b[i];
}

void sum_arrays(std::span<float> out, std::span<const std::span<const float>> inputs) {
  if (inputs.empty()) throw std::invalid_argument("sum_arrays: no input arrays");
  for (const auto& in : inputs)
    require_same_size(out.size(), in.size(), "sum_arrays input");
  // Element-outer loop: each out[i] is written once, after all inputs were read, which is what
  // lets `out` alias inputs[0].
  for (std::size_t i = 0; i < out.size(); ++i) {
    float acc = inputs[0][i];
    for (std::size_t w = 1; w < inputs.size(); ++w)
      acc += inputs[w][i];
    out[i] = acc;
  }
}

double squared_l2_norm(std::span<const float> x) {
  double acc = 0;
  for (float v : x)
    acc += static_cast<double>(v) * static_cast<double>(v);
  return acc;
}

double gradient_variance(std::span<float> var_out,
                         std::span<const std::span<const float>> worker_grads) {
  if (worker_grads.empty()) throw std::invalid_argument("gradient_variance: no worker gradients");
  for (const auto& g : worker_grads) {
    require_same_size(var_out.size(), g.size(), "gradient_variance worker gradient");
  }
  const double k = static_cast<double>(worker_grads.size());
  double norm_sq = 0;
  for (std::size_t i = 0; i < var_out.size(); ++i) {
    double sum = 0;
    double sum_sq = 0;
    for (const auto& g : worker_grads) {
      const double v = g[i];
      sum += v;
      sum_sq += v * v;
    }
    const double mean = sum / k;
    const double var = sum_sq / k - mean * mean;
    var_out[i] = static_cast<float>(var);
    norm_sq += static_cast<double>(var_out[i]) * static_cast<double>(var_out[i]);
  }
  return std::sqrt(norm_sq);
}

namespace {

// var = E[g^2] - E[g]^2 per element from sums over k workers (k = 1: from the moments), and
// ||var||_2; the one loop behind both entry points.
double variance_from_sums(std::span<float> var_out, std::span<const float> sum_sq,
                          std::span<const float> sum, float k, const char* what) {
  require_same_size(var_out.size(), sum_sq.size(), what);
  require_same_size(var_out.size(), sum.size(), what);
  double norm_sq = 0;
  for (std::size_t i = 0; i < var_out.size(); ++i) {
    const float mean_sq = sum_sq[i] / k;
    const double m = sum[i] / k;
    var_out[i] = static_cast<float>(static_cast<double>(mean_sq) - m * m);
    norm_sq += static_cast<double>(var_out[i]) * static_cast<double>(var_out[i]);
  }
  return std::sqrt(norm_sq);
}

}  // namespace

double gradient_variance_from_moments(std::span<float> var_out, std::span<const float> mean_sq,
                                      std::span<const float> mean) {
  return variance_from_sums(var_out, mean_sq, mean, 1.0f, "gradient_variance_from_moments");
}

double gradient_variance_from_sums(std::span<float> var_out, std::span<const float> sum_sq,
                                   std::span<const float> sum, float k) {
  return variance_from_sums(var_out, sum_sq, sum, k, "gradient_variance_from_sums");
}

}  // namespace adaptsim::hw
