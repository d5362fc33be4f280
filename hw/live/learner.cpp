#include "hw/live/learner.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

#include "sim/core/error.h"

namespace adaptsim::live {

Learner::Learner(const train::Model& model, const train::LearnSpec& spec,
                 std::shared_ptr<const learn::FashionMnist> data, int batch_per_worker, int rank,
                 int workers, std::uint64_t seed)
    : data_(std::move(data)),
      mlp_(learn::MlpOptions{.seed = seed}),
      sgd_(mlp_.parameter_count(),
           learn::SgdOptions{.momentum = spec.momentum, .weight_decay = spec.weight_decay}),
      batch_(batch_per_worker),
      rank_(rank),
      workers_(workers),
      seed_(seed) {
  if (!data_) throw std::invalid_argument("Learner: no data set");
  const std::size_t layers = mlp_.layer_count();
  auto not_mlp = [&](const std::string& why) {
    return InputError("model '" + model.name + "' is not sim/learn's MLP (" + why + ")");
  };
  if (model.layers.size() != layers) {
    throw not_mlp(std::to_string(model.layers.size()) + " layers, the MLP has " +
                  std::to_string(layers));
  }
  const std::vector<int>& sizes = mlp_.layer_sizes();
  offsets_.assign(model.backward_order.size(), 0);
  zoo_layer_of_.assign(layers, 0);
  for (std::size_t b = 0; b < layers; ++b) {
    const std::size_t l = layers - 1 - b;
    const train::Layer& layer = model.layers[b];
    const std::string name = "fc" + std::to_string(l + 1);
    if (layer.name != name || layer.tensor_count != 2) {
      throw not_mlp("layer " + std::to_string(b) + " is '" + layer.name + "' with " +
                    std::to_string(layer.tensor_count) + " tensors, expected " + name +
                    " with a weight and a bias");
    }
    zoo_layer_of_[l] = b;
    const auto rows = static_cast<std::uint64_t>(sizes[l + 1]);
    const auto cols = static_cast<std::uint64_t>(sizes[l]);
    for (std::size_t i = 0; i < layer.tensor_count; ++i) {
      const std::size_t t = layer.first_tensor + i;
      const train::Tensor& tensor = model.backward_order[t];
      const bool weight = tensor.name == name + ".weight";
      if (!weight && tensor.name != name + ".bias") throw not_mlp("tensor '" + tensor.name + "'");
      const std::uint64_t expected = weight ? rows * cols : rows;
      if (tensor.elements != expected) {
        throw not_mlp("tensor '" + tensor.name + "' of " + std::to_string(tensor.elements) +
                      " elements, expected " + std::to_string(expected));
      }
      offsets_[t] = weight ? mlp_.weight_offset(l) : mlp_.bias_offset(l);
    }
  }
  rule_.base_lr = spec.lr;
  rule_.base_batch =
      spec.base_batch > 0 ? spec.base_batch : static_cast<std::int64_t>(global_batch());
  rule_.warmup_steps = spec.warmup_steps;
  learn::validate(rule_);
  for (const train::Tensor& t : model.backward_order)
    elements_.push_back(t.elements);
  set_members(rank, workers);
  order_ = learn::epoch_permutation(data_->train.size(), seed_, 0);
  mean_.resize(mlp_.parameter_count());
}

void Learner::set_members(int rank, int workers) {
  if (workers < 1 || rank < 0 || rank >= workers)
    throw std::invalid_argument("Learner::set_members: rank out of the cluster");
  rank_ = rank;
  workers_ = workers;
  const std::size_t n = data_->train.size();
  if (global_batch() > n) {
    throw InputError("the global batch (" + std::to_string(batch_) + " x " +
                     std::to_string(workers) + " workers) exceeds the " + std::to_string(n) +
                     " training samples");
  }
}

void Learner::set_batch(int batch_per_worker) {
  if (batch_per_worker < 1) throw std::invalid_argument("Learner::set_batch: batch < 1");
  if (batch_per_worker == batch_) return;
  batch_ = batch_per_worker;
  set_members(rank_, workers_);  // checks the global batch against the training set
}

std::pair<std::uint64_t, std::uint64_t> Learner::data_position() const {
  return {epoch_ * data_->train.size() + next_, samples_};
}

void Learner::set_data_position(std::uint64_t cursor, std::uint64_t samples) {
  epoch_ = cursor / data_->train.size();
  next_ = cursor % data_->train.size();
  samples_ = samples;
}

std::size_t Learner::batch_start() {
  if (next_ + global_batch() > data_->train.size()) {
    ++epoch_;  // the rest of this epoch is the dropped partial batch
    next_ = 0;
  }
  if (order_epoch_ != epoch_) {
    order_ = learn::epoch_permutation(data_->train.size(), seed_, epoch_);
    order_epoch_ = epoch_;
  }
  return next_;
}

double Learner::compute_gradient(int step, std::span<float> gradient,
                                 const std::function<void(std::size_t)>& layer_done) {
  (void)step;  // the cursor says which samples
  const std::size_t start = batch_start() + static_cast<std::size_t>(rank_) * batch_;
  const std::span<const std::uint32_t> shard =
      std::span<const std::uint32_t>(order_).subspan(start, static_cast<std::size_t>(batch_));
  return mlp_.loss_and_gradient(data_->train, shard, gradient, [&](std::size_t l) {
    if (layer_done) layer_done(zoo_layer_of_[l]);
  });
}

// Zoo tensor `tensor`'s element count and offset in the flat layout, once `size` is checked to be
// its state's (parameters x `copies`, 1 or 2).
std::pair<std::size_t, std::size_t> Learner::state_slot(std::size_t tensor, int copies,
                                                        std::size_t size) const {
  const std::size_t n = elements_.at(tensor);
  if (size != n * static_cast<std::size_t>(copies) || copies < 1 || copies > 2)
    throw std::invalid_argument("Learner: a tensor's state is its parameters x copies (1 or 2)");
  return {n, offsets_.at(tensor)};
}

void Learner::read_state(std::size_t tensor, int copies, std::span<float> out) const {
  const auto [n, at] = state_slot(tensor, copies, out.size());
  std::copy_n(mlp_.params().begin() + static_cast<std::ptrdiff_t>(at), n, out.begin());
  if (copies == 2) {
    std::copy_n(sgd_.velocity().begin() + static_cast<std::ptrdiff_t>(at), n,
                out.begin() + static_cast<std::ptrdiff_t>(n));
  }
}

void Learner::write_state(std::size_t tensor, int copies, std::span<const float> in) {
  const auto [n, at] = state_slot(tensor, copies, in.size());
  std::copy_n(in.begin(), n, mlp_.params().begin() + static_cast<std::ptrdiff_t>(at));
  if (copies == 2) {
    std::copy_n(in.begin() + static_cast<std::ptrdiff_t>(n), n,
                sgd_.velocity().begin() + static_cast<std::ptrdiff_t>(at));
  }
}

double Learner::learning_rate(int step) const {
  return learn::learning_rate(rule_, static_cast<std::int64_t>(global_batch()), step);
}

void Learner::apply(int step, std::span<const float> reduced_sum) {
  if (reduced_sum.size() != mean_.size()) {
    throw std::invalid_argument("Learner::apply: " + std::to_string(reduced_sum.size()) +
                                " gradient elements, model of " + std::to_string(mean_.size()));
  }
  const auto n = static_cast<float>(workers_);
  for (std::size_t i = 0; i < mean_.size(); ++i)
    mean_[i] = reduced_sum[i] / n;
  sgd_.step(mlp_.params(), mean_, learning_rate(step));
  next_ = batch_start() + global_batch();
  samples_ += global_batch();
}

std::uint64_t Learner::params_hash() const {
  std::uint64_t h = 14695981039346656037ULL;  // FNV-1a 64-bit offset basis
  for (float x : mlp_.params()) {
    std::uint32_t word;
    std::memcpy(&word, &x, sizeof word);
    h ^= word;
    h *= 1099511628211ULL;  // FNV-1a 64-bit prime
  }
  return h;
}

}  // namespace adaptsim::live
