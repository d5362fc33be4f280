#pragma once
// A progress bar on stderr for runs longer than about a second. It stays silent when stderr is
// not a terminal (logs, CI) and for short runs, so quick commands print nothing extra.

#include <chrono>
#include <cstddef>
#include <mutex>
#include <string>

namespace adaptsim::run {

class ProgressBar {
 public:
  // Nothing is drawn before `show_after` has passed: quick commands print nothing extra.
  ProgressBar(std::string label, std::size_t total, bool enabled,
              std::chrono::milliseconds show_after = std::chrono::seconds(1));
  ~ProgressBar();
  void update(std::size_t done);  // thread-safe
  void finish();

 private:
  std::string label_;
  std::size_t total_;
  bool enabled_;
  bool drawn_ = false;
  std::chrono::milliseconds show_after_;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_draw_;
  std::mutex mutex_;
};

// True when stderr is a terminal.
bool stderr_is_terminal();

}  // namespace adaptsim::run
