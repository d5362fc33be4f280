#include "sim/runtime/noise_scale.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <stdexcept>
#include <vector>

#include "sim/core/rng.h"

using namespace adaptsim::runtime;

TEST_CASE("exact expectations give back |G|^2 and tr(Sigma)") {
  // E|G_B|^2 = |G|^2 + tr(Sigma)/B (McCandlish et al. eq. A.1). With |G|^2 = 4, tr(Sigma) = 1000,
  // B_small = 32, B_big = 256, the two estimators must return 4 and 1000.
  const double g2 = 4.0, tr = 1000.0, bs = 32, bb = 256;
  const TwoBatchEstimate e = estimate_two_batch(g2 + tr / bs, g2 + tr / bb, bs, bb);
  CHECK(e.grad_sq_norm == doctest::Approx(g2).epsilon(1e-12));
  CHECK(e.trace_sigma == doctest::Approx(tr).epsilon(1e-12));
  NoiseScaleEstimator gns;
  CHECK(gns.update(g2 + tr / bs, g2 + tr / bb, bs, bb) == doctest::Approx(tr / g2).epsilon(1e-12));
}

TEST_CASE("simulated per-example gradients recover tr(Sigma) and |G|^2 on average") {
  // Per-example gradient g = G + sigma z, z ~ N(0, I_d): tr(Sigma) = d sigma^2, |G|^2 = sum G_j^2.
  // d = 32, sigma = 2, G_j = 0.5: tr(Sigma) = 128, |G|^2 = 8, B_simple = 16.
  // Each step: 8 workers x 4 examples; G_small = worker 0's mean (B_small = 4), G_big = mean of all
  // 32 (B_big = 32). The estimators are unbiased; averaged over 4000 steps the standard errors are
  // ~0.6% of the truth (per-step std ~45 for S, ~3 for G), so 3% is > 5 standard errors.
  const int d = 32, workers = 8, per_worker = 4, steps = 4000;
  const double sigma = 2.0, g_j = 0.5;
  const double true_tr = d * sigma * sigma, true_g2 = d * g_j * g_j;
  adaptsim::Rng rng(2024);
  double sum_g2 = 0, sum_tr = 0;
  NoiseScaleEstimator gns;
  std::vector<double> worker0(d), all(d);
  for (int s = 0; s < steps; ++s) {
    std::fill(worker0.begin(), worker0.end(), 0.0);
    std::fill(all.begin(), all.end(), 0.0);
    for (int w = 0; w < workers; ++w) {
      for (int e = 0; e < per_worker; ++e) {
        for (int j = 0; j < d; ++j) {
          const double g = g_j + sigma * rng.normal(0, 1);
          all[j] += g;
          if (w == 0) worker0[j] += g;
        }
      }
    }
    double small = 0, big = 0;
    for (int j = 0; j < d; ++j) {
      small += std::pow(worker0[j] / per_worker, 2);
      big += std::pow(all[j] / (workers * per_worker), 2);
    }
    const TwoBatchEstimate e = estimate_two_batch(small, big, per_worker, workers * per_worker);
    sum_g2 += e.grad_sq_norm;
    sum_tr += e.trace_sigma;
    gns.update(e);
  }
  CHECK(sum_tr / steps == doctest::Approx(true_tr).epsilon(0.03));
  CHECK(sum_g2 / steps == doctest::Approx(true_g2).epsilon(0.03));
  // The EMA (alpha 0.6) averages only the last few steps: B_simple = 16 in order of magnitude only.
  CHECK(gns.noise_scale() > 16.0 / 4);
  CHECK(gns.noise_scale() < 16.0 * 4);
}

TEST_CASE("EMA: the first sample initialises, then value = alpha value + (1 - alpha) x") {
  ExponentialMovingAverage ema(0.6);
  CHECK_FALSE(ema.has_value());
  CHECK(ema.update(10) == 10);
  CHECK(ema.update(20) == doctest::Approx(0.6 * 10 + 0.4 * 20));  // 14
  CHECK(ema.update(0) == doctest::Approx(0.6 * 14));
  CHECK(ema.count() == 3);
  CHECK_THROWS_AS(ExponentialMovingAverage(1.0), std::invalid_argument);
}

TEST_CASE("B_simple is the ratio of the EMAs and not the EMA of the ratios") {
  // Step 1: |G|^2 = 1, S = 10; step 2: |G|^2 = 3, S = 10. alpha = 0.6:
  //   EMA(|G|^2) = 0.6 x 1 + 0.4 x 3 = 1.8, EMA(S) = 10 -> B_simple = 10 / 1.8 = 5.556
  //   (the EMA of the ratios would be 0.6 x 10 + 0.4 x 3.333 = 7.333).
  NoiseScaleEstimator gns;
  CHECK(std::isnan(gns.noise_scale()));
  gns.update(TwoBatchEstimate{1.0, 10.0});
  const double b = gns.update(TwoBatchEstimate{3.0, 10.0});
  CHECK(b == doctest::Approx(10.0 / 1.8));
  CHECK(gns.grad_sq_norm_ema() == doctest::Approx(1.8));
  CHECK(gns.trace_sigma_ema() == doctest::Approx(10.0));
  CHECK(gns.steps() == 2);
}

TEST_CASE("batch sizes must satisfy 0 < small < big") {
  CHECK_THROWS_AS(estimate_two_batch(1, 1, 32, 32), std::invalid_argument);
  CHECK_THROWS_AS(estimate_two_batch(1, 1, 0, 32), std::invalid_argument);
  CHECK_THROWS_AS(estimate_two_batch(1, 1, 64, 32), std::invalid_argument);
}

TEST_CASE("the monitor's estimate (mean local norm over workers) meets a known noise scale") {
  // Per-sample gradients G + e, e ~ N(0, diag(var)): tr(S) = sum(var), B_simple = tr(S) / |G|^2
  // exactly. The small batch's norm is the mean over workers of each worker's own (as the
  // gradient-noise-scale monitor takes it), and the tolerance comes from the samples' spread.
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
  NoiseScaleEstimator ema({alpha});
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
    const TwoBatchEstimate x = estimate_two_batch(small_sq, big_sq, kBatch, kBatch * kWorkers);
    ema.update(x);
    sum_g += x.grad_sq_norm;
    sum_g2 += x.grad_sq_norm * x.grad_sq_norm;
    sum_s += x.trace_sigma;
    sum_s2 += x.trace_sigma * x.trace_sigma;
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
  INFO("EMA estimate " << ema.noise_scale() << ", truth " << truth << ", tolerance "
                       << tolerance(effective));
  CHECK(tolerance(effective) < 0.05);
  CHECK(std::abs(ema.noise_scale() / truth - 1) <= tolerance(effective));
}
