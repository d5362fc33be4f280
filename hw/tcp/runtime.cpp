#include "hw/tcp/runtime.h"

#include <chrono>
#include <memory>

#include "hw/tcp/barrier.h"
#include "sim/core/error.h"
#include "sim/core/units.h"

namespace adaptsim::tcp {
namespace {

// How long the caller waits for the loop thread to abandon a timed-out operation. The loop only
// blocks inside a reduction or a memcpy, which take milliseconds.
constexpr TimeNs kAbortWaitNs = 10 * kNsPerSecond;
// How long a failed operation's caller waits for the loop to leave it (it never blocks there).
constexpr TimeNs kLoopWaitNs = 2 * kNsPerSecond;

// One blocking call in flight: the loop thread marks it done, the caller waits on Runtime::cv_.
struct PendingOp {
  bool done = false;
  TimeNs last_progress_ns = 0;
};

}  // namespace

Runtime::Runtime(const SocketAddress& bind_address, RuntimeOptions options)
    : Runtime(listen_tcp(bind_address), std::move(options)) {}

Runtime::Runtime(UniqueFd listener, RuntimeOptions options)
    : options_(std::move(options)),
      transport_(loop_, options_.transport),
      listener_(std::move(listener)) {
  set_nonblocking(listener_.get());
  listen_address_ = local_address(listener_.get());
  transport_.set_failure_handler([this](const std::string& reason) { on_failure(reason); });
  loop_.set_error_handler([this](std::exception_ptr e) {
    try {
      std::rethrow_exception(e);
    } catch (const std::exception& ex) {
      transport_.fail(std::string("internal error: ") + ex.what());
    } catch (...) {
      transport_.fail("internal error: unknown exception");
    }
  });
  start_thread();
}

Runtime::~Runtime() {
  try {
    shutdown();
  } catch (...) {
    // A destructor must not throw; the failure was already reported or is moot.
  }
}

void Runtime::start_thread() {
  thread_ = std::thread([this] {
    try {
      loop_.run();
    } catch (const std::exception& e) {
      on_failure(std::string("event loop stopped: ") + e.what());
    }
  });
}

void Runtime::on_failure(const std::string& reason) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (failure_.empty()) failure_ = reason;
  }
  cv_.notify_all();
}

bool Runtime::failed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return !failure_.empty();
}

std::string Runtime::failure() const {
  std::lock_guard<std::mutex> lock(mu_);
  return failure_;
}

std::uint64_t Runtime::rejected_connections() const {
  return transport_.rejected_connections();
}

void Runtime::check_fault_fired() const {
  const FaultInjection& f = options_.transport.fault;
  const std::uint64_t sent = transport_.data_frames_sent();
  if (f.action == FaultAction::kNone || sent >= f.after_sends) return;
  throw RuntimeFailure(prefix() + "fault injection did not fire: this rank sent " +
                       std::to_string(sent) + " messages, fewer than --fault-after-sends " +
                       std::to_string(f.after_sends));
}

std::string Runtime::prefix() const {
  return "rank " + std::to_string(rank_) + ": ";
}

void Runtime::throw_failed(const std::string& what) const {
  throw RuntimeFailure(prefix() + what + " failed: " + failure());
}

void Runtime::connect(const ClusterSpec& cluster) {
  if (connected_ || !listener_.valid()) throw std::logic_error("Runtime::connect called twice");
  cluster.validate();
  rank_ = cluster.rank;
  size_ = cluster.size();
  host_of_rank_ = cluster.hosts();
  auto ready = std::make_shared<bool>(false);
  loop_.post([this, cluster, ready, fd = std::make_shared<UniqueFd>(std::move(listener_))] {
    transport_.start(cluster, std::move(*fd), [this, ready] {
      {
        std::lock_guard<std::mutex> lock(mu_);
        *ready = true;
      }
      cv_.notify_all();
    });
  });
  // The transport fails itself at its connect deadline; the margin only guards against a loop
  // thread that never answers.
  const auto limit = std::chrono::steady_clock::now() +
                     std::chrono::nanoseconds(options_.transport.connect_timeout_ns) +
                     std::chrono::seconds(5);
  std::unique_lock<std::mutex> lock(mu_);
  if (!cv_.wait_until(lock, limit, [&] { return *ready || !failure_.empty(); })) {
    failure_ = "the event loop did not answer while connecting";
  }
  if (!*ready) {
    lock.unlock();
    throw_failed("connecting to the cluster");
  }
  connected_ = true;
}

void Runtime::run(const std::string& what, TimeNs timeout_ns, StartFn start) {
  run_with_progress(what, timeout_ns,
                    [start = std::move(start)](coll::Transport& t, coll::Callback done,
                                               coll::Callback) { start(t, std::move(done)); });
}

void Runtime::fail_from_loop(const std::string& reason) {
  if (!transport_.failed()) transport_.fail(reason);
}

void Runtime::run_with_progress(const std::string& what, TimeNs timeout_ns, ProgressStartFn start,
                                std::function<std::string()> describe) {
  if (!connected_) throw std::logic_error("Runtime: " + what + " before connect()");
  if (shut_down_) throw std::logic_error("Runtime: " + what + " after shutdown()");
  if (failed()) throw_failed(what);
  auto op = std::make_shared<PendingOp>();
  op->last_progress_ns = EventLoop::now_ns();
  loop_.post([this, op, start = std::move(start)] {
    if (transport_.failed()) return;
    auto done = [this, op] {
      {
        std::lock_guard<std::mutex> lock(mu_);
        op->done = true;
      }
      cv_.notify_all();
    };
    auto progress = [this, op] {
      std::lock_guard<std::mutex> lock(mu_);
      op->last_progress_ns = EventLoop::now_ns();
    };
    start(transport_, done, progress);
  });

  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    if (op->done) return;
    if (!failure_.empty()) {
      lock.unlock();
      // The failure may have been raised inside the operation, on the loop thread, which is then
      // still running it: wait until the loop has left it, so the caller's objects (the algorithm,
      // its graphs, the buffers) outlive every use once we return. Once the transport has failed,
      // none of the operation's callbacks runs again.
      wait_for_loop();
      throw_failed(what);
    }
    const TimeNs left = op->last_progress_ns + timeout_ns - EventLoop::now_ns();
    if (left <= 0) break;
    cv_.wait_for(lock, std::chrono::nanoseconds(left));
  }
  lock.unlock();

  // Timed out: ask the loop what is missing, then fail the transport there, so the abandoned
  // operation can no longer write into the caller's buffers once we return. A failure that
  // reaches the loop first (a peer's abort) wins: it carries the better diagnosis.
  struct Abort {
    bool answered = false;
    bool ours = false;
    std::string pending;
  };
  auto abort = std::make_shared<Abort>();
  const std::string reason = what + " timed out after " + format_seconds(to_seconds(timeout_ns));
  loop_.post([this, abort, reason, describe] {
    std::string desc;
    const bool ours = !transport_.failed();
    if (ours) {
      desc = transport_.describe_pending();
      if (describe) desc = describe() + "; " + desc;
      transport_.fail(reason + "; " + desc);
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      abort->answered = true;
      abort->ours = ours;
      abort->pending = desc;
    }
    cv_.notify_all();
  });
  lock.lock();
  cv_.wait_for(lock, std::chrono::nanoseconds(kAbortWaitNs), [&] { return abort->answered; });
  if (abort->answered && !abort->ours) {
    lock.unlock();
    throw_failed(what);
  }
  const std::string desc = abort->answered ? abort->pending : "the event loop did not answer";
  lock.unlock();
  throw RuntimeFailure(prefix() + reason + "; " + desc);
}

void Runtime::wait_for_loop() {
  if (std::this_thread::get_id() == thread_.get_id()) return;
  auto passed = std::make_shared<bool>(false);
  loop_.post([this, passed] {
    {
      std::lock_guard<std::mutex> lock(mu_);
      *passed = true;
    }
    cv_.notify_all();
  });
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, std::chrono::nanoseconds(kLoopWaitNs), [&] { return *passed; });
}

void Runtime::run_allreduce(const coll::AllReduce& algo, const coll::Workspace& w,
                            TimeNs timeout_ns) {
  run("all-reduce '" + w.name + "'", timeout_ns,
      [&algo, w](coll::Transport& t, coll::Callback done) { algo.run(t, w, std::move(done)); });
}

namespace {

// Runs `iterations` all-reduces one after another on the loop thread.
class RepeatedAllReduce : public std::enable_shared_from_this<RepeatedAllReduce> {
 public:
  RepeatedAllReduce(coll::Transport& t, const coll::AllReduce& algo, coll::Workspace w,
                    int iterations, TimeNs* elapsed_ns, coll::Callback done,
                    coll::Callback progress)
      : t_(t),
        algo_(algo),
        w_(std::move(w)),
        left_(iterations),
        elapsed_ns_(elapsed_ns),
        done_(std::move(done)),
        progress_(std::move(progress)) {}

  void start() {
    start_ns_ = EventLoop::now_ns();
    next();
  }

 private:
  void next() {
    if (left_ == 0) {
      *elapsed_ns_ = EventLoop::now_ns() - start_ns_;
      done_();
      return;
    }
    --left_;
    auto self = shared_from_this();
    algo_.run(t_, w_, [self] {
      self->progress_();
      self->next();
    });
  }

  coll::Transport& t_;
  const coll::AllReduce& algo_;
  const coll::Workspace w_;
  int left_;
  TimeNs* elapsed_ns_;  // written on the loop thread before done_ runs
  coll::Callback done_;
  coll::Callback progress_;
  TimeNs start_ns_ = 0;
};

}  // namespace

TimeNs Runtime::time_allreduce(const coll::AllReduce& algo, const coll::Workspace& w,
                               int iterations, TimeNs timeout_ns) {
  auto elapsed = std::make_shared<TimeNs>(0);
  run_with_progress("all-reduce '" + w.name + "'", timeout_ns,
                    [&algo, w, iterations, elapsed](coll::Transport& t, coll::Callback done,
                                                    coll::Callback progress) {
                      std::make_shared<RepeatedAllReduce>(
                          t, algo, w, iterations < 0 ? 0 : iterations, elapsed.get(),
                          [elapsed, done = std::move(done)]() mutable { done(); },
                          std::move(progress))
                          ->start();
                    });
  // The mutex in run_with_progress's completion orders the loop thread's write before this read.
  return *elapsed;
}

void Runtime::barrier(TimeNs timeout_ns) {
  const std::string name = "__barrier" + std::to_string(barrier_seq_++);
  run("barrier", timeout_ns,
      [name](coll::Transport& t, coll::Callback done) { run_barrier(t, name, std::move(done)); });
}

void Runtime::shutdown() {
  if (shut_down_) return;
  shut_down_ = true;
  if (!thread_.joinable()) return;
  if (connected_ && !failed()) {
    auto closed = std::make_shared<bool>(false);
    loop_.post([this, closed] {
      transport_.shutdown(options_.shutdown_timeout_ns, [this, closed] {
        {
          std::lock_guard<std::mutex> lock(mu_);
          *closed = true;
        }
        cv_.notify_all();
      });
    });
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock,
                 std::chrono::nanoseconds(options_.shutdown_timeout_ns) + std::chrono::seconds(1),
                 [&] { return *closed; });
  }
  loop_.stop();
  thread_.join();
}

}  // namespace adaptsim::tcp
