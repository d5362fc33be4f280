#pragma once
// Exceptions used across adaptsim. Library code throws; tools catch at the top, print one line and
// exit non-zero (InputError: exit code 2).

#include <stdexcept>
#include <string>
#include <string_view>

namespace adaptsim {

// Bad user input: a scenario, topology or model file, a --set override, a command-line value.
// The message is complete and printable as one line ("file:line: key 'x': expected ...").
class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A time the simulator derived from its inputs that integer nanoseconds below kTimeHorizonNs
// (sim/core/time.h) cannot hold: every input quantity is range-checked when parsed, but a
// combination (a tiny bandwidth carrying a huge buffer for many steps) can still be beyond it.
// It is bad input: the run stops with this one line and exit code 2.
class TimeOverflow : public InputError {
 public:
  using InputError::InputError;
};
// Throws TimeOverflow for a time of `seconds` (what it was about is in the message).
[[noreturn]] void throw_time_overflow(double seconds);

// A failure at run time that is not the user's input: a peer that died, a timeout, an I/O error.
class RuntimeFailure : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Writes "tool: message\n" to stderr in one write(2), so that lines from processes sharing the
// stream (the ranks of one run) never interleave mid-line (one write of at most PIPE_BUF bytes to
// a pipe is atomic). Tools use it for their final error line; the message goes through
// one_line().
void print_error_line(std::string_view tool, std::string_view message);

// `message` on one line: a line break or other control character (a user's multi-line value
// quoted in a message) is written as an escape ("\n", "\x1b").
std::string one_line(std::string_view message);

}  // namespace adaptsim
