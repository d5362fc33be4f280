#pragma once
// Horovod 0.16's coordination logic (horovod/common/operations.cc), as pure functions:
// rank 0's message table, which turns each cycle's per-rank reports of ready tensors into the
// tensors ready on every rank, and tensor fusion, which packs consecutive responses into one
// buffer up to the fusion threshold.

#include <cstdint>
#include <functional>
#include <map>
#include <vector>

namespace adaptsim::runtime {

class HorovodMessageTable {
 public:
  explicit HorovodMessageTable(int size) : size_(size) {}
  // One cycle's reports (reports[r] = tensors rank r newly reported, in its order). Returns the
  // tensors whose count reached the cluster size, in the order that happened: reports are
  // processed rank by rank, each in its own order.
  std::vector<std::size_t> add_cycle(const std::vector<std::vector<std::size_t>>& reports);
  std::size_t pending() const { return counts_.size(); }

 private:
  int size_;
  std::map<std::size_t, int> counts_;
};

// Consecutive tensors joined while the group stays within `threshold` bytes; a tensor larger than
// the threshold is a group of its own.
std::vector<std::vector<std::size_t>> fuse_tensors(
    const std::vector<std::size_t>& ready, const std::function<std::uint64_t(std::size_t)>& bytes,
    std::uint64_t threshold);

}  // namespace adaptsim::runtime
