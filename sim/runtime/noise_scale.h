#pragma once
// Gradient noise scale (McCandlish et al. 2018, "An Empirical Model of Large-Batch Training",
// arXiv:1812.06162, Appendix A) from two gradient norms, as KungFu's
// MonitorGradientNoiseScaleOptimizer computes it every monitored step:
//   |G_small|^2  squared norm of a gradient averaged over B_small examples (a worker's local one),
//   |G_big|^2    squared norm of a gradient averaged over B_big examples (the all-reduced one).
// Since E|G_B|^2 = |G|^2 + tr(Sigma)/B (paper eq. A.1), two batch sizes give unbiased estimates
//   |G|^2     ~ G_biased = (B_big |G_big|^2 - B_small |G_small|^2) / (B_big - B_small)
//   tr(Sigma) ~ S_biased = (|G_small|^2 - |G_big|^2) / (1/B_small - 1/B_big)
// and the simple noise scale B_simple = tr(Sigma)/|G|^2 is estimated as a ratio of EMAs,
// EMA(S_biased) / EMA(G_biased): numerator and denominator are smoothed separately, because
// single-step estimates are noisy and can be negative (the EMA of a ratio would be dominated by
// steps where G_biased is near zero). The squared norms come from squared_l2_norm (CPU) or
// gpu_squared_l2_norm (CUDA) live, and reach the monitor gradient-noise-scale (policies.cpp)
// through the step loop in both modes.

#include <cstdint>

namespace adaptsim::runtime {

struct TwoBatchEstimate {
  double grad_sq_norm = 0;  // G_biased, estimate of |G|^2 (units of the gradient, squared)
  double trace_sigma = 0;   // S_biased, estimate of tr(Sigma) (per-example covariance trace)
};

// Both batch sizes in examples, 0 < batch_small < batch_big (else std::invalid_argument).
TwoBatchEstimate estimate_two_batch(double small_sq_norm, double big_sq_norm, double batch_small,
                                    double batch_big);

// KungFu's ExponentialMovingAverage (srcs/cpp/include/kungfu/utils/ema.hpp, used by its NoiseScale
// op): the first sample initialises the value, then value = alpha * value + (1 - alpha) * x, so
// alpha is the weight of the history. An older KungFu version (include/kungfu/ema.hpp) weighted
// the new sample by alpha instead; with the default alpha = 0.6 the two differ (0.6 vs 0.4 on x).
class ExponentialMovingAverage {
 public:
  explicit ExponentialMovingAverage(double alpha);  // 0 <= alpha < 1

  double update(double x);  // returns the new value
  bool has_value() const { return count_ > 0; }
  double value() const { return value_; }  // 0 before the first update
  std::int64_t count() const { return count_; }

 private:
  double alpha_;
  double value_ = 0;
  std::int64_t count_ = 0;
};

struct NoiseScaleOptions {
  double alpha = 0.6;  // KungFu's default (MonitorGradientNoiseScaleOptimizer alpha=0.6)
};

// B_simple = EMA(S_biased) / EMA(G_biased), updated once per monitored step.
class NoiseScaleEstimator {
 public:
  explicit NoiseScaleEstimator(NoiseScaleOptions options = {});

  // Adds one step's two norms; returns the new B_simple (in examples). Like KungFu it is not
  // clamped: it can be negative or huge while the EMAs are young; callers that drive a batch size
  // from it should clamp.
  double update(double small_sq_norm, double big_sq_norm, double batch_small, double batch_big);
  double update(const TwoBatchEstimate& estimate);

  double noise_scale() const;  // NaN before the first update
  double grad_sq_norm_ema() const { return grad_sq_ema_.value(); }
  double trace_sigma_ema() const { return trace_sigma_ema_.value(); }
  std::int64_t steps() const { return grad_sq_ema_.count(); }

 private:
  ExponentialMovingAverage grad_sq_ema_;
  ExponentialMovingAverage trace_sigma_ema_;
};

}  // namespace adaptsim::runtime
