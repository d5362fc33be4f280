#pragma once
// A single-threaded reactor: epoll over non-blocking file descriptors, one-shot timers, and an
// eventfd through which other threads post work. Everything registered with the loop runs on the
// loop thread (the thread inside run()), so the live transport and the collective algorithms
// above it need no locks.
//
// Invariants:
//  - handlers, timers and deferred tasks run only on the loop thread, one at a time;
//  - defer() never runs the task inside the call (it runs on a later turn of the loop), which is
//    how the transport keeps coll::Transport's "never inside the registering call" contract;
//  - a removed fd or cancelled timer never fires again, even if its event is already in the
//    batch being dispatched (every registration has its own id);
//  - an exception escaping a handler goes to the error handler (set_error_handler); the loop
//    keeps running. Without a handler it is rethrown out of run().
// No global state: tests run several loops (one per simulated rank) in one process.

#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "sim/core/time.h"

struct epoll_event;

namespace adaptsim::tcp {

using Task = std::function<void()>;

class EventLoop {
 public:
  // events: the epoll mask that fired (EPOLLIN, EPOLLOUT, EPOLLERR, EPOLLHUP, ...).
  using FdHandler = std::function<void(std::uint32_t events)>;
  using TimerId = std::uint64_t;  // 0 = no timer
  using ErrorHandler = std::function<void(std::exception_ptr)>;

  EventLoop();  // throws RuntimeFailure when epoll or eventfd cannot be created
  ~EventLoop();
  EventLoop(const EventLoop&) = delete;
  EventLoop& operator=(const EventLoop&) = delete;

  // Runs until stop(); the calling thread becomes the loop thread for the duration.
  void run();
  // Thread-safe. run() returns after the current turn.
  void stop();
  // Thread-safe: runs `task` on the loop thread on a later turn (in posting order).
  void post(Task task);

  // The rest is for the loop thread only (or before run() starts).
  // Runs `task` on a later turn of the loop, never inside this call; tasks run in defer order.
  void defer(Task task);
  // Watches `fd` (which the caller keeps owning) for `events` (level-triggered).
  void add_fd(int fd, std::uint32_t events, FdHandler handler);
  void modify_fd(int fd, std::uint32_t events);
  // Stops watching `fd`; safe from inside its own handler. Call before closing the fd.
  void remove_fd(int fd);
  TimerId add_timer(TimeNs delay_ns, Task task);
  void cancel_timer(TimerId id);  // no-op for 0, fired or cancelled ids

  bool in_loop_thread() const { return std::this_thread::get_id() == loop_thread_; }
  void set_error_handler(ErrorHandler handler) { error_handler_ = std::move(handler); }

  // Monotonic clock (CLOCK_MONOTONIC through std::chrono::steady_clock), in ns.
  static TimeNs now_ns();

 private:
  struct FdEntry {
    int fd = -1;
    std::uint64_t id = 0;  // the registration, stored in epoll_event.data.u64
    FdHandler handler;
  };

  void invoke(const Task& task);
  void run_due_timers();
  void run_posted();
  void run_deferred();
  // Until the next timer (ns; -1: none, 0: work is waiting).
  TimeNs wait_timeout_ns() const;
  // epoll's wait until the next timer, to the nanosecond where the kernel can.
  int wait(struct epoll_event* events, int max_events);

  int epoll_fd_ = -1;
  int wake_fd_ = -1;  // eventfd written by post() and stop()
  std::thread::id loop_thread_;
  bool stop_requested_ = false;  // loop thread's copy; stop() goes through the posted queue

  std::unordered_map<int, std::shared_ptr<FdEntry>> by_fd_;
  std::unordered_map<std::uint64_t, std::shared_ptr<FdEntry>> by_id_;
  std::uint64_t next_fd_id_ = 1;

  std::map<std::pair<TimeNs, TimerId>, Task> timers_;  // (deadline, id): id breaks ties in order
  std::unordered_map<TimerId, TimeNs> timer_deadline_;
  TimerId next_timer_id_ = 1;

  std::deque<Task> deferred_;

  std::mutex posted_mutex_;
  std::vector<Task> posted_;  // guarded by posted_mutex_
  bool stop_posted_ = false;  // guarded by posted_mutex_

  ErrorHandler error_handler_;
  bool pwait2_ = true;  // epoll_pwait2 available (cleared on ENOSYS)
};

}  // namespace adaptsim::tcp
