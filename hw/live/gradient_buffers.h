#pragma once
// A live worker's gradients: one real float32 send buffer (this rank's gradient) and one receive
// buffer (the reduced gradient) per tensor of the model, at the model's exact element counts.
//
// Values are small integers that depend on the rank, tensor and element,
//   g_r[t][i] = 1 + (31 r + 7 t + i) mod 13,
// so every sum over ranks is exact in float32 (at most 13 n < 2^24) and a misplaced chunk, a
// missing or doubled rank, or a stale buffer shows up as a wrong value. After each step the
// received values are compared with the exact sums and then poisoned with NaN, so a gradient that
// a later step fails to write cannot pass as reduced.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "sim/coll/allreduce.h"
#include "sim/train/model_zoo.h"

namespace adaptsim::live {

class GradientBuffers {
 public:
  // Allocates and fills the buffers of `model` for `rank` of `size` ranks.
  GradientBuffers(const train::Model& model, int rank, int size);
  // Real gradients (a live run that learns, learner.h): tensor t lies at offsets[t] of one flat
  // pair of buffers of `total` floats in the learner's parameter layout, zero-filled; the learner
  // writes the rank's gradient into flat_send() and reads the sum over ranks from flat_recv().
  // The tensors must tile the buffer exactly (std::invalid_argument otherwise). There is no
  // synthetic pattern: verify_and_poison is refused.
  GradientBuffers(const train::Model& model, int rank, int size,
                  const std::vector<std::size_t>& offsets, std::size_t total);
  bool synthetic() const { return synthetic_; }
  std::span<float> flat_send() { return {send_.get(), total_}; }
  std::span<const float> flat_recv() const { return {recv_.get(), total_}; }

  std::size_t tensors() const { return offset_.size(); }
  std::size_t elements(std::size_t tensor) const { return count_[tensor]; }
  std::uint64_t bytes() const { return total_ * sizeof(float); }  // one copy of every gradient
  const std::string& name(std::size_t tensor) const { return names_[tensor]; }

  const float* send(std::size_t tensor) const { return send_.get() + offset_[tensor]; }
  float* recv(std::size_t tensor) { return recv_.get() + offset_[tensor]; }

  // The all-reduce of tensor `t` in place: named after the parameter (as KungFu names its ops),
  // float32 sum, send -> recv.
  coll::Workspace workspace(std::size_t tensor);

  // The variance monitor's second all-reduce (KUNGFU.md 3.2): square() writes every element's
  // square (buffers allocated on first use); squared_workspace(t) all-reduces tensor t's squares
  // (named "<parameter>/sq", float32 sum); variance_norm_sum() then gives the sum over tensors of
  // ||Var||_2 with Var = E[g^2] - E[g]^2 over the ranks (hw::gradient_variance_from_moments, from
  // the reduced squares and the reduced gradient, each divided by the rank count).
  void square();
  coll::Workspace squared_workspace(std::size_t tensor);
  double variance_norm_sum();

  // An elastic run's cluster changed: the gradients are now summed over `members`, the ids whose
  // patterns the contributions follow (this buffer's own id, the `rank` it was made with, among
  // them). Default: 0..size-1.
  void set_members(std::vector<int> members);

  // Compares every received gradient with the exact sum over ranks, then poisons it. Throws
  // RuntimeFailure naming the rank, step, tensor and element of the first mismatch (and
  // std::logic_error for real gradients).
  void verify_and_poison(int step);

  // The value rank `rank` contributes at element `i` of tensor `tensor`.
  static float value(int rank, std::size_t tensor, std::size_t i);

 private:
  int rank_;
  int size_;
  std::vector<int> members_;  // whose contributions a reduced value sums
  bool synthetic_ = true;
  std::vector<std::string> names_;
  std::vector<std::size_t> offset_, count_;
  std::size_t total_ = 0;
  std::unique_ptr<float[]> send_, recv_;
  std::unique_ptr<float[]> sq_send_, sq_recv_;  // the variance monitor's, once asked for
};

}  // namespace adaptsim::live
