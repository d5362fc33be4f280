#include "sim/learn/sgd.h"

#include <cmath>
#include <sstream>
#include <stdexcept>
#include <string>

#include "sim/core/error.h"

namespace adaptsim::learn {

namespace {

std::string number(double x) {
  std::ostringstream out;
  out << x;
  return out.str();
}

}  // namespace

Sgd::Sgd(std::size_t parameter_count, const SgdOptions& options)
    : options_(options), velocity_(parameter_count, 0.0f) {
  if (parameter_count == 0) throw InputError("SGD: 0 parameters: expected > 0");
  if (!(options.momentum >= 0 && options.momentum < 1)) {
    throw InputError("SGD momentum " + number(options.momentum) + ": expected in [0, 1)");
  }
  if (!(options.weight_decay >= 0) || !std::isfinite(options.weight_decay)) {
    throw InputError("SGD weight decay " + number(options.weight_decay) +
                     ": expected a finite value >= 0");
  }
}

void Sgd::step(std::span<float> params, std::span<const float> gradient, double lr) {
  if (!(lr > 0) || !std::isfinite(lr)) {
    throw InputError("learning rate " + number(lr) + ": expected a finite value > 0");
  }
  if (params.size() != velocity_.size() || gradient.size() != velocity_.size()) {
    throw std::invalid_argument("Sgd::step: " + std::to_string(params.size()) + " parameters, " +
                                std::to_string(gradient.size()) + " gradients, optimizer of " +
                                std::to_string(velocity_.size()));
  }
  const auto momentum = static_cast<float>(options_.momentum);
  const auto decay = static_cast<float>(options_.weight_decay);
  const auto rate = static_cast<float>(lr);
  for (std::size_t i = 0; i < params.size(); ++i) {
    const float g = gradient[i] + decay * params[i];
    velocity_[i] = momentum * velocity_[i] + g;
    params[i] -= rate * velocity_[i];
  }
}

void validate(const LrRule& rule) {
  if (!(rule.base_lr > 0) || !std::isfinite(rule.base_lr)) {
    throw InputError("base learning rate " + number(rule.base_lr) +
                     ": expected a finite value > 0");
  }
  if (rule.base_batch <= 0) {
    throw InputError("base batch " + std::to_string(rule.base_batch) + ": expected > 0");
  }
  if (rule.warmup_steps < 0) {
    throw InputError("warm-up steps " + std::to_string(rule.warmup_steps) + ": expected >= 0");
  }
}

double learning_rate(const LrRule& rule, std::int64_t batch, std::int64_t step) {
  validate(rule);
  if (batch <= 0) throw InputError("batch " + std::to_string(batch) + ": expected > 0");
  if (step < 0) throw InputError("step " + std::to_string(step) + ": expected >= 0");
  const double scaled =
      rule.base_lr * static_cast<double>(batch) / static_cast<double>(rule.base_batch);
  if (step >= rule.warmup_steps || scaled <= rule.base_lr) return scaled;
  const double t = static_cast<double>(step) / static_cast<double>(rule.warmup_steps);
  return rule.base_lr + (scaled - rule.base_lr) * t;
}

}  // namespace adaptsim::learn
