#include "sim/core/error.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <string>

namespace adaptsim {

void throw_time_overflow(double seconds) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3g", seconds);
  throw TimeOverflow(std::string("a simulated time of ") + buf +
                     " s is beyond what the simulator's integer nanoseconds hold (2^62 ns, 146 "
                     "years): the scenario's bandwidths or rates are too small, or its durations "
                     "too long, for its sizes and steps");
}

std::string one_line(std::string_view message) {
  std::string out;
  out.reserve(message.size());
  for (const char c : message) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (u < 0x20 || u == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", u);
      out += buf;
    } else {
      out += c;
    }
  }
  return out;
}

void print_error_line(std::string_view tool, std::string_view message) {
  const std::string text = one_line(message);
  std::string line;
  line.reserve(tool.size() + text.size() + 3);
  line.append(tool).append(": ").append(text).push_back('\n');
  std::fflush(stderr);  // anything the C stream still holds goes first
  const char* p = line.data();
  std::size_t left = line.size();
  while (left > 0) {
    const ssize_t n = ::write(STDERR_FILENO, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // stderr is gone: nothing left to tell
    p += n;
    left -= static_cast<std::size_t>(n);
  }
}

}  // namespace adaptsim
