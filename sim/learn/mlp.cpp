#include "sim/learn/mlp.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "sim/core/error.h"
#include "sim/core/rng.h"

namespace adaptsim::learn {

Mlp::Mlp(const MlpOptions& options) : sizes_(options.layer_sizes) {
  if (sizes_.size() < 2) {
    throw InputError("MLP layer sizes: expected at least 2 (input and classes), found " +
                     std::to_string(sizes_.size()));
  }
  for (std::size_t l = 0; l < sizes_.size(); ++l) {
    if (sizes_[l] <= 0) {
      throw InputError("MLP layer size " + std::to_string(sizes_[l]) + " at position " +
                       std::to_string(l) + ": expected > 0");
    }
  }
  std::size_t count = 0;
  for (std::size_t l = 0; l < layers(); ++l) {
    offsets_.push_back(count);
    const auto fan_in = static_cast<std::size_t>(sizes_[l]);
    const auto fan_out = static_cast<std::size_t>(sizes_[l + 1]);
    count += fan_out * fan_in + fan_out;
  }
  params_.assign(count, 0.0f);
  Rng rng(options.seed);
  for (std::size_t l = 0; l < layers(); ++l) {
    const double stddev = std::sqrt(2.0 / sizes_[l]);  // He et al. 2015, eq. 10
    const std::size_t n_weights = static_cast<std::size_t>(sizes_[l + 1]) * sizes_[l];
    for (std::size_t i = 0; i < n_weights; ++i) {
      params_[offsets_[l] + i] = static_cast<float>(rng.normal(0.0, stddev));
    }
    // The biases after the weights stay 0.
  }
}

Mlp::ConstMatrixMap Mlp::weight(std::size_t l) const {
  return ConstMatrixMap(params_.data() + offsets_[l], sizes_[l + 1], sizes_[l]);
}

Mlp::ConstVectorMap Mlp::bias(std::size_t l) const {
  const std::size_t n_weights = static_cast<std::size_t>(sizes_[l + 1]) * sizes_[l];
  return ConstVectorMap(params_.data() + offsets_[l] + n_weights, sizes_[l + 1]);
}

void Mlp::gather(const Dataset& data, std::span<const std::uint32_t> indices, Matrix& x,
                 std::vector<int>& labels) const {
  if (indices.empty()) throw std::invalid_argument("Mlp: empty batch");
  if (data.pixels_per_sample() != static_cast<std::size_t>(sizes_[0])) {
    throw std::invalid_argument("Mlp: samples of " + std::to_string(data.pixels_per_sample()) +
                                " pixels, input layer of " + std::to_string(sizes_[0]));
  }
  x.resize(sizes_[0], static_cast<Eigen::Index>(indices.size()));
  labels.resize(indices.size());
  for (std::size_t c = 0; c < indices.size(); ++c) {
    const std::span<const float> image = data.image(indices[c]);
    std::copy(image.begin(), image.end(), x.col(static_cast<Eigen::Index>(c)).data());
    labels[c] = data.label(indices[c]);
  }
}

void Mlp::forward(std::vector<Matrix>& activations) const {
  for (std::size_t l = 0; l < layers(); ++l) {
    Matrix& out = activations[l + 1];
    out.noalias() = weight(l) * activations[l];
    out.colwise() += bias(l);
    if (l + 1 < layers()) out = out.cwiseMax(0.0f);  // ReLU on the hidden layers
  }
}

double Mlp::sum_cross_entropy(const Matrix& logits, const std::vector<int>& labels,
                              std::size_t* correct) {
  double sum = 0;
  for (Eigen::Index c = 0; c < logits.cols(); ++c) {
    // log sum_k exp(z_k) = m + log sum_k exp(z_k - m) with m = max_k z_k: no term overflows and
    // the largest is exp(0) = 1, so the log's argument is in [1, classes].
    Eigen::Index arg_max = 0;
    const double m = logits.col(c).maxCoeff(&arg_max);
    double s = 0;
    for (Eigen::Index k = 0; k < logits.rows(); ++k)
      s += std::exp(static_cast<double>(logits(k, c)) - m);
    const int label = labels[static_cast<std::size_t>(c)];
    sum += m + std::log(s) - static_cast<double>(logits(label, c));
    if (correct != nullptr && arg_max == label) ++*correct;
  }
  return sum;
}

double Mlp::loss_and_gradient(const Dataset& data, std::span<const std::uint32_t> indices,
                              std::span<float> gradient,
                              const std::function<void(std::size_t layer)>& layer_done) {
  if (gradient.size() != params_.size()) {
    throw std::invalid_argument("Mlp: gradient buffer of " + std::to_string(gradient.size()) +
                                " floats, model of " + std::to_string(params_.size()));
  }
  activations_.resize(sizes_.size());
  gather(data, indices, activations_[0], labels_);
  forward(activations_);
  const Matrix& logits = activations_.back();
  const auto batch = static_cast<double>(indices.size());
  const double loss = sum_cross_entropy(logits, labels_, nullptr) / batch;

  // dL/dz for the mean loss: (softmax(z) - onehot(label)) / batch, per column.
  delta_.resize(logits.rows(), logits.cols());
  for (Eigen::Index c = 0; c < logits.cols(); ++c) {
    const double m = logits.col(c).maxCoeff();
    double s = 0;
    for (Eigen::Index k = 0; k < logits.rows(); ++k) {
      const double e = std::exp(static_cast<double>(logits(k, c)) - m);
      delta_(k, c) = static_cast<float>(e);
      s += e;
    }
    for (Eigen::Index k = 0; k < logits.rows(); ++k)
      delta_(k, c) = static_cast<float>(delta_(k, c) / s / batch);
    delta_(labels_[static_cast<std::size_t>(c)], c) -= static_cast<float>(1.0 / batch);
  }

  for (std::size_t l = layers(); l-- > 0;) {
    const Eigen::Index rows = sizes_[l + 1];
    const Eigen::Index cols = sizes_[l];
    MatrixMap grad_w(gradient.data() + offsets_[l], rows, cols);
    Eigen::Map<Eigen::VectorXf> grad_b(gradient.data() + offsets_[l] + rows * cols, rows);
    grad_w.noalias() = delta_ * activations_[l].transpose();
    grad_b = delta_.rowwise().sum();
    // The rest of the pass reads delta_ and the weights, never the gradient buffer.
    if (layer_done) layer_done(l);
    if (l == 0) break;  // no gradient for the input
    // Through W_{l+1}, then ReLU's derivative: 1 where the hidden unit was active (> 0), else 0.
    delta_prev_.noalias() = weight(l).transpose() * delta_;
    delta_prev_.array() *= (activations_[l].array() > 0.0f).cast<float>();
    delta_.swap(delta_prev_);
  }
  return loss;
}

double Mlp::loss(const Dataset& data, std::span<const std::uint32_t> indices) const {
  std::vector<Matrix> activations(sizes_.size());
  std::vector<int> labels;
  gather(data, indices, activations[0], labels);
  forward(activations);
  return sum_cross_entropy(activations.back(), labels, nullptr) /
         static_cast<double>(indices.size());
}

Evaluation Mlp::evaluate(const Dataset& data, std::size_t batch) const {
  if (batch == 0) throw std::invalid_argument("Mlp::evaluate: batch 0");
  if (data.size() == 0) throw std::invalid_argument("Mlp::evaluate: empty data set");
  std::vector<Matrix> activations(sizes_.size());
  std::vector<int> labels;
  std::vector<std::uint32_t> indices;
  double loss_sum = 0;
  std::size_t correct = 0;
  for (std::size_t start = 0; start < data.size(); start += batch) {
    const std::size_t n = std::min(batch, data.size() - start);
    indices.resize(n);
    for (std::size_t i = 0; i < n; ++i)
      indices[i] = static_cast<std::uint32_t>(start + i);
    gather(data, indices, activations[0], labels);
    forward(activations);
    loss_sum += sum_cross_entropy(activations.back(), labels, &correct);
  }
  const auto n = static_cast<double>(data.size());
  return {loss_sum / n, static_cast<double>(correct) / n};
}

}  // namespace adaptsim::learn
