#include "hw/live/step_tracker.h"

#include <algorithm>
#include <chrono>
#include <stdexcept>

#include "hw/tcp/event_loop.h"
#include "sim/core/error.h"

namespace adaptsim::live {

StepTracker::StepTracker(std::size_t tensors_per_step)
    : tensors_(tensors_per_step), reduced_(tensors_per_step, false) {}

void StepTracker::begin_step() {
  std::lock_guard<std::mutex> lock(mu_);
  std::fill(reduced_.begin(), reduced_.end(), false);
  reduced_count_ = 0;
  backward_end_ = -1;
  update_start_ = -1;
  exposure_ = {};
  accounted_until_ = tcp::EventLoop::now_ns();
}

void StepTracker::account(TimeNs now) {
  if (backward_end_ >= 0 && update_start_ < 0 && now > accounted_until_) {
    (in_flight_ > 0 ? exposure_.link_ns : exposure_.wait_ns) += now - accounted_until_;
  }
  accounted_until_ = now;
}

void StepTracker::activity(int delta) {
  std::lock_guard<std::mutex> lock(mu_);
  account(tcp::EventLoop::now_ns());
  in_flight_ += delta;
}

void StepTracker::gradient_reduced(std::size_t tensor) {
  std::lock_guard<std::mutex> lock(mu_);
  if (tensor >= tensors_ || reduced_[tensor]) {
    throw std::logic_error("gradient " + std::to_string(tensor) +
                           " reported reduced twice (or out of range) in one step");
  }
  reduced_[tensor] = true;
  ++reduced_count_;
  maybe_start_update(tcp::EventLoop::now_ns());
}

void StepTracker::backward_ended() {
  std::lock_guard<std::mutex> lock(mu_);
  const TimeNs now = tcp::EventLoop::now_ns();
  backward_end_ = now;
  accounted_until_ = now;
  maybe_start_update(now);
}

void StepTracker::maybe_start_update(TimeNs now) {
  if (backward_end_ < 0 || update_start_ >= 0 || reduced_count_ < tensors_) return;
  account(now);
  update_start_ = now;
  cv_.notify_all();
}

TimeNs StepTracker::wait_update_start(TimeNs deadline_ns) {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    if (!failure_.empty()) throw RuntimeFailure(failure_);
    if (update_start_ >= 0) return update_start_;
    const TimeNs left = deadline_ns - tcp::EventLoop::now_ns();
    if (left <= 0) break;
    cv_.wait_for(lock, std::chrono::nanoseconds(left));
  }
  std::string missing;
  std::size_t shown = 0;
  for (std::size_t t = 0; t < tensors_ && shown < 4; ++t) {
    if (reduced_[t]) continue;
    missing += (shown++ ? ", " : "") + std::to_string(t);
  }
  throw RuntimeFailure(std::to_string(tensors_ - reduced_count_) + " of " +
                       std::to_string(tensors_) + " gradients were not reduced in time (tensors " +
                       missing + (tensors_ - reduced_count_ > shown ? ", ..." : "") + ")");
}

void StepTracker::fail(const std::string& reason) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (failure_.empty()) failure_ = reason.empty() ? "unknown failure" : reason;
  }
  cv_.notify_all();
}

bool StepTracker::failed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return !failure_.empty();
}

StepExposure StepTracker::exposure() const {
  std::lock_guard<std::mutex> lock(mu_);
  return exposure_;
}

}  // namespace adaptsim::live
