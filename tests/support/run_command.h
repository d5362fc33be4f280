#pragma once
// Runs a command line through the shell for tests of the tools (simctl, calibrate, the GPU tools):
// stdout and stderr together, and the exit code (128 + the signal when a signal ended it, so a
// crash never reads as an exit code a test expects).

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <stdexcept>
#include <string>

namespace adaptsim::testing {

struct CommandResult {
  int code = -1;
  std::string output;  // stdout and stderr together
};

inline CommandResult run_command(const std::string& command) {
  FILE* p = popen((command + " 2>&1").c_str(), "r");
  if (p == nullptr) throw std::runtime_error("popen failed: " + command);
  CommandResult r;
  std::array<char, 4096> buf;
  while (std::fgets(buf.data(), buf.size(), p))
    r.output += buf.data();
  const int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

}  // namespace adaptsim::testing
