#include "hw/testbed/netns_sysctl.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "sim/core/error.h"

namespace adaptsim::testbed {
namespace {

// Child exit codes.
constexpr int kChildOk = 0;
constexpr int kChildNoNetns = 10;
constexpr int kChildNoSysctl = 11;
constexpr int kChildIoError = 12;

// Runs in a forked child: only system calls (the parent may have threads). Enters the namespace,
// then reads the file to out_fd (value == nullptr) or writes value to it; on a failed open or
// write, errno's bytes go to out_fd.
[[noreturn]] void in_child(const char* netns_path, const char* path, const char* value,
                           int out_fd) {
  const int nsfd = ::open(netns_path, O_RDONLY | O_CLOEXEC);
  if (nsfd < 0 || ::setns(nsfd, CLONE_NEWNET) != 0) ::_exit(kChildNoNetns);
  const int fd = ::open(path, value ? O_WRONLY : O_RDONLY);
  if (fd < 0) {
    const int e = errno;
    (void)!::write(out_fd, &e, sizeof e);
    ::_exit(e == ENOENT ? kChildNoSysctl : kChildIoError);
  }
  if (value) {
    const std::size_t n = std::strlen(value);
    if (::write(fd, value, n) != static_cast<ssize_t>(n)) {
      const int e = errno;
      (void)!::write(out_fd, &e, sizeof e);
      ::_exit(kChildIoError);
    }
    ::_exit(::close(fd) == 0 ? kChildOk : kChildIoError);
  }
  char buf[4096];
  ssize_t got;
  while ((got = ::read(fd, buf, sizeof buf)) > 0) {
    if (::write(out_fd, buf, static_cast<std::size_t>(got)) != got) ::_exit(kChildIoError);
  }
  ::_exit(got < 0 ? kChildIoError : kChildOk);
}

struct ChildResult {
  int code = -1;       // kChild*, or -1 when the child did not exit normally
  std::string output;  // what it wrote to the pipe
};

// Forks a child that enters namespace `ns` and reads (value == nullptr) or writes the sysctl.
ChildResult run_in_netns(const std::string& ns, const std::string& path, const char* value) {
  const std::string netns_path = "/run/netns/" + ns;
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) {
    throw RuntimeFailure("pipe: " + std::string(strerror(errno)));
  }
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(pipe_fds[0]);
    in_child(netns_path.c_str(), path.c_str(), value, pipe_fds[1]);
  }
  const int fork_errno = errno;
  ::close(pipe_fds[1]);
  if (pid < 0) {
    ::close(pipe_fds[0]);
    throw RuntimeFailure("fork: " + std::string(strerror(fork_errno)));
  }
  ChildResult result;
  char buf[4096];
  ssize_t got;
  while ((got = ::read(pipe_fds[0], buf, sizeof buf)) != 0) {
    if (got < 0) {
      if (errno == EINTR) continue;
      break;
    }
    result.output.append(buf, static_cast<std::size_t>(got));
  }
  ::close(pipe_fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  result.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (result.code == kChildNoNetns) {
    throw RuntimeFailure("cannot enter network namespace " + ns + " (" + netns_path + ")");
  }
  return result;
}

// The errno a failed child sent, as text.
std::string child_errno(const ChildResult& r) {
  int e = 0;
  if (r.output.size() != sizeof e) return "unknown error";
  std::memcpy(&e, r.output.data(), sizeof e);
  return strerror(e);
}

}  // namespace

std::string sysctl_path(const std::string& key) {
  std::string path = "/proc/sys/" + key;
  std::replace(path.begin() + 10, path.end(), '.', '/');
  return path;
}

std::optional<std::string> read_netns_sysctl(const std::string& ns, const std::string& key) {
  const std::string path = sysctl_path(key);
  ChildResult r = run_in_netns(ns, path, nullptr);
  if (r.code == kChildNoSysctl) return std::nullopt;
  if (r.code != kChildOk) throw RuntimeFailure("namespace " + ns + ": cannot read " + path);
  std::string& value = r.output;
  while (!value.empty() && (value.back() == '\n' || value.back() == ' '))
    value.pop_back();
  return value;
}

void write_netns_sysctl(const std::string& ns, const std::string& key, const std::string& value) {
  const ChildResult r = run_in_netns(ns, sysctl_path(key), value.c_str());
  if (r.code != kChildOk) {
    throw RuntimeFailure("namespace " + ns + ": cannot set " + key + "=" + value + ": " +
                         (r.code == kChildNoSysctl ? "no such sysctl" : child_errno(r)));
  }
}

}  // namespace adaptsim::testbed
