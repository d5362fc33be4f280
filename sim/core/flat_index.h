#pragma once
// An index from 64-bit keys to 32-bit values (positions in the owner's own storage) in an
// open-addressing table: 16-byte slots, a power of two in number and at most half full, probed
// linearly from mix64(key); erase shifts the rest of the probe run back (no tombstones). For the
// tables looked up once per simulated message (routes, mailboxes), where a node-based map's
// bucket, node and key cost three dependent cache misses a lookup and this costs one.

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "sim/core/rng.h"

namespace adaptsim {

class FlatIndex {
 public:
  static constexpr std::uint64_t kNoKey = ~std::uint64_t{0};  // reserved: marks a free slot

  const std::uint32_t* find(std::uint64_t key) const {
    if (slots_.empty()) return nullptr;
    for (std::size_t i = home(key);; i = next(i)) {
      if (slots_[i].first == key) return &slots_[i].second;
      if (slots_[i].first == kNoKey) return nullptr;
    }
  }
  // `key` must be absent (and not kNoKey).
  void insert(std::uint64_t key, std::uint32_t value) {
    if (2 * (size_ + 1) > slots_.size()) grow();
    place(key, value);
    ++size_;
  }
  // `key` must be present; returns its value.
  std::uint32_t erase(std::uint64_t key) {
    std::size_t i = home(key);
    while (slots_[i].first != key)
      i = next(i);
    const std::uint32_t value = slots_[i].second;
    // Backward shift: a later entry of the probe run moves into the hole when the hole lies
    // between its home slot and it, so it stays reachable.
    for (std::size_t j = next(i); slots_[j].first != kNoKey; j = next(j)) {
      if (((j - home(slots_[j].first)) & mask()) >= ((j - i) & mask())) {
        slots_[i] = slots_[j];
        i = j;
      }
    }
    slots_[i].first = kNoKey;
    --size_;
    return value;
  }
  std::size_t size() const { return size_; }

 private:
  std::size_t mask() const { return slots_.size() - 1; }
  std::size_t next(std::size_t i) const { return (i + 1) & mask(); }
  std::size_t home(std::uint64_t key) const {
    return static_cast<std::size_t>(mix64(key)) & mask();
  }
  void place(std::uint64_t key, std::uint32_t value) {
    std::size_t i = home(key);
    while (slots_[i].first != kNoKey)
      i = next(i);
    slots_[i] = {key, value};
  }
  void grow() {
    std::vector<std::pair<std::uint64_t, std::uint32_t>> old(
        std::max<std::size_t>(16, 2 * slots_.size()), {kNoKey, 0});
    old.swap(slots_);
    for (const auto& [k, v] : old)
      if (k != kNoKey) place(k, v);
  }

  std::vector<std::pair<std::uint64_t, std::uint32_t>> slots_;
  std::size_t size_ = 0;
};

}  // namespace adaptsim
