#include "sim/runtime/noise_scale.h"

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace adaptsim::runtime {

TwoBatchEstimate estimate_two_batch(double small_sq_norm, double big_sq_norm, double batch_small,
                                    double batch_big) {
  if (!(batch_small > 0) || !(batch_big > batch_small)) {
    throw std::invalid_argument("estimate_two_batch: need 0 < batch_small < batch_big, got " +
                                std::to_string(batch_small) + " and " + std::to_string(batch_big));
  }
  TwoBatchEstimate e;
  e.grad_sq_norm =
      (batch_big * big_sq_norm - batch_small * small_sq_norm) / (batch_big - batch_small);
  e.trace_sigma = (small_sq_norm - big_sq_norm) / (1.0 / batch_small - 1.0 / batch_big);
  return e;
}

ExponentialMovingAverage::ExponentialMovingAverage(double alpha) : alpha_(alpha) {
  if (!(alpha >= 0 && alpha < 1)) {
    throw std::invalid_argument("ExponentialMovingAverage: alpha must be in [0, 1), got " +
                                std::to_string(alpha));
  }
}

double ExponentialMovingAverage::update(double x) {
  value_ = count_ == 0 ? x : alpha_ * value_ + (1 - alpha_) * x;
  ++count_;
  return value_;
}

NoiseScaleEstimator::NoiseScaleEstimator(NoiseScaleOptions options)
    : grad_sq_ema_(options.alpha), trace_sigma_ema_(options.alpha) {}

double NoiseScaleEstimator::update(double small_sq_norm, double big_sq_norm, double batch_small,
                                   double batch_big) {
  return update(estimate_two_batch(small_sq_norm, big_sq_norm, batch_small, batch_big));
}

double NoiseScaleEstimator::update(const TwoBatchEstimate& estimate) {
  grad_sq_ema_.update(estimate.grad_sq_norm);
  trace_sigma_ema_.update(estimate.trace_sigma);
  return noise_scale();
}

double NoiseScaleEstimator::noise_scale() const {
  if (!grad_sq_ema_.has_value()) return std::numeric_limits<double>::quiet_NaN();
  return trace_sigma_ema_.value() / grad_sq_ema_.value();
}

}  // namespace adaptsim::runtime
