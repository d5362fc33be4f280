// The gradient noise scale estimator (sim/runtime/gradient_noise.h) on synthetic gradients whose
// noise scale is known: per-sample gradients G + e with e ~ N(0, diag(var)), so tr(S) = sum(var)
// and B_simple = tr(S) / |G|^2 exactly.

#include "sim/runtime/gradient_noise.h"

#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <vector>


using namespace adaptsim::runtime;

TEST_CASE("one step's estimates by hand") {
  // |G_small|^2 = 5 at B = 2, |G_big|^2 = 3 at B = 8: g = (8*3 - 2*5) / 6 = 7/3,
  // s = (5 - 3) / (1/2 - 1/8) = 16/3, B_simple = 16/7.
  const NoiseScaleSample x = noise_scale_sample(5, 3, 2, 8);
  CHECK(x.g_sq == doctest::Approx(7.0 / 3));
  CHECK(x.trace == doctest::Approx(16.0 / 3));
  // One worker: the two batches are one, nothing to estimate.
  CHECK(std::isnan(noise_scale_sample(5, 5, 8, 8).g_sq));
  // The EMA: the first sample starts it, then value = alpha value + (1 - alpha) x.
  NoiseScaleEstimator e(0.6);
  CHECK(std::isnan(e.b_simple()));
  e.add(5, 3, 2, 8);
  CHECK(e.b_simple() == doctest::Approx(16.0 / 7));
  e.add(6, 2, 2, 8);  // g = (16 - 12) / 6 = 2/3, s = 4 / 0.375 = 32/3
  CHECK(e.g_sq() == doctest::Approx(0.6 * 7.0 / 3 + 0.4 * 2.0 / 3));
  CHECK(e.trace() == doctest::Approx(0.6 * 16.0 / 3 + 0.4 * 32.0 / 3));
  // A step without values (NaN norms, as simulated) changes nothing.
  e.add(std::nan(""), std::nan(""), 2, 8);
  CHECK(e.samples() == 2);
}

TEST_CASE("on Gaussian per-sample gradients the estimate meets the true noise scale") {
  // 4 workers x 8 samples a step, 32 dimensions. True G and per-dimension variances chosen so
  // that B_simple = tr(S) / |G|^2 = 40 / 2 = 20, inside the batch range a step sees (8 .. 32).
  constexpr int kDims = 32, kWorkers = 4, kBatch = 8, kSteps = 20000;
  std::vector<double> g(kDims), sd(kDims);
  double g_sq = 0, trace = 0;
  for (int d = 0; d < kDims; ++d) {
    g[d] = (d % 2 ? 1.0 : -1.0) * std::sqrt(2.0 / kDims);
    const double var = 40.0 / kDims * (d % 4 + 1) / 2.5;  // mean 1.25, sum 40
    sd[d] = std::sqrt(var);
    g_sq += g[d] * g[d];
    trace += var;
  }
  REQUIRE(g_sq == doctest::Approx(2));
  REQUIRE(trace == doctest::Approx(40));
  const double truth = trace / g_sq;

  std::mt19937_64 rng(7);
  std::normal_distribution<double> normal(0, 1);
  // The EMA's alpha makes its effective sample count (1 + alpha) / (1 - alpha) = 3999.
  const double alpha = 0.9995;
  NoiseScaleEstimator ema(alpha);
  // The per-step estimates' spread, to derive the tolerance from the number of samples.
  double sum_g = 0, sum_g2 = 0, sum_s = 0, sum_s2 = 0;
  std::vector<double> big(kDims), local(kDims);
  for (int step = 0; step < kSteps; ++step) {
    std::fill(big.begin(), big.end(), 0.0);
    double small_sq = 0;
    for (int w = 0; w < kWorkers; ++w) {
      std::fill(local.begin(), local.end(), 0.0);
      for (int b = 0; b < kBatch; ++b) {
        for (int d = 0; d < kDims; ++d)
          local[d] += g[d] + sd[d] * normal(rng);
      }
      double sq = 0;
      for (int d = 0; d < kDims; ++d) {
        local[d] /= kBatch;
        sq += local[d] * local[d];
        big[d] += local[d] / kWorkers;
      }
      small_sq += sq / kWorkers;  // the mean over workers, as the monitor takes it
    }
    double big_sq = 0;
    for (double v : big)
      big_sq += v * v;
    ema.add(small_sq, big_sq, kBatch, kBatch * kWorkers);
    const NoiseScaleSample x = noise_scale_sample(small_sq, big_sq, kBatch, kBatch * kWorkers);
    sum_g += x.g_sq;
    sum_g2 += x.g_sq * x.g_sq;
    sum_s += x.trace;
    sum_s2 += x.trace * x.trace;
  }
  const double n = kSteps;
  const double mean_g = sum_g / n, mean_s = sum_s / n;
  const double cv_g = std::sqrt(sum_g2 / n - mean_g * mean_g) / mean_g;
  const double cv_s = std::sqrt(sum_s2 / n - mean_s * mean_s) / mean_s;
  // Relative standard error of a ratio of two averages of n samples (delta method, the two taken
  // as independent: an upper bound here, as they are positively correlated), times 4.
  const auto tolerance = [&](double samples) {
    return 4 * std::sqrt((cv_g * cv_g + cv_s * cv_s) / samples);
  };
  INFO("per-step cv of |G|^2 " << cv_g << ", of tr(S) " << cv_s);
  // Unbiased per step: the plain means over every step.
  CHECK(std::abs(mean_s / mean_g / truth - 1) <= tolerance(n));
  CHECK(tolerance(n) < 0.05);
  // The EMA after far more steps than its memory: as good as its effective sample count allows.
  const double effective = (1 + alpha) / (1 - alpha);
  INFO("EMA estimate " << ema.b_simple() << ", truth " << truth << ", tolerance "
                       << tolerance(effective));
  CHECK(tolerance(effective) < 0.05);
  CHECK(std::abs(ema.b_simple() / truth - 1) <= tolerance(effective));
}
