#include "hw/live/gradient_buffers.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

#include "hw/cuda/reference_kernels.h"
#include "sim/core/error.h"

namespace adaptsim::live {
namespace {

constexpr std::size_t kPeriod = 13;

// Phase of element 0 of `tensor` on `rank` in the period-13 pattern.
std::size_t phase(int rank, std::size_t tensor) {
  return (31 * static_cast<std::size_t>(rank) + 7 * tensor) % kPeriod;
}

}  // namespace

float GradientBuffers::value(int rank, std::size_t tensor, std::size_t i) {
  return static_cast<float>(1 + (phase(rank, tensor) + i) % kPeriod);
}

void GradientBuffers::set_members(std::vector<int> members) {
  size_ = static_cast<int>(members.size());
  members_ = std::move(members);
}

GradientBuffers::GradientBuffers(const train::Model& model, int rank, int size)
    : rank_(rank), size_(size) {
  for (int r = 0; r < size; ++r)
    members_.push_back(r);
  for (const train::Tensor& t : model.backward_order) {
    names_.push_back(t.name);
    offset_.push_back(total_);
    count_.push_back(t.elements);
    total_ += t.elements;
  }
  send_ = std::make_unique<float[]>(total_);
  recv_ = std::make_unique<float[]>(total_);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (std::size_t t = 0; t < tensors(); ++t) {
    float* s = send_.get() + offset_[t];
    std::size_t k = phase(rank_, t);
    for (std::size_t i = 0; i < count_[t]; ++i) {
      s[i] = static_cast<float>(1 + k);
      k = k + 1 == kPeriod ? 0 : k + 1;
    }
    std::fill(recv_.get() + offset_[t], recv_.get() + offset_[t] + count_[t], nan);
  }
}

GradientBuffers::GradientBuffers(const train::Model& model, int rank, int size,
                                 const std::vector<std::size_t>& offsets, std::size_t total)
    : rank_(rank), size_(size), synthetic_(false), total_(total) {
  if (offsets.size() != model.backward_order.size()) {
    throw std::invalid_argument("GradientBuffers: " + std::to_string(offsets.size()) +
                                " offsets for " + std::to_string(model.backward_order.size()) +
                                " tensors");
  }
  // Tiling: sorted by offset, each tensor starts where the previous one ended.
  std::vector<std::pair<std::size_t, std::size_t>> spans;
  for (std::size_t t = 0; t < offsets.size(); ++t) {
    const train::Tensor& x = model.backward_order[t];
    names_.push_back(x.name);
    offset_.push_back(offsets[t]);
    count_.push_back(x.elements);
    spans.emplace_back(offsets[t], x.elements);
  }
  std::sort(spans.begin(), spans.end());
  std::size_t at = 0;
  for (const auto& [offset, count] : spans) {
    if (offset != at)
      throw std::invalid_argument("GradientBuffers: tensors do not tile the buffer");
    at += count;
  }
  if (at != total_) throw std::invalid_argument("GradientBuffers: tensors do not tile the buffer");
  send_ = std::make_unique<float[]>(total_);
  recv_ = std::make_unique<float[]>(total_);
  std::fill(send_.get(), send_.get() + total_, 0.0f);
  std::fill(recv_.get(), recv_.get() + total_, 0.0f);
}

coll::Workspace GradientBuffers::workspace(std::size_t tensor) {
  coll::Workspace w;
  w.name = names_[tensor];
  w.count = count_[tensor];
  w.dtype = coll::DType::kF32;
  w.op = coll::ReduceOp::kSum;
  w.send = {reinterpret_cast<const std::byte*>(send(tensor)), w.count * sizeof(float)};
  w.recv = {reinterpret_cast<std::byte*>(recv(tensor)), w.count * sizeof(float)};
  return w;
}

void GradientBuffers::square() {
  if (!sq_send_) {
    sq_send_ = std::make_unique<float[]>(total_);
    sq_recv_ = std::make_unique<float[]>(total_);
  }
  for (std::size_t i = 0; i < total_; ++i)
    sq_send_[i] = send_[i] * send_[i];
}

coll::Workspace GradientBuffers::squared_workspace(std::size_t tensor) {
  if (!sq_send_) throw std::logic_error("GradientBuffers: squared_workspace before square()");
  coll::Workspace w;
  w.name = names_[tensor] + "/sq";
  w.count = count_[tensor];
  w.dtype = coll::DType::kF32;
  w.op = coll::ReduceOp::kSum;
  w.send = {reinterpret_cast<const std::byte*>(sq_send_.get() + offset_[tensor]),
            w.count * sizeof(float)};
  w.recv = {reinterpret_cast<std::byte*>(sq_recv_.get() + offset_[tensor]),
            w.count * sizeof(float)};
  return w;
}

double GradientBuffers::variance_norm_sum() {
  if (!sq_recv_) throw std::logic_error("GradientBuffers: variance_norm_sum before square()");
  const float k = static_cast<float>(size_);
  double sum = 0;
  // One pass per tensor over the two reduced buffers, the variance written over the squares
  // (nothing reads them after): no per-call buffers, whose allocation and zeroing made this
  // 50 ms for MobileNetV2 where the kernel itself takes 3.
  for (std::size_t t = 0; t < tensors(); ++t) {
    const std::size_t n = count_[t];
    const std::span<float> sq(sq_recv_.get() + offset_[t], n);
    sum += hw::gradient_variance_from_sums(sq, sq, {recv(t), n}, k);
  }
  return sum;
}

void GradientBuffers::verify_and_poison(int step) {
  if (!synthetic_) throw std::logic_error("GradientBuffers: no exact sum to check real gradients");
  const float nan = std::numeric_limits<float>::quiet_NaN();
  // Element i of tensor t sums 1 + (31 r + k) mod 13 over ranks r, with k = (7 t + i) mod 13.
  std::array<float, kPeriod> expected{};
  for (std::size_t k = 0; k < kPeriod; ++k) {
    double sum = 0;
    for (int r : members_)
      sum += 1 + (31 * static_cast<std::size_t>(r) + k) % kPeriod;
    expected[k] = static_cast<float>(sum);
  }
  for (std::size_t t = 0; t < tensors(); ++t) {
    float* g = recv(t);
    std::size_t k = (7 * t) % kPeriod;
    for (std::size_t i = 0; i < count_[t]; ++i) {
      if (g[i] != expected[k]) {
        throw RuntimeFailure("rank " + std::to_string(rank_) + ": step " + std::to_string(step) +
                             ": gradient '" + names_[t] + "' (tensor " + std::to_string(t) +
                             ") element " + std::to_string(i) + " is " + std::to_string(g[i]) +
                             " after the all-reduce, expected the sum over " +
                             std::to_string(size_) + " ranks " + std::to_string(expected[k]));
      }
      g[i] = nan;
      k = k + 1 == kPeriod ? 0 : k + 1;
    }
  }
}

}  // namespace adaptsim::live
