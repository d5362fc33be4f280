// KungFu on a live worker (KUNGFU.md 2.3-2.4): every gradient gets its own named, chunked
// all-reduce over the configured strategy the moment it is ready. Messages are matched by
// (peer, name), so the collectives of different tensors run concurrently and in any order; the
// name is the parameter's, the same every step, so a chunk hashes to the same graph every step
// as in KungFu. Host staging is implicit: the gradients already live in host memory.
//
// Threads: the compute thread queues ready gradients; a dispatcher thread hands each batch to the
// runtime's loop thread (Runtime::run posts it there and returns once the all-reduces started),
// and after the step's last gradient it waits, through the runtime and with its timeout, until
// every all-reduce of the step completed. All-reduce completions run on the loop thread and go
// straight to the StepTracker.

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <utility>

#include "hw/live/live_system.h"

namespace adaptsim::live {
namespace {

class KungFuLive final : public LiveSystem {
 public:
  explicit KungFuLive(const LiveSystemContext& c)
      : c_(c),
        algo_(coll::make_allreduce(c.config.strategy, c.runtime->host_of_rank(),
                                   {.chunk_bytes = c.config.chunk_bytes, .hash_by_name = true})) {
    for (std::size_t t = 0; t < c.buffers->tensors(); ++t) {
      workspaces_.push_back(c.buffers->workspace(t));
    }
  }
  ~KungFuLive() override { stop(); }

  void start() override {
    thread_ = std::thread([this] { dispatch_loop(); });
  }

  void gradient_ready(int step, std::size_t tensor) override {
    c_.tracker->activity(+1);  // in flight from now until its all-reduce completed
    {
      std::lock_guard<std::mutex> lock(mu_);
      queue_.emplace_back(step, tensor);
    }
    cv_.notify_one();
  }

  void stop() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_one();
    if (thread_.joinable()) thread_.join();
  }

 private:
  void dispatch_loop() {
    try {
      const std::size_t per_step = workspaces_.size();
      std::size_t started_in_step = 0;
      for (;;) {
        std::deque<std::pair<int, std::size_t>> batch;
        {
          std::unique_lock<std::mutex> lock(mu_);
          cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
          if (stop_) return;
          batch.swap(queue_);
        }
        const int step = batch.back().first;
        c_.runtime->run("step " + std::to_string(step) + ": starting the all-reduce of " +
                            std::to_string(batch.size()) + " gradient(s)",
                        c_.timeout_ns, [this, batch](coll::Transport& t, coll::Callback done) {
                          for (const auto& [s, tensor] : batch)
                            start_allreduce(t, tensor);
                          done();
                        });
        started_in_step += batch.size();
        if (started_in_step == per_step) {
          started_in_step = 0;
          c_.runtime->run("step " + std::to_string(step) + ": gradient all-reduces", c_.timeout_ns,
                          [this](coll::Transport&, coll::Callback done) {
                            if (outstanding_ == 0) {
                              done();
                            } else {
                              drained_ = std::move(done);
                            }
                          });
        }
      }
    } catch (const std::exception& e) {
      c_.tracker->fail(e.what());
    }
  }

  // Loop thread.
  void start_allreduce(coll::Transport& t, std::size_t tensor) {
    ++outstanding_;
    algo_->run(t, workspaces_[tensor], [this, tensor] {
      c_.tracker->activity(-1);
      c_.tracker->gradient_reduced(tensor);
      if (--outstanding_ == 0 && drained_) {
        coll::Callback done = std::move(drained_);
        drained_ = nullptr;
        done();
      }
    });
  }

  LiveSystemContext c_;
  std::unique_ptr<coll::AllReduce> algo_;
  std::vector<coll::Workspace> workspaces_;

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::pair<int, std::size_t>> queue_;  // (step, tensor), guarded by mu_
  bool stop_ = false;                              // guarded by mu_

  // Loop-thread state.
  int outstanding_ = 0;
  coll::Callback drained_;

  std::thread thread_;
};

}  // namespace

std::unique_ptr<LiveSystem> make_kungfu_live(const LiveSystemContext& c) {
  return std::make_unique<KungFuLive>(c);
}

}  // namespace adaptsim::live
