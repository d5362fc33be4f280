#pragma once
// One live worker's view of its current training step, shared by the compute thread (forward,
// backward, update), the system's own thread and the runtime's loop thread. It is the live
// counterpart of the step simulator's per-worker state (sim/train/step_simulator.cpp) and keeps
// the same definitions:
//   - the update starts when backward has ended and every gradient of the step is reduced;
//   - the time between the end of backward and the start of the update is "exposed": while some
//     communication is in flight (activity count > 0) it is link time, otherwise wait time
//     (negotiation cycles, ordering).
// Every timestamp is taken under the tracker's mutex, so the events of the three threads are
// ordered as they were recorded and the accounting never runs backwards.

#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <string>
#include <vector>

#include "sim/core/time.h"

namespace adaptsim::live {

struct StepExposure {
  TimeNs link_ns = 0;  // after backward, with communication in flight
  TimeNs wait_ns = 0;  // after backward, with nothing in flight
};

class StepTracker {
 public:
  explicit StepTracker(std::size_t tensors_per_step);

  // Compute thread: a new step begins (the previous one's update has ended).
  void begin_step();
  // Any thread: communication of this worker starts (+1) or ends (-1).
  void activity(int delta);
  // Any thread: gradient `tensor` of the current step holds its reduced value. Throws
  // std::logic_error when it was already reported in this step.
  void gradient_reduced(std::size_t tensor);
  // Compute thread: the last backward layer finished (its gradients were handed over first).
  void backward_ended();
  // Compute thread: blocks until the update may start (backward ended and every gradient
  // reduced), a failure is reported, or `deadline_ns` (EventLoop::now_ns clock) passes. Returns
  // the update's start time; throws RuntimeFailure with the reported failure, or naming the
  // missing gradients at the deadline.
  TimeNs wait_update_start(TimeNs deadline_ns);
  // Any thread: the system cannot complete the step; wakes the waiter, which throws `reason`.
  // The first reason wins.
  void fail(const std::string& reason);
  bool failed() const;

  // The current step's exposed time, complete once wait_update_start returned.
  StepExposure exposure() const;

 private:
  void account(TimeNs now);             // mu_ held
  void maybe_start_update(TimeNs now);  // mu_ held

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::size_t tensors_;
  std::vector<bool> reduced_;  // by tensor, this step
  std::size_t reduced_count_ = 0;
  int in_flight_ = 0;  // not reset between steps: activity is balanced per step
  TimeNs backward_end_ = -1;
  TimeNs accounted_until_ = 0;
  TimeNs update_start_ = -1;
  StepExposure exposure_;
  std::string failure_;
};

}  // namespace adaptsim::live
