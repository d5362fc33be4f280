#include "hw/tcp/event_loop.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>

#include "sim/core/error.h"

namespace adaptsim::tcp {
namespace {

// One epoll_wait returns at most this many events; the rest come on the next turn.
constexpr int kMaxEvents = 64;

[[noreturn]] void throw_errno(const std::string& what) {
  throw RuntimeFailure(what + ": " + std::strerror(errno));
}

}  // namespace

EventLoop::EventLoop() : loop_thread_(std::this_thread::get_id()) {
  epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
  if (epoll_fd_ < 0) throw_errno("epoll_create1");
  wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake_fd_ < 0) {
    const int saved = errno;
    ::close(epoll_fd_);
    errno = saved;
    throw_errno("eventfd");
  }
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = 0;  // id 0 = the wake-up eventfd
  if (::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &ev) != 0) {
    const int saved = errno;
    ::close(wake_fd_);
    ::close(epoll_fd_);
    errno = saved;
    throw_errno("epoll_ctl(eventfd)");
  }
}

EventLoop::~EventLoop() {
  ::close(wake_fd_);
  ::close(epoll_fd_);
}

TimeNs EventLoop::now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void EventLoop::post(Task task) {
  {
    std::lock_guard<std::mutex> lock(posted_mutex_);
    posted_.push_back(std::move(task));
  }
  const std::uint64_t one = 1;
  // EAGAIN means the counter is already non-zero: the loop will wake anyway.
  [[maybe_unused]] ssize_t n = ::write(wake_fd_, &one, sizeof one);
}

void EventLoop::stop() {
  {
    std::lock_guard<std::mutex> lock(posted_mutex_);
    stop_posted_ = true;
  }
  const std::uint64_t one = 1;
  [[maybe_unused]] ssize_t n = ::write(wake_fd_, &one, sizeof one);
}

void EventLoop::defer(Task task) {
  deferred_.push_back(std::move(task));
}

void EventLoop::add_fd(int fd, std::uint32_t events, FdHandler handler) {
  auto entry = std::make_shared<FdEntry>();
  entry->fd = fd;
  entry->id = next_fd_id_++;
  entry->handler = std::move(handler);
  epoll_event ev{};
  ev.events = events;
  ev.data.u64 = entry->id;
  if (::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) != 0) {
    throw_errno("epoll_ctl(ADD, fd " + std::to_string(fd) + ")");
  }
  by_id_[entry->id] = entry;
  by_fd_[fd] = std::move(entry);
}

void EventLoop::modify_fd(int fd, std::uint32_t events) {
  auto it = by_fd_.find(fd);
  if (it == by_fd_.end()) return;
  epoll_event ev{};
  ev.events = events;
  ev.data.u64 = it->second->id;
  if (::epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, fd, &ev) != 0) {
    throw_errno("epoll_ctl(MOD, fd " + std::to_string(fd) + ")");
  }
}

void EventLoop::remove_fd(int fd) {
  auto it = by_fd_.find(fd);
  if (it == by_fd_.end()) return;
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
  by_id_.erase(it->second->id);
  by_fd_.erase(it);
}

EventLoop::TimerId EventLoop::add_timer(TimeNs delay_ns, Task task) {
  const TimerId id = next_timer_id_++;
  const TimeNs deadline = now_ns() + (delay_ns > 0 ? delay_ns : 0);
  timers_.emplace(std::make_pair(deadline, id), std::move(task));
  timer_deadline_.emplace(id, deadline);
  return id;
}

void EventLoop::cancel_timer(TimerId id) {
  auto it = timer_deadline_.find(id);
  if (it == timer_deadline_.end()) return;
  timers_.erase({it->second, id});
  timer_deadline_.erase(it);
}

void EventLoop::invoke(const Task& task) {
  try {
    task();
  } catch (...) {
    if (!error_handler_) throw;
    error_handler_(std::current_exception());
  }
}

TimeNs EventLoop::wait_timeout_ns() const {
  if (!deferred_.empty()) return 0;
  if (timers_.empty()) return -1;
  const TimeNs left = timers_.begin()->first.first - now_ns();
  return left <= 0 ? 0 : std::min<TimeNs>(left, 3600 * kNsPerSecond);
}

int EventLoop::wait(epoll_event* events, int max_events) {
  const TimeNs timeout_ns = wait_timeout_ns();
#ifdef SYS_epoll_pwait2
  // Timers to the nanosecond (Linux 5.11): a live step's phases and Horovod's 5 ms cycle would
  // drift by up to a millisecond per wait with epoll_wait's millisecond timeout.
  if (pwait2_) {
    timespec ts{};
    ts.tv_sec = static_cast<time_t>(timeout_ns / kNsPerSecond);
    ts.tv_nsec = static_cast<long>(timeout_ns % kNsPerSecond);
    const long n = ::syscall(SYS_epoll_pwait2, epoll_fd_, events, max_events,
                             timeout_ns < 0 ? nullptr : &ts, nullptr, 0);
    if (n >= 0 || errno != ENOSYS) return static_cast<int>(n);
    pwait2_ = false;  // an older kernel: milliseconds from now on
  }
#endif
  // Round up: a timer must not fire early.
  const int ms = timeout_ns < 0 ? -1 : static_cast<int>((timeout_ns + kNsPerMs - 1) / kNsPerMs);
  return ::epoll_wait(epoll_fd_, events, max_events, ms);
}

void EventLoop::run_due_timers() {
  const TimeNs now = now_ns();
  while (!timers_.empty() && timers_.begin()->first.first <= now) {
    auto node = timers_.extract(timers_.begin());
    timer_deadline_.erase(node.key().second);
    invoke(node.mapped());
  }
}

void EventLoop::run_posted() {
  std::vector<Task> tasks;
  {
    std::lock_guard<std::mutex> lock(posted_mutex_);
    tasks.swap(posted_);
    if (stop_posted_) stop_requested_ = true;
  }
  for (const Task& t : tasks)
    invoke(t);
}

void EventLoop::run_deferred() {
  // Only the tasks present now: tasks deferred while these run wait for the next turn, so I/O
  // is never starved by a chain of deferrals.
  std::size_t n = deferred_.size();
  while (n-- > 0 && !deferred_.empty()) {
    Task t = std::move(deferred_.front());
    deferred_.pop_front();
    invoke(t);
  }
}

void EventLoop::run() {
  loop_thread_ = std::this_thread::get_id();
  stop_requested_ = false;
  {
    std::lock_guard<std::mutex> lock(posted_mutex_);
    stop_posted_ = false;
  }
  epoll_event events[kMaxEvents];
  while (!stop_requested_) {
    const int n = wait(events, kMaxEvents);
    if (n < 0 && errno != EINTR) throw_errno("epoll_wait");
    for (int i = 0; i < n; ++i) {
      const std::uint64_t id = events[i].data.u64;
      if (id == 0) {
        std::uint64_t value = 0;
        [[maybe_unused]] ssize_t r = ::read(wake_fd_, &value, sizeof value);
        continue;
      }
      auto it = by_id_.find(id);
      if (it == by_id_.end()) continue;             // removed by an earlier handler of this batch
      std::shared_ptr<FdEntry> entry = it->second;  // keeps the handler alive while it runs
      const std::uint32_t mask = events[i].events;
      invoke([&] { entry->handler(mask); });
    }
    run_posted();
    run_due_timers();
    run_deferred();
  }
}

}  // namespace adaptsim::tcp
