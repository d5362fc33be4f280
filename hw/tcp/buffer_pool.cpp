#include "hw/tcp/buffer_pool.h"

#include <cstdlib>
#include <new>

namespace adaptsim::tcp {
namespace {

constexpr std::size_t kAlignment = 64;  // a cache line: vectorised reduction loads stay aligned

std::size_t rounded(std::size_t size) {
  return (size + kAlignment - 1) / kAlignment * kAlignment;
}

}  // namespace

BufferPool::~BufferPool() {
  for (auto& [p, size] : size_of_)
    std::free(p);
}

std::byte* BufferPool::acquire(std::size_t size) {
  if (size == 0) return nullptr;
  const std::size_t r = rounded(size);
  auto it = free_.find(r);
  if (it != free_.end() && !it->second.empty()) {
    std::byte* p = it->second.back();
    it->second.pop_back();
    cached_bytes_ -= r;
    --cached_count_;
    return p;
  }
  auto* p = static_cast<std::byte*>(std::aligned_alloc(kAlignment, r));
  if (p == nullptr) throw std::bad_alloc();
  size_of_.emplace(p, r);
  return p;
}

void BufferPool::release(std::byte* buffer) {
  if (buffer == nullptr) return;
  auto it = size_of_.find(buffer);
  if (it == size_of_.end()) return;  // not ours: ignore rather than corrupt the heap
  const std::size_t r = it->second;
  if (cached_bytes_ + r > max_cached_bytes_) {
    size_of_.erase(it);
    std::free(buffer);
    return;
  }
  free_[r].push_back(buffer);
  cached_bytes_ += r;
  ++cached_count_;
}

}  // namespace adaptsim::tcp
