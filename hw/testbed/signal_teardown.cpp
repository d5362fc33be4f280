#include "hw/testbed/signal_teardown.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <mutex>
#include <thread>

extern char** environ;

namespace adaptsim::testbed {
namespace {

// Process-wide by necessity: a signal handler can reach nothing else. Fixed-size arrays of
// atomics, so the handler never allocates or locks.
constexpr int kSlots = 64;
enum SlotState : int { kIdle = 0, kRunning = 1, kDone = 2 };
std::atomic<const EmergencyTeardown*> g_plans[kSlots];
std::atomic<int> g_state[kSlots];
std::atomic<int> g_holdoff{0};
std::atomic<int> g_pending_signal{0};
constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP};
struct sigaction g_previous[NSIG];
std::once_flag g_install_once;

void run_all_plans() {
  for (int i = 0; i < kSlots; ++i) {
    const EmergencyTeardown* plan = g_plans[i].exchange(nullptr);
    if (plan == nullptr) continue;
    g_state[i].store(kRunning);
    plan->run();
    g_state[i].store(kDone);
  }
}

void on_signal(int sig, siginfo_t* info, void* context) {
  if (g_holdoff.load() > 0) {
    g_pending_signal.store(sig);  // re-raised when the create/teardown in progress finishes
    return;
  }
  const struct sigaction& previous = g_previous[sig];
  // Inherited as ignored (`cmd &` in a script: SIGINT is the terminal's, not this job's): no
  // teardown, as if the signal had not come.
  if (!(previous.sa_flags & SA_SIGINFO) && previous.sa_handler == SIG_IGN) return;
  const int saved_errno = errno;
  run_all_plans();
  errno = saved_errno;
  if (previous.sa_flags & SA_SIGINFO) {
    if (previous.sa_sigaction != nullptr) previous.sa_sigaction(sig, info, context);
    return;
  }
  if (previous.sa_handler != SIG_DFL) {
    previous.sa_handler(sig);
    return;
  }
  // Default action: the signal is blocked inside its handler, so it is delivered (and ends the
  // process) as soon as this returns.
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

}  // namespace

EmergencyTeardown::EmergencyTeardown(const std::string& ip_path,
                                     const std::vector<std::vector<std::string>>& commands,
                                     std::string state_path)
    : commands_(commands), ip_path_(ip_path), state_path_(std::move(state_path)) {
  for (std::vector<std::string>& c : commands_) {
    std::vector<char*> argv;
    for (std::string& a : c)
      argv.push_back(a.data());
    argv.push_back(nullptr);
    argv_.push_back(std::move(argv));
  }
}

void EmergencyTeardown::run() const noexcept {
  for (const std::vector<char*>& argv : argv_) {
    const pid_t pid = ::_Fork();  // not fork(): no atfork handlers, async-signal-safe
    if (pid == 0) {
      const int null_fd = ::open("/dev/null", O_RDWR);
      if (null_fd >= 0) {
        ::dup2(null_fd, STDIN_FILENO);
        ::dup2(null_fd, STDOUT_FILENO);
        ::dup2(null_fd, STDERR_FILENO);
      }
      sigset_t none;
      sigemptyset(&none);
      ::sigprocmask(SIG_SETMASK, &none, nullptr);
      ::execve(ip_path_.c_str(), argv.data(), environ);
      ::_exit(127);
    }
    if (pid < 0) continue;
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
  }
  ::unlink(state_path_.c_str());
}

int register_emergency(const EmergencyTeardown* plan) {
  for (int i = 0; i < kSlots; ++i) {
    if (g_state[i].load() != kIdle) continue;
    const EmergencyTeardown* expected = nullptr;
    if (g_plans[i].compare_exchange_strong(expected, plan)) return i;
  }
  return -1;
}

bool unregister_emergency(int slot) {
  if (slot < 0 || slot >= kSlots) return true;
  if (g_plans[slot].exchange(nullptr) != nullptr) return true;
  // The handler took it: wait until it is done with the plan's memory.
  for (int i = 0; i < 1000 && g_state[slot].load() == kRunning; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  g_state[slot].store(kIdle);
  return false;
}

void install_signal_teardown() {
  std::call_once(g_install_once, [] {
    for (int sig : kSignals) {
      struct sigaction sa {};
      sa.sa_sigaction = on_signal;
      sa.sa_flags = SA_SIGINFO | SA_RESTART;
      sigemptyset(&sa.sa_mask);
      for (int other : kSignals)
        sigaddset(&sa.sa_mask, other);  // one teardown at a time
      ::sigaction(sig, &sa, &g_previous[sig]);
    }
  });
}

SignalHoldoff::SignalHoldoff() {
  g_holdoff.fetch_add(1);
}

SignalHoldoff::~SignalHoldoff() {
  if (g_holdoff.fetch_sub(1) == 1) {
    const int sig = g_pending_signal.exchange(0);
    if (sig != 0) ::raise(sig);
  }
}

}  // namespace adaptsim::testbed
