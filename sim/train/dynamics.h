#pragma once
// A model of training dynamics: what a simulated run of a model that learns for real in live runs
// (fashion-mlp, sim/learn) has in place of gradients with values and a test set (issue 16,
// Figure 4). It turns a batch schedule into progress, the gradient noise scale along the way and
// test accuracy, so the simulated gradient-noise-scale monitor and adaptive-batch policy act as
// they do live, and accuracy comes out against the simulated wall-clock time.
//
// Progress. A step at global batch B makes B * E(B) samples' worth of progress at the reference
// batch B0 (base_batch), with the statistical efficiency of Pollux (Qiao et al., OSDI 2021,
// section 3.1, eq. 6: E_t(M) = (phi_t + M0) / (phi_t + M), phi_t the gradient noise scale),
// which follows from McCandlish et al. 2018 ("An Empirical Model of Large-Batch Training",
// arXiv:1812.06162, section 2.2: a step at batch B does (1 + B_noise / B)^-1 of the ideal
// step's progress). Progress P is therefore the samples trained at B0, and fewer per sample at a
// larger batch.
//
// Noise scale. B_simple(P) = tr(Sigma) / |G|^2 as KungFu's monitor estimates it (KUNGFU.md 3.1),
// measured on live runs: linear between the measured points (progress ascending), constant before
// the first and after the last. B_noise = noise_factor * B_simple: McCandlish et al. section 2.2
// equate B_noise with B_simple only where the Hessian is a multiple of the identity, so the factor
// is fitted.
//
// Accuracy. Test accuracy against progress, the learning-curve family "pow4" of Domhan et al.
// 2015 ("Speeding up Automatic Hyperparameter Optimization of Deep Neural Networks by
// Extrapolation of Learning Curves", IJCAI, table 1: c - (a x + b)^-alpha), written so that
// progress 0 is chance:
//   accuracy(P) = final - (final - chance) * (1 + P / tau)^-alpha
//
// The parameters come from a file (scripts/fit-dynamics.py fits them on fixed-batch live runs
// only):
//
//   dynamics: adaptsim-dynamics/1
//   model: fashion-mlp
//   source: "what was fitted on, by what"
//   fitted_on: {lr: 0.05, base_batch: 128, momentum: 0.9}   # the live runs' learn: settings
//   base_batch: 128                 # B0 (global samples per step)
//   noise_factor: 1.0               # B_noise / B_simple (> 0)
//   accuracy: {chance: 0.1, final: 0.89, tau_samples: 5000, alpha: 0.6}
//   noise_scale:                    # B_simple against progress (samples at B0), ascending
//     - [6400, 35.2]
//     - [12800, 52.0]
//
// Bad input is an InputError at the file, line and key.

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace adaptsim::train {

struct TrainingDynamics {
  std::string file;    // where it was read (for the manifest and messages)
  std::string model;   // the model it describes
  std::string source;  // what it was fitted on
  // The learning settings of the live runs it was fitted on (a scenario's learn: must match).
  double fitted_lr = 0, fitted_momentum = 0;
  std::int64_t fitted_base_batch = 0;
  double base_batch = 0;
  double noise_factor = 1;
  double chance = 0, final_accuracy = 0, tau_samples = 0, alpha = 0;
  std::vector<std::pair<double, double>> noise_scale;  // (progress, B_simple), ascending

  // B_simple at progress p (interpolated; constant beyond the points).
  double b_simple(double progress) const;
  // Pollux's efficiency of global batch `batch` at progress p, relative to base_batch.
  double efficiency(double batch, double progress) const;
  // Progress after one step at global batch `batch` from progress p.
  double advance(double progress, double batch) const;
  double accuracy(double progress) const;
};

TrainingDynamics parse_training_dynamics(const std::string& yaml_text, const std::string& label);
TrainingDynamics load_training_dynamics(const std::filesystem::path& path);

}  // namespace adaptsim::train
