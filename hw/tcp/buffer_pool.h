#pragma once
// Reusable, 64-byte aligned byte buffers for scratch space and early-arrival staging. All-reduce
// asks for the same few sizes (a chunk, a ring segment) over and over; pooling them avoids a
// malloc + page-fault storm on every message. Single-threaded (the loop thread).
//
// Invariant: every buffer handed out is tracked until released or until the pool dies, so a
// collective abandoned on failure (its callbacks dropped, its scratch never released) leaks
// nothing.

#include <cstddef>
#include <unordered_map>
#include <vector>

namespace adaptsim::tcp {

class BufferPool {
 public:
  // Released buffers are kept for reuse while the cached total stays under this many bytes.
  explicit BufferPool(std::size_t max_cached_bytes) : max_cached_bytes_(max_cached_bytes) {}
  ~BufferPool();
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;

  // A buffer of at least `size` bytes (contents undefined); nullptr for size 0.
  // Throws std::bad_alloc.
  std::byte* acquire(std::size_t size);
  // Gives back a buffer from acquire() (nullptr is ignored).
  void release(std::byte* buffer);

  std::size_t outstanding() const { return size_of_.size() - cached_count_; }

 private:
  std::size_t max_cached_bytes_;
  std::size_t cached_bytes_ = 0;
  std::size_t cached_count_ = 0;
  std::unordered_map<std::byte*, std::size_t> size_of_;            // every live allocation
  std::unordered_map<std::size_t, std::vector<std::byte*>> free_;  // by rounded size
};

}  // namespace adaptsim::tcp
