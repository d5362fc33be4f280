#include "hw/tcp/launcher.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "sim/core/error.h"

extern char** environ;

namespace adaptsim::tcp {
namespace {

// Set by the launcher's signal handler. A signal handler can only reach static storage; this is
// the one piece of process-wide state in hw/tcp, live only inside launch_local().
volatile sig_atomic_t g_launcher_interrupted = 0;

extern "C" void on_launcher_signal(int) {
  g_launcher_interrupted = 1;
}

// Reaping poll period: short enough that a dead worker's peers are killed promptly after the
// grace period, long enough to cost nothing.
constexpr auto kPollPeriod = std::chrono::milliseconds(5);

bool is_launch_variable(const char* entry) {
  for (const char* name : {kEnvRank, kEnvSize, kEnvSecret, kEnvAddresses, kEnvListenFd}) {
    const std::size_t n = std::strlen(name);
    if (std::strncmp(entry, name, n) == 0 && entry[n] == '=') return true;
  }
  return false;
}

std::vector<char*> c_strings(std::vector<std::string>& v) {
  std::vector<char*> out;
  out.reserve(v.size() + 1);
  for (std::string& s : v)
    out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

int parse_int(const char* name, const char* text) {
  int v = 0;
  const std::string_view s(text);
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || ptr != s.data() + s.size()) {
    throw InputError(std::string("environment variable ") + name + "=\"" + text +
                     "\" is not an integer");
  }
  return v;
}

}  // namespace

std::string WorkerExit::describe() const {
  std::string s = "rank " + std::to_string(rank) + " (pid " + std::to_string(pid) + ")";
  if (signal != 0) {
    s += killed_by_launcher
             ? " was killed by the launcher"
             : " was killed by signal " + std::to_string(signal) + " (" + strsignal(signal) + ")";
  } else {
    s += " exited with code " + std::to_string(exit_code);
  }
  return s;
}

bool LaunchResult::ok() const {
  return !interrupted &&
         std::all_of(workers.begin(), workers.end(), [](const WorkerExit& w) { return w.ok(); });
}

std::string LaunchResult::summary() const {
  std::vector<const WorkerExit*> failed;
  for (const WorkerExit& w : workers) {
    if (!w.ok()) failed.push_back(&w);
  }
  // A worker ended by a signal nobody in the launcher sent is the likely root cause (the others
  // fail because they lost it); then reaping order.
  auto rank_of = [](const WorkerExit* w) {
    return w->signal != 0 && !w->killed_by_launcher ? 0 : 1;
  };
  std::stable_sort(failed.begin(), failed.end(), [&](const WorkerExit* a, const WorkerExit* b) {
    return std::pair(rank_of(a), a->exit_order) < std::pair(rank_of(b), b->exit_order);
  });
  std::string s;
  for (const WorkerExit* f : failed) {
    const WorkerExit& w = *f;
    if (!s.empty()) s += "; ";
    s += w.describe();
  }
  if (interrupted) s = "interrupted" + (s.empty() ? "" : ": " + s);
  return s.empty() ? "all " + std::to_string(workers.size()) + " workers succeeded" : s;
}

std::vector<std::string> environment_without_launch_variables() {
  std::vector<std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    if (!is_launch_variable(*e)) env.emplace_back(*e);
  }
  return env;
}

LaunchResult spawn_and_supervise(std::vector<WorkerCommand> workers,
                                 const SuperviseOptions& options) {
  const std::string exec_failed = options.name + ": exec failed\n";

  g_launcher_interrupted = 0;
  struct sigaction action {};
  action.sa_handler = on_launcher_signal;
  sigemptyset(&action.sa_mask);
  struct sigaction old_int {
  }, old_term{}, old_hup{};
  sigaction(SIGINT, &action, &old_int);
  sigaction(SIGTERM, &action, &old_term);
  sigaction(SIGHUP, &action, &old_hup);

  LaunchResult result;
  std::vector<bool> alive;
  const pid_t parent = ::getpid();
  const bool groups = options.own_process_group;
  auto kill_alive = [&] {
    for (std::size_t r = 0; r < alive.size(); ++r) {
      auto& w = result.workers[r];
      if (alive[r] && !w.killed_by_launcher) {
        if (groups) ::kill(-w.pid, SIGKILL);  // its whole group: wrappers and what they started
        ::kill(w.pid, SIGKILL);
        w.killed_by_launcher = true;
      }
    }
  };

  std::string spawn_error;
  int running = 0;
  // Starts `batch` (each command's index in the result follows the earlier ones).
  auto spawn = [&](std::vector<WorkerCommand>& batch) {
    for (WorkerCommand& cmd : batch) {
      if (!spawn_error.empty()) break;
      // Everything exec needs is built before fork: the child only calls async-signal-safe
      // functions.
      std::vector<char*> argv_c = c_strings(cmd.argv), env_c = c_strings(cmd.env);
      const int fd = cmd.inherit.get();
      const pid_t pid = ::fork();
      if (pid < 0) {
        spawn_error = "fork: " + errno_text(errno);
        break;
      }
      if (pid == 0) {
        // Child: die with the launcher; keep only our own inherited descriptor across exec.
        if (groups) ::setpgid(0, 0);
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (::getppid() != parent) ::_exit(1);
        ::signal(SIGINT, SIG_DFL);
        ::signal(SIGTERM, SIG_DFL);
        ::signal(SIGHUP, SIG_DFL);
        if (fd >= 0) ::fcntl(fd, F_SETFD, ::fcntl(fd, F_GETFD) & ~FD_CLOEXEC);
        ::execve(cmd.program.c_str(), argv_c.data(), env_c.data());
        [[maybe_unused]] ssize_t w = ::write(2, exec_failed.data(), exec_failed.size());
        ::_exit(127);
      }
      if (groups) ::setpgid(pid, pid);  // also here: whichever of parent and child runs first
      WorkerExit exit;
      exit.rank = static_cast<int>(result.workers.size());
      exit.pid = pid;
      result.workers.push_back(exit);
      alive.push_back(true);
      ++running;
    }
    for (WorkerCommand& w : batch)
      w.inherit.reset();  // the workers hold them now
    if (!spawn_error.empty()) kill_alive();
  };
  spawn(workers);

  using Clock = std::chrono::steady_clock;
  std::optional<Clock::time_point> first_failure;
  int next_exit_order = 0;
  auto ask_for_more = [&] {
    if (!options.more || first_failure || !spawn_error.empty() || g_launcher_interrupted) return;
    std::vector<WorkerCommand> more = options.more(alive);
    spawn(more);
  };
  while (running > 0) {
    ask_for_more();
    bool reaped = false;
    for (std::size_t r = 0; r < alive.size(); ++r) {
      if (!alive[r]) continue;
      auto& w = result.workers[r];
      int status = 0;
      const pid_t got = ::waitpid(w.pid, &status, WNOHANG);
      if (got == 0) continue;
      if (got < 0 && errno == EINTR) continue;
      alive[r] = false;
      w.exit_order = next_exit_order++;
      --running;
      reaped = true;
      if (got < 0) {
        w.exit_code = 127;  // not our child any more: count it as failed
      } else if (WIFEXITED(status)) {
        w.exit_code = WEXITSTATUS(status);
      } else if (WIFSIGNALED(status)) {
        w.signal = WTERMSIG(status);
      }
      if (!w.ok()) {
        if (!first_failure && !options.others_carry_on) first_failure = Clock::now();
        if (groups) ::kill(-w.pid, SIGKILL);  // what a failed wrapper may have left in its group
      }
    }
    // A worker that was the last to run may have asked for new ones just before it exited.
    if (running == 0) ask_for_more();
    if (g_launcher_interrupted) {
      result.interrupted = true;
      kill_alive();
    }
    if (first_failure &&
        Clock::now() - *first_failure > std::chrono::nanoseconds(options.grace_ns)) {
      kill_alive();
    }
    if (!reaped && running > 0) std::this_thread::sleep_for(kPollPeriod);
  }

  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGTERM, &old_term, nullptr);
  sigaction(SIGHUP, &old_hup, nullptr);
  if (!spawn_error.empty()) throw RuntimeFailure("launching workers failed: " + spawn_error);
  return result;
}

LaunchResult launch_local(const LaunchOptions& options) {
  if (options.procs < 1) {
    throw InputError("--procs must be at least 1, got " + std::to_string(options.procs));
  }
  const int n = options.procs;
  std::vector<UniqueFd> listeners;
  std::vector<SocketAddress> addresses;
  for (int r = 0; r < n; ++r) {
    listeners.push_back(listen_tcp({options.host, 0}));
    addresses.push_back(local_address(listeners.back().get()));
  }
  std::string address_list;
  for (const SocketAddress& a : addresses) {
    if (!address_list.empty()) address_list += ',';
    address_list += a.str();
  }
  const std::string secret = JobSecret::random().hex();
  const std::vector<std::string> base_env = environment_without_launch_variables();
  std::vector<WorkerCommand> workers(static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r) {
    WorkerCommand& w = workers[static_cast<std::size_t>(r)];
    w.program = options.program;
    w.argv = options.argv.empty() ? std::vector<std::string>{options.program} : options.argv;
    w.env = base_env;
    w.inherit = std::move(listeners[static_cast<std::size_t>(r)]);
    w.env.push_back(std::string(kEnvRank) + "=" + std::to_string(r));
    w.env.push_back(std::string(kEnvSize) + "=" + std::to_string(n));
    w.env.push_back(std::string(kEnvSecret) + "=" + secret);
    w.env.push_back(std::string(kEnvAddresses) + "=" + address_list);
    w.env.push_back(std::string(kEnvListenFd) + "=" + std::to_string(w.inherit.get()));
  }
  SuperviseOptions so;
  so.grace_ns = options.grace_ns;
  so.name = "adaptsim-tcp launcher";
  return spawn_and_supervise(std::move(workers), so);
}

LaunchResult launch_self(int procs, int argc, char** argv, TimeNs grace_ns) {
  LaunchOptions lo;
  lo.procs = procs;
  lo.argv.assign(argv, argv + argc);
  lo.grace_ns = grace_ns;
  return launch_local(lo);
}

std::optional<LaunchedWorker> launched_worker_from_env() {
  const char* rank = std::getenv(kEnvRank);
  if (rank == nullptr) return std::nullopt;
  auto need = [](const char* name) {
    const char* v = std::getenv(name);
    if (v == nullptr) {
      throw InputError(std::string(kEnvRank) + " is set but " + name + " is missing");
    }
    return v;
  };
  LaunchedWorker w;
  w.cluster.rank = parse_int(kEnvRank, rank);
  const int size = parse_int(kEnvSize, need(kEnvSize));
  w.cluster.secret =
      JobSecret::from_hex(need(kEnvSecret), std::string("environment variable ") + kEnvSecret);
  w.cluster.addresses = parse_host_list(need(kEnvAddresses));
  if (static_cast<int>(w.cluster.addresses.size()) != size) {
    throw InputError(std::string(kEnvAddresses) + " lists " +
                     std::to_string(w.cluster.addresses.size()) + " addresses for " +
                     std::to_string(size) + " ranks");
  }
  w.cluster.validate();
  const int fd = parse_int(kEnvListenFd, need(kEnvListenFd));
  int listening = 0;
  socklen_t len = sizeof listening;
  if (fd < 0 || ::getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) != 0 || !listening) {
    throw InputError(std::string(kEnvListenFd) + "=" + std::to_string(fd) +
                     " is not a listening socket");
  }
  set_cloexec(fd, true);
  w.listener = UniqueFd(fd);
  return w;
}

}  // namespace adaptsim::tcp
