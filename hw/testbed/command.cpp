#include "hw/testbed/command.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>

#include "sim/core/error.h"

extern char** environ;

namespace adaptsim::testbed {
namespace {

bool is_executable(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

// A close-on-exec pipe that closes whatever end is still open when it goes.
struct Pipe {
  int read = -1;
  int write = -1;
  Pipe() {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) throw RuntimeFailure("pipe: " + std::string(strerror(errno)));
    read = fds[0];
    write = fds[1];
  }
  ~Pipe() {
    close_fd(read);
    close_fd(write);
  }
  Pipe(const Pipe&) = delete;
  Pipe& operator=(const Pipe&) = delete;
};

// Child side between fork and execve: only async-signal-safe calls (the parent may have threads).
// `parent` is the parent's pid, read before fork.
[[noreturn]] void exec_child(int in_fd, int out_fd, int err_fd, int report_fd, bool new_netns,
                             pid_t parent, const char* path, char* const* argv) {
  // Die with the parent (SIGKILL when the forking thread ends: run_command's caller waits, so
  // only when the parent dies), kept across execve. If the parent died before prctl, nobody would
  // send the signal: getppid() then no longer names it.
  if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || ::getppid() != parent) ::_exit(127);
  // Own process group: a terminal's Ctrl-C reaches the parent alone, which tears down in order
  // (an `ip` command is not cut off halfway), and a timeout kills the program with its children.
  ::setpgid(0, 0);
  ::dup2(in_fd, STDIN_FILENO);
  ::dup2(out_fd, STDOUT_FILENO);
  ::dup2(err_fd, STDERR_FILENO);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);  // callers may block signals; the program must not
  if (new_netns && ::unshare(CLONE_NEWNET) != 0) {
    const int e = errno;
    [[maybe_unused]] auto n = ::write(report_fd, &e, sizeof e);
    ::_exit(127);
  }
  ::execve(path, argv, environ);
  const int e = errno;
  [[maybe_unused]] auto n = ::write(report_fd, &e, sizeof e);
  ::_exit(127);
}

// argv[0] resolved by find_program, and the argument vector execve takes, built before fork (the
// child may call nothing that allocates).
struct ExecArgs {
  std::string path;
  std::vector<std::string> args;
  std::vector<char*> argv;
  explicit ExecArgs(const std::vector<std::string>& command, const char* caller);
};

}  // namespace

std::string CommandResult::status() const {
  if (timed_out) return "timed out";
  if (signal != 0) return "killed by signal " + std::to_string(signal);
  return "exit code " + std::to_string(exit_code);
}

std::optional<std::string> find_program(const std::string& name) {
  if (name.find('/') != std::string::npos) {
    return is_executable(name) ? std::optional<std::string>(name) : std::nullopt;
  }
  std::string dirs;
  if (const char* path = std::getenv("PATH")) dirs = path;
  dirs += ":/usr/sbin:/sbin:/usr/bin:/bin";
  std::size_t begin = 0;
  while (begin <= dirs.size()) {
    std::size_t end = dirs.find(':', begin);
    if (end == std::string::npos) end = dirs.size();
    const std::string dir = dirs.substr(begin, end - begin);
    if (!dir.empty()) {
      const std::string candidate = dir + "/" + name;
      if (is_executable(candidate)) return candidate;
    }
    begin = end + 1;
  }
  return std::nullopt;
}

ExecArgs::ExecArgs(const std::vector<std::string>& command, const char* caller) : args(command) {
  if (command.empty()) throw RuntimeFailure(std::string(caller) + ": empty command");
  const std::optional<std::string> found = find_program(command[0]);
  if (!found) throw RuntimeFailure("`" + command_line(command) + "`: program not found");
  path = *found;
  for (std::string& a : args)
    argv.push_back(a.data());
  argv.push_back(nullptr);
}

CommandResult run_command(const std::vector<std::string>& argv, const CommandOptions& options) {
  // Everything the child needs is built before fork.
  ExecArgs exec(argv, "run_command");

  // Pipes for stdout, stderr and the child's exec errno; closed on every path out.
  Pipe out, err, report;
  const int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (null_fd < 0) throw RuntimeFailure("/dev/null: " + std::string(strerror(errno)));
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid == 0) {
    exec_child(null_fd, out.write, err.write, report.write, options.new_netns, parent,
               exec.path.c_str(), exec.argv.data());
  }
  const int fork_errno = errno;
  ::close(null_fd);
  if (pid < 0) throw RuntimeFailure("fork: " + std::string(strerror(fork_errno)));
  ::setpgid(pid, pid);  // as the child does; whichever runs first wins, the other is a no-op
  close_fd(out.write);
  close_fd(err.write);
  close_fd(report.write);

  CommandResult result;
  const TimeNs deadline = steady_now_ns() + options.timeout_ns;
  while (out.read >= 0 || err.read >= 0) {
    pollfd fds[2];
    int n = 0;
    int idx_out = -1;
    int idx_err = -1;
    if (out.read >= 0) {
      idx_out = n;
      fds[n++] = {out.read, POLLIN, 0};
    }
    if (err.read >= 0) {
      idx_err = n;
      fds[n++] = {err.read, POLLIN, 0};
    }
    const TimeNs left = deadline - steady_now_ns();
    if (left <= 0) {
      result.timed_out = true;
      break;
    }
    const int ready = ::poll(fds, static_cast<nfds_t>(n), static_cast<int>(left / kNsPerMs) + 1);
    if (ready < 0 && errno != EINTR) break;
    if (ready <= 0) continue;
    char buf[16384];
    auto drain = [&](int idx, int& fd, std::string& sink) {
      if (idx < 0 || fds[idx].revents == 0) return;
      const ssize_t got = ::read(fd, buf, sizeof buf);
      if (got > 0) {
        sink.append(buf, static_cast<std::size_t>(got));
      } else if (got == 0 || errno != EINTR) {
        close_fd(fd);
      }
    };
    drain(idx_out, out.read, result.out);
    drain(idx_err, err.read, result.err);
  }
  close_fd(out.read);
  close_fd(err.read);
  if (result.timed_out) {
    ::kill(-pid, SIGKILL);  // the program's group (exec_child made it the leader)
    ::kill(pid, SIGKILL);   // in case setpgid had not run yet
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  int exec_errno = 0;
  const bool exec_failed = ::read(report.read, &exec_errno, sizeof exec_errno) == sizeof exec_errno;
  if (exec_failed) {
    throw RuntimeFailure("`" + command_line(argv) + "`: cannot " +
                         (options.new_netns ? "create a network namespace or " : "") +
                         "execute: " + strerror(exec_errno));
  }
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status) && !result.timed_out) result.signal = WTERMSIG(status);
  if (result.timed_out) {
    result.err += (result.err.empty() ? "" : "\n") + std::string("timed out after ") +
                  std::to_string(options.timeout_ns / kNsPerMs) + " ms and was killed";
  }
  return result;
}

namespace {

std::string read_text(const std::filesystem::path& path) {
  std::string text;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return text;
  char buf[16384];
  for (ssize_t got; (got = ::read(fd, buf, sizeof buf)) > 0;)
    text.append(buf, static_cast<std::size_t>(got));
  ::close(fd);
  return text;
}

}  // namespace

BackgroundCommand::BackgroundCommand(const std::vector<std::string>& argv,
                                     const std::filesystem::path& out,
                                     const std::filesystem::path& err)
    : argv_(argv), out_(out), err_(err) {
  ExecArgs exec(argv, "BackgroundCommand");
  const int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  const int out_fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  const int err_fd = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  Pipe report;
  const auto close_all = [&] {
    for (int fd : {null_fd, out_fd, err_fd})
      if (fd >= 0) ::close(fd);
  };
  if (null_fd < 0 || out_fd < 0 || err_fd < 0) {
    const std::string why = strerror(errno);
    close_all();
    throw RuntimeFailure("`" + command_line(argv) + "`: cannot open its output files in " +
                         out.parent_path().string() + ": " + why);
  }
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid == 0) {
    exec_child(null_fd, out_fd, err_fd, report.write, false, parent, exec.path.c_str(),
               exec.argv.data());
  }
  const int fork_errno = errno;
  close_all();
  if (pid < 0) throw RuntimeFailure("fork: " + std::string(strerror(fork_errno)));
  ::setpgid(pid, pid);
  close_fd(report.write);
  // The report pipe closes on a successful execve (close-on-exec) or carries its errno.
  int exec_errno = 0;
  ssize_t got;
  while ((got = ::read(report.read, &exec_errno, sizeof exec_errno)) < 0 && errno == EINTR) {
  }
  pid_ = pid;
  if (got == sizeof exec_errno) {
    stop(0);
    throw RuntimeFailure("`" + command_line(argv) + "`: cannot execute: " + strerror(exec_errno));
  }
}

BackgroundCommand::~BackgroundCommand() {
  stop();
}

bool BackgroundCommand::exited() {
  if (reaped_) return true;
  int status = 0;
  const pid_t got = ::waitpid(pid_, &status, WNOHANG);
  if (got == pid_) {
    reaped_ = true;
    status_ = status;
  }
  return reaped_;
}

std::optional<std::string> BackgroundCommand::wait_for_line(const std::string& prefix,
                                                            TimeNs timeout_ns) {
  const TimeNs deadline = steady_now_ns() + timeout_ns;
  while (true) {
    const std::string text = read_text(out_);
    for (std::size_t begin = 0; begin < text.size();) {
      std::size_t end = text.find('\n', begin);
      if (end == std::string::npos) break;  // a line still being written
      if (text.compare(begin, prefix.size(), prefix) == 0) return text.substr(begin, end - begin);
      begin = end + 1;
    }
    if (exited() || steady_now_ns() >= deadline) return std::nullopt;
    ::usleep(2000);
  }
}

CommandResult BackgroundCommand::stop(TimeNs grace_ns) {
  if (result_) return *result_;
  if (!exited()) {
    ::kill(-pid_, SIGTERM);
    const TimeNs deadline = steady_now_ns() + grace_ns;
    while (!exited() && steady_now_ns() < deadline)
      ::usleep(1000);
    if (!exited()) {
      ::kill(-pid_, SIGKILL);
      ::kill(pid_, SIGKILL);
      while (::waitpid(pid_, &status_, 0) < 0 && errno == EINTR) {
      }
      reaped_ = true;
    }
  }
  CommandResult r;
  if (WIFEXITED(status_)) r.exit_code = WEXITSTATUS(status_);
  if (WIFSIGNALED(status_)) r.signal = WTERMSIG(status_);
  r.out = read_text(out_);
  r.err = read_text(err_);
  result_ = r;
  return r;
}

std::string command_line(const std::vector<std::string>& argv) {
  std::string line;
  for (const std::string& a : argv) {
    if (!line.empty()) line += ' ';
    const bool plain = !a.empty() && a.find_first_of(" \t\n'\"\\$`*?;&|<>()") == std::string::npos;
    if (plain) {
      line += a;
    } else {
      line += '\'';
      for (char c : a)
        line += c == '\'' ? std::string("'\\''") : std::string(1, c);
      line += '\'';
    }
  }
  return line;
}

std::string describe_failure(const std::vector<std::string>& argv, const CommandResult& result) {
  std::string err;
  for (char c : result.err)
    err += c == '\n' ? ' ' : c;
  while (!err.empty() && err.back() == ' ')
    err.pop_back();
  std::string out = "`";
  out += command_line(argv);
  out += "` failed (";
  out += result.status();
  out += ")";
  if (!err.empty()) out += ": " + err;
  return out;
}

TimeNs steady_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace adaptsim::testbed
