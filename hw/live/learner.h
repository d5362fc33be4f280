#pragma once
// A live rank's real training (adaptsim-live's learn mode, LiveConfig::learn): sim/learn's MLP on
// the rank's shard of every step's global batch of Fashion-MNIST. The live environment
// (live_env.h) calls it on its compute thread where it would otherwise emulate compute:
//   - compute_gradient: forward and backward of step k's shard, the batch-mean gradient written
//     straight into the rank's gradient buffers (GradientBuffers' flat layout is the MLP's), each
//     layer announced as soon as its gradient is written, so its all-reduce starts while the
//     layers below are computed;
//   - apply: SGD (momentum, weight decay, the linear scaling rule at the GLOBAL batch) with the
//     reduced gradient divided by the number of workers (the systems all-reduce a SUM; each shard
//     gradient is a mean over equal shards, so sum / N is the global batch's mean gradient);
//   - evaluate, params_hash: the test set, and a hash of the parameters' bytes that every rank
//     compares after each step (LiveEnv::between_steps).
//
// Data: step k of a run with B samples per worker and N workers is global batch k mod S of epoch
// k div S, S = floor(n / (B N)) (sim/learn/dataset.h's EpochShards with the run's seed; the
// partial batch of each epoch dropped): the same samples for any N at the same global batch, so
// N ranks follow the single-process run of batch B N up to float rounding in the sum. The batch is
// fixed for the run (a policy that changes it is refused: LiveConfig's validation).
//
// The model's tensors (the zoo's fashion-mlp, backward order: fc3.bias, fc3.weight, ...) map onto
// the MLP's flat parameter layout by layer and name: zoo layer b is MLP layer L-1-b, named
// fc<L-b>, its ".weight" and ".bias" at Mlp::weight_offset and bias_offset.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "sim/learn/dataset.h"
#include "sim/learn/mlp.h"
#include "sim/learn/sgd.h"
#include "sim/train/learn_spec.h"
#include "sim/train/model_zoo.h"

namespace adaptsim::live {

class Learner {
 public:
  // Throws InputError when `model` is not the MLP's tensors (names, element counts), or the
  // global batch exceeds the training set.
  Learner(const train::Model& model, const train::LearnSpec& spec,
          std::shared_ptr<const learn::FashionMnist> data, int batch_per_worker, int rank,
          int workers, std::uint64_t seed);

  std::size_t parameter_count() const { return mlp_.parameter_count(); }
  // Zoo tensor t's offset in the flat layout (for GradientBuffers).
  const std::vector<std::size_t>& tensor_offsets() const { return offsets_; }
  std::size_t global_batch() const { return static_cast<std::size_t>(batch_) * workers_; }
  std::size_t steps_per_epoch() const { return steps_per_epoch_; }

  // Step `step`'s forward and backward on this rank's shard, the gradient into `gradient`
  // (parameter_count() floats); layer_done(b) once zoo layer b's tensors are written, b = 0, 1,
  // ... (backward order). Returns the shard's mean loss.
  double compute_gradient(int step, std::span<float> gradient,
                          const std::function<void(std::size_t zoo_layer)>& layer_done);
  // The update of step `step` from the SUM over workers of their gradients.
  void apply(int step, std::span<const float> reduced_sum);
  // The learning rate of step `step` (the linear scaling rule at the global batch).
  double learning_rate(int step) const;

  learn::Evaluation evaluate() const { return mlp_.evaluate(data_->test); }
  // 64-bit FNV-1a over the parameters' 32-bit words: equal parameters give equal hashes; ranks
  // that diverge by one bit differ (barring a 2^-64 collision).
  std::uint64_t params_hash() const;
  std::span<const float> params() const { return mlp_.params(); }

 private:
  std::shared_ptr<const learn::FashionMnist> data_;
  learn::Mlp mlp_;
  learn::Sgd sgd_;
  learn::LrRule rule_;
  int batch_;
  int rank_;
  int workers_;
  std::uint64_t seed_;
  std::vector<std::size_t> offsets_;
  std::vector<std::size_t> zoo_layer_of_;  // by MLP layer
  std::size_t steps_per_epoch_ = 0;
  std::optional<learn::EpochShards> shards_;  // the current epoch's
  std::uint64_t epoch_ = 0;
  std::vector<float> mean_;  // the averaged gradient, scratch of apply()
};

}  // namespace adaptsim::live
