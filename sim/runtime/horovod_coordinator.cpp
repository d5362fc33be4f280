#include "sim/runtime/horovod_coordinator.h"

namespace adaptsim::runtime {

std::vector<std::size_t> HorovodMessageTable::add_cycle(
    const std::vector<std::vector<std::size_t>>& reports) {
  std::vector<std::size_t> ready;
  for (const auto& list : reports) {
    for (std::size_t t : list) {
      if (++counts_[t] == size_) {
        ready.push_back(t);
        counts_.erase(t);
      }
    }
  }
  return ready;
}

std::vector<std::vector<std::size_t>> fuse_tensors(
    const std::vector<std::size_t>& ready, const std::function<std::uint64_t(std::size_t)>& bytes,
    std::uint64_t threshold) {
  std::vector<std::vector<std::size_t>> groups;
  std::uint64_t group_bytes = 0;
  for (std::size_t t : ready) {
    const std::uint64_t b = bytes(t);
    if (groups.empty() || group_bytes + b > threshold) {
      groups.emplace_back();
      group_bytes = 0;
    }
    groups.back().push_back(t);
    group_bytes += b;
  }
  return groups;
}

}  // namespace adaptsim::runtime
