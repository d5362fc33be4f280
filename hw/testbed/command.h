#pragma once
// Runs an external program (ip, tc, iperf3) by fork + execve, never through a shell: arguments
// are passed as given, stdout and stderr are captured, and every run has a deadline after which
// the program is killed. Its stdin is /dev/null. The program runs in its own process group (a
// terminal's Ctrl-C reaches only the caller, which then tears down in order; a timeout kills the
// whole group) and dies with the caller (PR_SET_PDEATHSIG SIGKILL: a killed simctl leaves no
// adaptsim-live behind). The testbed builds all its objects through this one function, so every
// failure message names the exact command and carries the program's own stderr.

#include <optional>
#include <string>
#include <vector>

#include "sim/core/time.h"

namespace adaptsim::testbed {

struct CommandOptions {
  TimeNs timeout_ns = 10 * kNsPerSecond;
  // Run the program in a fresh, empty network namespace (unshare in the child): a probe that
  // creates bridges, veths and qdiscs there touches nothing on the machine.
  bool new_netns = false;
};

struct CommandResult {
  int exit_code = -1;  // when it exited
  int signal = 0;      // when a signal ended it
  bool timed_out = false;
  std::string out;
  std::string err;
  bool ok() const { return exit_code == 0 && signal == 0 && !timed_out; }
  // "exit code 2", "killed by signal 9", "timed out after 10 s".
  std::string status() const;
};

// The absolute path of `name` found in $PATH, then /usr/sbin, /sbin, /usr/bin, /bin (ip and tc
// live in sbin, which a non-login PATH may lack); nullopt when none is executable. A name with a
// '/' is returned as is when executable.
std::optional<std::string> find_program(const std::string& name);

// Runs argv[0] (resolved by find_program) with argv. Throws RuntimeFailure only when the program
// cannot be started (not found, fork failed); a program that runs and fails is reported in the
// result.
CommandResult run_command(const std::vector<std::string>& argv, const CommandOptions& options = {});

// The command as a copy-pasteable line, for messages ("ip link add 'a b' type bridge").
std::string command_line(const std::vector<std::string>& argv);

// "`ip link add x type bridge` failed (exit code 2): RTNETLINK answers: File exists": the
// command, its status and its stderr folded onto one line.
std::string describe_failure(const std::vector<std::string>& argv, const CommandResult& result);

}  // namespace adaptsim::testbed
