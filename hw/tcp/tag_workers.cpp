#include "hw/tcp/tag_workers.h"

#include <sched.h>

#include <algorithm>
#include <exception>

namespace adaptsim::tcp {

TagWorkers::TagWorkers(int threads, std::function<void()> on_done) : on_done_(std::move(on_done)) {
  for (int i = 0; i < std::max(1, threads); ++i)
    threads_.emplace_back([this] { run(); });
}

TagWorkers::~TagWorkers() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    queue_.clear();
  }
  work_cv_.notify_all();
  for (std::thread& t : threads_)
    t.join();
}

void TagWorkers::submit(std::shared_ptr<Job> job) {
  {
    std::lock_guard lock(mutex_);
    queue_.push_back(std::move(job));
  }
  work_cv_.notify_one();
}

bool TagWorkers::take_or_wait(const std::shared_ptr<Job>& job) {
  std::unique_lock lock(mutex_);
  const auto it = std::find(queue_.begin(), queue_.end(), job);
  if (it != queue_.end()) {
    queue_.erase(it);
    return true;
  }
  done_cv_.wait(lock, [&] {
    return std::find(running_.begin(), running_.end(), job.get()) == running_.end();
  });
  return false;
}

void TagWorkers::retract(const std::shared_ptr<Job>& job) {
  take_or_wait(job);
}

void TagWorkers::finish(const std::shared_ptr<Job>& job) {
  if (take_or_wait(job)) compute(*job);
}

void TagWorkers::compute(Job& job) {
  const ByteView parts[3] = {{job.header.data(), job.header.size()},
                             {reinterpret_cast<const std::byte*>(job.name.data()), job.name.size()},
                             job.payload};
  try {
    job.tag = frame_tag(job.key, job.seq, parts);
  } catch (const std::exception&) {
    job.error = true;
  }
  job.done.store(true);
}

void TagWorkers::run() {
  for (;;) {
    std::shared_ptr<Job> job;
    {
      std::unique_lock lock(mutex_);
      work_cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (stopping_) return;
      job = std::move(queue_.front());
      queue_.pop_front();
      running_.push_back(job.get());
    }
    compute(*job);
    {
      std::lock_guard lock(mutex_);
      running_.erase(std::find(running_.begin(), running_.end(), job.get()));
    }
    done_cv_.notify_all();
    on_done_();
  }
}

int TagWorkers::default_threads(int ranks_on_machine) {
  cpu_set_t set;
  int cores = 1;
  if (::sched_getaffinity(0, sizeof set, &set) == 0) cores = CPU_COUNT(&set);
  const int per_rank = cores / std::max(1, ranks_on_machine);
  return std::clamp(per_rank - 1, 0, 2);
}

}  // namespace adaptsim::tcp
