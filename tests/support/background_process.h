#pragma once
// A program run in the background by tests: fork + execvpe (PATH lookup), stdout and stderr into
// one temporary file, waits with deadlines. The destructor kills (SIGKILL) and reaps it if it is
// still running, and removes the output file.

#include <sys/types.h>

#include <filesystem>
#include <string>
#include <vector>

#include "sim/core/time.h"

namespace adaptsim::test_support {

class BackgroundProcess {
 public:
  // `env`: "NAME=value" entries set for the program, replacing the inherited ones of those names.
  explicit BackgroundProcess(const std::vector<std::string>& argv,
                             const std::vector<std::string>& env = {});
  ~BackgroundProcess();
  BackgroundProcess(const BackgroundProcess&) = delete;
  BackgroundProcess& operator=(const BackgroundProcess&) = delete;

  pid_t pid() const { return pid_; }
  std::string output() const;  // what it printed so far
  // Waits until the output contains `text`; false on timeout or exit.
  bool wait_for_output(const std::string& text, TimeNs timeout_ns);
  // Waits for exit; returns the exit code (128 + signal when killed), or -1 on timeout.
  int wait(TimeNs timeout_ns);
  void signal(int sig);

 private:
  pid_t pid_ = -1;
  bool reaped_ = false;
  int status_ = 0;
  std::filesystem::path output_path_;
};

}  // namespace adaptsim::test_support
