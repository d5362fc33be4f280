#pragma once
// The gradient noise scale (McCandlish et al. 2018, "An Empirical Model of Large-Batch
// Training", arXiv:1812.06162, Appendix A.1), as KungFu's monitor computes it (KUNGFU.md 3.1;
// lsds/KungFu srcs/python/kungfu/tensorflow/ops/monitor.py): from the squared norms of two
// gradients of one step, a small batch's (B_small samples) and a big batch's (B_big samples),
//
//   |G|^2 estimate  g = (B_big |G_big|^2 - B_small |G_small|^2) / (B_big - B_small)
//   tr(S) estimate  s = (|G_small|^2 - |G_big|^2) / (1/B_small - 1/B_big)
//
// each unbiased (E|G_B|^2 = |G|^2 + tr(S)/B for a mean of B independent per-sample gradients),
// each smoothed by its own exponential moving average (value = alpha value + (1 - alpha) x, the
// first sample as the start; KungFu's alpha is 0.6), and B_simple = EMA(s) / EMA(g).
// In a data-parallel step the small batch is a worker's own gradient (its batch per GPU) and the
// big batch the all-reduced average (batch per GPU x workers).

#include <cmath>
#include <limits>

namespace adaptsim::runtime {

struct NoiseScaleSample {
  double g_sq = 0;   // unbiased |G|^2 from this step
  double trace = 0;  // unbiased tr(S) from this step
};

// One step's unbiased estimates; NaN when the two batches are equal (one worker) or a norm is NaN.
inline NoiseScaleSample noise_scale_sample(double small_sq, double big_sq, double b_small,
                                           double b_big) {
  if (!(b_big > b_small && b_small > 0)) {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    return {nan, nan};
  }
  return {(b_big * big_sq - b_small * small_sq) / (b_big - b_small),
          (small_sq - big_sq) / (1.0 / b_small - 1.0 / b_big)};
}

class NoiseScaleEstimator {
 public:
  explicit NoiseScaleEstimator(double alpha = 0.6) : alpha_(alpha) {}
  // Adds one step's norms; a step whose estimates are not finite (simulated runs hold no gradient
  // values) leaves the averages as they are.
  void add(double small_sq, double big_sq, double b_small, double b_big) {
    const NoiseScaleSample x = noise_scale_sample(small_sq, big_sq, b_small, b_big);
    if (!std::isfinite(x.g_sq) || !std::isfinite(x.trace)) return;
    if (samples_ == 0) {
      g_sq_ = x.g_sq;
      trace_ = x.trace;
    } else {
      g_sq_ = alpha_ * g_sq_ + (1 - alpha_) * x.g_sq;
      trace_ = alpha_ * trace_ + (1 - alpha_) * x.trace;
    }
    ++samples_;
  }
  int samples() const { return samples_; }
  double g_sq() const { return samples_ ? g_sq_ : std::numeric_limits<double>::quiet_NaN(); }
  double trace() const { return samples_ ? trace_ : std::numeric_limits<double>::quiet_NaN(); }
  // B_simple = tr(S) / |G|^2 (may be negative early on, as KungFu's per-worker values are).
  double b_simple() const { return samples_ ? trace_ / g_sq_ : std::numeric_limits<double>::quiet_NaN(); }

 private:
  double alpha_;
  int samples_ = 0;
  double g_sq_ = 0;
  double trace_ = 0;
};

}  // namespace adaptsim::runtime
