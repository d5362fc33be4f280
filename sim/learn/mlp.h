#pragma once
// A multi-layer perceptron classifier trained for real: layer sizes d_0 (the input, 784 for
// Fashion-MNIST) -> d_1 -> ... -> d_L (the classes, 10), ReLU after every layer but the last,
// softmax cross-entropy loss. Float32 parameters, Eigen matrices, one thread (Eigen's products
// run in parallel only under OpenMP, which this build does not enable).
//
// Flat parameter layout (the order of params() and of every gradient buffer, the order the live
// runtime all-reduces): for layer l = 1..L in order, first W_l, a d_l x d_{l-1} matrix stored
// column-major (element (i, j) at offset i + j * d_l: Eigen's default order), then b_l (d_l
// floats). parameter_count() = sum over l of d_l * d_{l-1} + d_l; for the default 784-256-128-10
// that is 200960 + 32896 + 1290 = 235146 floats.
//
// Gradient: loss_and_gradient() writes the MEAN over the batch of the per-sample gradients, so
// that N workers' shard gradients (equal shard sizes) averaged are the gradient of the global
// batch, which is what an all-reduce (sum) followed by a division by N yields.
//
// Initialisation (He, Zhang, Ren and Sun 2015, "Delving Deep into Rectifiers", ICCV, eq. 10):
// W_l ~ N(0, 2 / d_{l-1}) (standard deviation sqrt(2 / fan_in)), b_l = 0, drawn from Rng(seed)
// in the flat order: the same seed gives the same parameters (sim/core/rng.h: the generator and
// the normal distribution are the project's own, not the standard library's).

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include <Eigen/Core>

#include "sim/learn/dataset.h"

namespace adaptsim::learn {

struct MlpOptions {
  // d_0, d_1, ..., d_L: input, hidden layers, classes. At least two entries, each > 0.
  std::vector<int> layer_sizes = {kImageRows * kImageCols, 256, 128, kClasses};
  std::uint64_t seed = 1;
};

// Loss and accuracy of a model on a data set.
struct Evaluation {
  double mean_loss = 0;  // mean softmax cross-entropy, nats
  double accuracy = 0;   // fraction of samples whose arg-max class is the label, in [0, 1]
};

class Mlp {
 public:
  // Throws InputError for fewer than two layer sizes or a size <= 0.
  explicit Mlp(const MlpOptions& options = {});

  const std::vector<int>& layer_sizes() const { return sizes_; }
  std::size_t parameter_count() const { return params_.size(); }
  // The parameters in the flat layout (see the top). Writing through the span changes the model.
  std::span<float> params() { return params_; }
  std::span<const float> params() const { return params_; }
  // L, the number of weight layers; layer l (0-based) holds W_{l+1} and b_{l+1}.
  std::size_t layer_count() const { return sizes_.size() - 1; }
  // Where layer l's weight matrix and bias vector start in params() (the flat layout above).
  std::size_t weight_offset(std::size_t l) const { return offsets_.at(l); }
  std::size_t bias_offset(std::size_t l) const {
    return offsets_.at(l) + static_cast<std::size_t>(sizes_[l + 1]) * sizes_[l];
  }

  // Mean softmax cross-entropy (nats) of the samples `indices` of `data`, and its gradient with
  // respect to params(), averaged over the batch, written to `gradient` (parameter_count()
  // floats, overwritten). The data's pixels_per_sample() must be layer_sizes()[0] and `indices`
  // non-empty (std::invalid_argument otherwise). `layer_done(l)`, when given, runs as soon as
  // layer l's gradient (W_{l+1} and b_{l+1}, 0-based l) is written, for l = L-1 down to 0 (the
  // backward pass's order): a data-parallel caller hands each layer's gradient to its all-reduce
  // while the layers below are still computed, as a framework's gradient-ready hooks do (the
  // rest of the call never reads the gradient buffer). It must not change params().
  double loss_and_gradient(const Dataset& data, std::span<const std::uint32_t> indices,
                           std::span<float> gradient,
                           const std::function<void(std::size_t layer)>& layer_done = {});
  // The loss alone (no gradient), accumulated in double: for finite-difference checks.
  double loss(const Dataset& data, std::span<const std::uint32_t> indices) const;

  // Loss and accuracy over the whole of `data`, forward passes of `batch` samples at a time.
  Evaluation evaluate(const Dataset& data, std::size_t batch = 1000) const;

 private:
  using Matrix = Eigen::MatrixXf;
  using MatrixMap = Eigen::Map<Eigen::MatrixXf>;
  using ConstMatrixMap = Eigen::Map<const Eigen::MatrixXf>;
  using ConstVectorMap = Eigen::Map<const Eigen::VectorXf>;

  std::size_t layers() const { return sizes_.size() - 1; }
  ConstMatrixMap weight(std::size_t l) const;  // W_{l+1}
  ConstVectorMap bias(std::size_t l) const;    // b_{l+1}
  // Copies the samples into x (d_0 x batch, one column per sample) and their labels.
  void gather(const Dataset& data, std::span<const std::uint32_t> indices, Matrix& x,
              std::vector<int>& labels) const;
  // Fills activations[0..L] (activations[0] = x; activations[L] = the logits, d_L x batch).
  void forward(std::vector<Matrix>& activations) const;
  // Per-sample losses accumulated: sum over columns of log-sum-exp(logits) - logit[label].
  static double sum_cross_entropy(const Matrix& logits, const std::vector<int>& labels,
                                  std::size_t* correct);

  std::vector<int> sizes_;
  std::vector<std::size_t> offsets_;  // offsets_[l]: where W_{l+1} starts in params_
  std::vector<float> params_;
  // Scratch of loss_and_gradient(), kept between calls so a step allocates nothing.
  std::vector<Matrix> activations_;
  Matrix delta_;
  Matrix delta_prev_;
  std::vector<int> labels_;
};

}  // namespace adaptsim::learn
