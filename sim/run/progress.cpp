#include "sim/run/progress.h"

#include <unistd.h>
#include <cstdio>

namespace adaptsim::run {

bool stderr_is_terminal() {
  return ::isatty(STDERR_FILENO) == 1;
}

ProgressBar::ProgressBar(std::string label, std::size_t total, bool enabled,
                         std::chrono::milliseconds show_after)
    : label_(std::move(label)),
      total_(total),
      enabled_(enabled),
      show_after_(show_after),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_) {}

ProgressBar::~ProgressBar() {
  finish();
}

void ProgressBar::update(std::size_t done) {
  if (!enabled_ || total_ == 0) return;
  std::lock_guard<std::mutex> lock(mutex_);
  const auto now = std::chrono::steady_clock::now();
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  if (now - start_ < show_after_) return;  // quick runs print nothing
  if (drawn_ && now - last_draw_ < std::chrono::milliseconds(100) && done < total_) return;
  last_draw_ = now;
  drawn_ = true;
  const int width = 30;
  const double frac = static_cast<double>(done) / static_cast<double>(total_);
  const int filled = static_cast<int>(frac * width);
  const double eta = done > 0 ? elapsed * (1.0 / frac - 1.0) : 0.0;
  std::fprintf(stderr, "\r%s [%.*s%*s] %zu/%zu  %.0fs elapsed, ~%.0fs left ", label_.c_str(),
               filled, "##############################", width - filled, "", done, total_, elapsed,
               eta);
  std::fflush(stderr);
}

void ProgressBar::finish() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (drawn_) {
    std::fprintf(stderr, "\r\033[K");
    std::fflush(stderr);
    drawn_ = false;
  }
}

}  // namespace adaptsim::run
