#include "hw/cuda/noise_scale.h"

#include <doctest/doctest.h>

#include <cmath>
#include <stdexcept>
#include <vector>

#include "sim/core/rng.h"

using namespace adaptsim::hw;

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
