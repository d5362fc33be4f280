#include "tests/support/background_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace adaptsim::test_support {
namespace {

TimeNs now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// The inherited environment with `overrides` ("NAME=value") set.
std::vector<std::string> environment(const std::vector<std::string>& overrides) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry(*e);
    const std::string name = entry.substr(0, entry.find('=') + 1);
    bool replaced = false;
    for (const std::string& o : overrides)
      replaced = replaced || o.rfind(name, 0) == 0;
    if (!replaced) env.push_back(entry);
  }
  env.insert(env.end(), overrides.begin(), overrides.end());
  return env;
}

}  // namespace

BackgroundProcess::BackgroundProcess(const std::vector<std::string>& argv,
                                     const std::vector<std::string>& env) {
  char path[] = "/tmp/adaptsim-test-output-XXXXXX";
  const int fd = ::mkstemp(path);
  if (fd < 0) throw std::runtime_error("mkstemp failed");
  output_path_ = path;
  std::vector<std::string> args = argv, vars = environment(env);
  std::vector<char*> cargv, cenv;
  for (std::string& a : args)
    cargv.push_back(a.data());
  cargv.push_back(nullptr);
  for (std::string& v : vars)
    cenv.push_back(v.data());
  cenv.push_back(nullptr);
  pid_ = ::fork();
  if (pid_ == 0) {
    const int null_fd = ::open("/dev/null", O_RDONLY);
    ::dup2(null_fd, STDIN_FILENO);
    ::dup2(fd, STDOUT_FILENO);
    ::dup2(fd, STDERR_FILENO);
    ::execvpe(cargv[0], cargv.data(), cenv.data());
    ::_exit(127);
  }
  ::close(fd);
  if (pid_ < 0) throw std::runtime_error("fork failed");
}

BackgroundProcess::~BackgroundProcess() {
  if (pid_ > 0 && !reaped_) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, &status_, 0);
  }
  std::error_code ec;
  std::filesystem::remove(output_path_, ec);
}

std::string BackgroundProcess::output() const {
  std::ifstream in(output_path_);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

bool BackgroundProcess::wait_for_output(const std::string& text, TimeNs timeout_ns) {
  const TimeNs deadline = now_ns() + timeout_ns;
  while (now_ns() < deadline) {
    if (output().find(text) != std::string::npos) return true;
    if (!reaped_ && ::waitpid(pid_, &status_, WNOHANG) == pid_) reaped_ = true;
    if (reaped_) return output().find(text) != std::string::npos;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

int BackgroundProcess::wait(TimeNs timeout_ns) {
  const TimeNs deadline = now_ns() + timeout_ns;
  while (!reaped_) {
    if (::waitpid(pid_, &status_, WNOHANG) == pid_) {
      reaped_ = true;
      break;
    }
    if (now_ns() >= deadline) return -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return WIFSIGNALED(status_) ? 128 + WTERMSIG(status_) : WEXITSTATUS(status_);
}

void BackgroundProcess::signal(int sig) {
  if (!reaped_) ::kill(pid_, sig);
}

}  // namespace adaptsim::test_support
