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

// Runs in a forked child: only system calls (the parent may have threads).
[[noreturn]] void read_in_child(const char* netns_path, const char* path, int out_fd) {
  const int nsfd = ::open(netns_path, O_RDONLY | O_CLOEXEC);
  if (nsfd < 0 || ::setns(nsfd, CLONE_NEWNET) != 0) ::_exit(kChildNoNetns);
  const int fd = ::open(path, O_RDONLY);
  if (fd < 0) ::_exit(errno == ENOENT ? kChildNoSysctl : kChildIoError);
  char buf[4096];
  ssize_t got;
  while ((got = ::read(fd, buf, sizeof buf)) > 0) {
    if (::write(out_fd, buf, static_cast<std::size_t>(got)) != got) ::_exit(kChildIoError);
  }
  ::_exit(got < 0 ? kChildIoError : kChildOk);
}

}  // namespace

std::string sysctl_path(const std::string& key) {
  std::string path = "/proc/sys/" + key;
  std::replace(path.begin() + 10, path.end(), '.', '/');
  return path;
}

std::optional<std::string> read_netns_sysctl(const std::string& ns, const std::string& key) {
  const std::string netns_path = "/run/netns/" + ns;
  const std::string path = sysctl_path(key);
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) {
    throw RuntimeFailure("pipe: " + std::string(strerror(errno)));
  }
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(pipe_fds[0]);
    read_in_child(netns_path.c_str(), path.c_str(), pipe_fds[1]);
  }
  const int fork_errno = errno;
  ::close(pipe_fds[1]);
  if (pid < 0) {
    ::close(pipe_fds[0]);
    throw RuntimeFailure("fork: " + std::string(strerror(fork_errno)));
  }
  std::string value;
  char buf[4096];
  ssize_t got;
  while ((got = ::read(pipe_fds[0], buf, sizeof buf)) != 0) {
    if (got < 0) {
      if (errno == EINTR) continue;
      break;
    }
    value.append(buf, static_cast<std::size_t>(got));
  }
  ::close(pipe_fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (code == kChildNoSysctl) return std::nullopt;
  if (code == kChildNoNetns) {
    throw RuntimeFailure("cannot enter network namespace " + ns + " (" + netns_path + ")");
  }
  if (code != kChildOk) throw RuntimeFailure("namespace " + ns + ": cannot read " + path);
  while (!value.empty() && (value.back() == '\n' || value.back() == ' '))
    value.pop_back();
  return value;
}

}  // namespace adaptsim::testbed
