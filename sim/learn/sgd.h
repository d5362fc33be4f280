#pragma once
// Stochastic gradient descent with momentum and weight decay over a flat parameter vector (the
// layout of sim/learn/mlp.h), and the learning-rate rule for a batch size that changes during
// training.
//
// Update (Goyal et al. 2017, "Accurate, Large Minibatch SGD: Training ImageNet in 1 Hour",
// arXiv:1706.02677, section 3: momentum SGD in the form of their eq. 9, whose velocity does not
// contain the learning rate, and weight decay as the gradient of (lambda / 2) |theta|^2, their
// "Weight decay" paragraph; PyTorch's torch.optim.SGD computes the same):
//   g_t     = gradient (the batch MEAN) + weight_decay * theta_t
//   v_{t+1} = momentum * v_t + g_t                  (v_0 = 0)
//   theta_{t+1} = theta_t - lr_t * v_{t+1}
// The learning rate multiplies the velocity, not the gradient, so a learning rate that changes
// with the batch size needs no momentum correction (Goyal et al. 2017, section 3, Remark 2: the
// correction eta_{t+1} / eta_t is for the variant that folds eta into the velocity).
//
// Learning rate for batch B (linear scaling rule, Goyal et al. 2017, section 2.1: "when the
// minibatch size is multiplied by k, multiply the learning rate by k"):
//   lr(B) = base_lr * B / base_batch
// with optional gradual warm-up (their section 2.2): over the first warmup_steps steps the rate
// ramps linearly from base_lr to lr(B), lr_t = base_lr + (lr(B) - base_lr) * t / warmup_steps,
// and is lr(B) from step warmup_steps on. Warm-up only applies when lr(B) > base_lr (it exists to
// avoid a large rate at the start); a smaller batch gets its smaller rate at once. For a data-
// parallel run B is the GLOBAL batch (per-worker batch x workers).

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace adaptsim::learn {

struct SgdOptions {
  // 0.9: the momentum of Goyal et al. 2017 (section 5.1; Nesterov there, standard momentum being
  // "equally effective", they note) and of He et al. 2016's ResNet training.
  double momentum = 0.9;
  // L2 coefficient lambda added to the gradient as lambda * theta. 0: none. (Goyal et al. use
  // 1e-4 for ResNet-50 on ImageNet.)
  double weight_decay = 0;
};

class Sgd {
 public:
  // Throws InputError for parameter_count == 0, momentum outside [0, 1) or weight_decay < 0
  // (or either not finite).
  Sgd(std::size_t parameter_count, const SgdOptions& options = {});

  // One update of `params` with the averaged gradient `gradient` (both parameter_count floats;
  // std::invalid_argument otherwise) at learning rate `lr` (> 0 and finite; InputError
  // otherwise). The arithmetic per element is float, in a fixed order: deterministic.
  void step(std::span<float> params, std::span<const float> gradient, double lr);

  std::span<const float> velocity() const { return velocity_; }
  // The velocity to overwrite (an elastic run's new worker takes the running workers').
  std::span<float> velocity() { return velocity_; }
  const SgdOptions& options() const { return options_; }

 private:
  SgdOptions options_;
  std::vector<float> velocity_;
};

// The linear scaling rule with gradual warm-up (see the top).
struct LrRule {
  double base_lr = 0.1;           // Goyal et al. 2017: 0.1 for a batch of 256 ...
  std::int64_t base_batch = 256;  // ... the reference batch (their section 5.1: eta = 0.1 kn / 256)
  std::int64_t warmup_steps = 0;  // 0: no warm-up (Goyal et al. warm up over 5 epochs)
};

// Throws InputError for base_lr <= 0 (or not finite), base_batch <= 0 or warmup_steps < 0.
void validate(const LrRule& rule);
// The learning rate at step `step` (>= 0) for a batch of `batch` samples: base_lr * batch /
// base_batch, ramped during warm-up. Throws InputError for an invalid rule, batch <= 0 or step < 0.
double learning_rate(const LrRule& rule, std::int64_t batch, std::int64_t step = 0);

}  // namespace adaptsim::learn
