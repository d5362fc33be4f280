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
// Data: a cursor walks epoch after epoch of the training set, each visited in the order of
// sim/learn/dataset.h's epoch_permutation with the run's seed; a step takes the next global batch
// of G = B N samples (B per worker, N workers), worker r its r-th slice of B, and when fewer than G
// samples are left in the epoch they are dropped and the next epoch begins. With N fixed, step k
// is global batch k mod S of epoch k div S, S = floor(n / G) (EpochShards' batches), so N ranks
// follow the single-process run of batch B N up to float rounding in the sum. In an elastic run
// N and r change between steps (set_members), and a new worker takes the cursor and the count of
// samples trained from the running workers (data_position: the offset KungFu's ElasticHook agrees
// on by all_reduce(trained_samples, max)) and their parameters and momentum (read_state,
// write_state). A policy may change the batch per worker between steps (set_batch): the cursor
// takes global batches of the new size from where it stands, and the learning rate follows the
// global batch (the linear scaling rule).
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
  // This worker's slice and the cluster's size from the next step on (an elastic run's resize).
  void set_members(int rank, int workers);
  // The batch per worker from the next step on (an adaptive-batch policy's change); InputError
  // when the global batch would exceed the training set.
  void set_batch(int batch_per_worker);
  // The data cursor (epoch x n + the next sample's index in the epoch) and the samples trained so
  // far; the larger of each over the workers is the running workers' (a new one has 0, 0).
  std::pair<std::uint64_t, std::uint64_t> data_position() const;
  void set_data_position(std::uint64_t cursor, std::uint64_t samples);
  std::uint64_t samples_trained() const { return samples_; }
  // Zoo tensor t's parameters followed, with `copies` 2, by its momentum (the state an elastic
  // run broadcasts: parameters x copies floats), copied out of or into the learner.
  void read_state(std::size_t tensor, int copies, std::span<float> out) const;
  void write_state(std::size_t tensor, int copies, std::span<const float> in);
  // Zoo tensor t's offset in the flat layout (for GradientBuffers).
  const std::vector<std::size_t>& tensor_offsets() const { return offsets_; }
  std::size_t global_batch() const { return static_cast<std::size_t>(batch_) * workers_; }
  // Whole global batches in an epoch at the current cluster size.
  std::size_t steps_per_epoch() const { return data_->train.size() / global_batch(); }

  // Step `step`'s forward and backward on this rank's shard of the next global batch, the
  // gradient into `gradient`
  // (parameter_count() floats); layer_done(b) once zoo layer b's tensors are written, b = 0, 1,
  // ... (backward order). Returns the shard's mean loss.
  double compute_gradient(int step, std::span<float> gradient,
                          const std::function<void(std::size_t zoo_layer)>& layer_done);
  // The update of step `step` from the SUM over workers of their gradients; the cursor moves past
  // the step's global batch.
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
  std::vector<std::uint64_t> elements_;    // by zoo tensor
  std::vector<std::size_t> zoo_layer_of_;  // by MLP layer
  // The cursor: the epoch and the next sample's index in its order; the samples trained.
  std::uint64_t epoch_ = 0;
  std::size_t next_ = 0;
  std::uint64_t samples_ = 0;
  std::vector<std::uint32_t> order_;  // epoch order_epoch_'s permutation
  std::uint64_t order_epoch_ = 0;
  // The epoch and index where the next global batch starts (the cursor, or the next epoch's
  // start when the rest is too short), that epoch's order made current.
  std::size_t batch_start();
  std::pair<std::size_t, std::size_t> state_slot(std::size_t tensor, int copies,
                                                 std::size_t size) const;
  std::vector<float> mean_;  // the averaged gradient, scratch of apply()
};

}  // namespace adaptsim::live
