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

void TagWorkers::publish(const std::shared_ptr<Job>& job, std::size_t bytes) {
  {
    std::lock_guard lock(mutex_);
    job->available = bytes;
    // `absorbed` is read only while parked: then no thread writes it.
    if (!job->parked ||
        (bytes - job->absorbed < kStreamChunkBytes && bytes < job->payload.size())) {
      return;
    }
    job->parked = false;
    queue_.push_back(job);
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
  // Neither queued nor running now, and only the owner (this thread) could queue it again; a
  // parked job is not done yet. `available` is the owner's own last write.
  if (take_or_wait(job) || !job->done.load()) {
    if (!step(*job, job->available)) {  // the payload was not all published: never checks out
      job->error = true;
      job->done.store(true);
    }
  }
}

bool TagWorkers::step(Job& job, std::size_t upto) {
  try {
    if (!job.streaming) {
      const ByteView parts[3] = {
          {job.header.data(), job.header.size()},
          {reinterpret_cast<const std::byte*>(job.name.data()), job.name.size()},
          job.payload};
      job.tag = frame_tag(job.key, job.seq, parts);
    } else {
      if (!job.stream) {
        job.stream = std::make_unique<FrameTagStream>(job.key, job.seq);
        job.stream->absorb({job.header.data(), job.header.size()});
        job.stream->absorb({reinterpret_cast<const std::byte*>(job.name.data()), job.name.size()});
      }
      if (upto > job.absorbed) {
        job.stream->absorb(job.payload.subspan(job.absorbed, upto - job.absorbed));
        job.absorbed = upto;
      }
      if (job.absorbed < job.payload.size()) return false;
      job.tag = job.stream->finish();
      job.stream.reset();
    }
  } catch (const std::exception&) {
    job.error = true;
  }
  job.done.store(true);
  return true;
}

void TagWorkers::run() {
  std::unique_lock lock(mutex_);
  for (;;) {
    work_cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (stopping_) return;
    std::shared_ptr<Job> job = std::move(queue_.front());
    queue_.pop_front();
    running_.push_back(job.get());
    // A streaming job keeps its thread while more of its payload is in place than it absorbed;
    // parking it when it caught up is decided under the lock that publish() takes, so no byte
    // published meanwhile is missed.
    bool done = false;
    for (;;) {
      const std::size_t upto = job->available;
      lock.unlock();
      done = step(*job, upto);
      lock.lock();
      if (done || stopping_ || job->available == job->absorbed) break;
    }
    job->parked = !done;
    running_.erase(std::find(running_.begin(), running_.end(), job.get()));
    done_cv_.notify_all();
    if (done) {
      lock.unlock();
      on_done_();
      lock.lock();
    }
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
