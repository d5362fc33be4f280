#pragma once
// Runs independent tasks on a fixed number of threads and returns their results in task order,
// whatever order they finished in: this is what keeps sweep output deterministic.

#include <algorithm>
#include <atomic>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace adaptsim::run {

// Calls fn(i) for i in [0, n) on `threads` threads (0: one per hardware thread). If tasks throw,
// the remaining ones are skipped and the exception of the lowest-numbered failed task is
// rethrown. `on_done(completed)` is called after each task, serialised.
template <typename T>
std::vector<T> parallel_map(std::size_t n, int threads, const std::function<T(std::size_t)>& fn,
                            const std::function<void(std::size_t)>& on_done = {}) {
  std::vector<T> results(n);
  std::vector<std::exception_ptr> errors(n);
  std::atomic<std::size_t> next{0};
  std::atomic<bool> failed{false};
  std::mutex done_mutex;
  std::size_t completed = 0;
  auto worker = [&] {
    for (std::size_t i = next++; i < n; i = next++) {
      if (failed) break;
      try {
        results[i] = fn(i);
      } catch (...) {
        errors[i] = std::current_exception();
        failed = true;
      }
      std::lock_guard<std::mutex> lock(done_mutex);
      ++completed;
      if (on_done) on_done(completed);
    }
  };
  std::size_t count = threads > 0 ? static_cast<std::size_t>(threads)
                                  : std::max(1u, std::thread::hardware_concurrency());
  count = std::min(count, std::max<std::size_t>(n, 1));
  if (count <= 1) {
    worker();
  } else {
    std::vector<std::jthread> pool;
    for (std::size_t t = 0; t < count; ++t)
      pool.emplace_back(worker);
  }
  for (auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
  return results;
}

}  // namespace adaptsim::run
