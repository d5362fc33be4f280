#pragma once
// Runs an external program (ip, tc, iperf3) by fork + execve, never through a shell: arguments
// are passed as given, stdout and stderr are captured, and every run has a deadline after which
// the program is killed. Its stdin is /dev/null. The program runs in its own process group (a
// terminal's Ctrl-C reaches only the caller, which then tears down in order; a timeout kills the
// whole group) and dies with the caller (PR_SET_PDEATHSIG SIGKILL: a killed simctl leaves no
// adaptsim-live behind). The testbed builds all its objects through this one function, so every
// failure message names the exact command and carries the program's own stderr.

#include <filesystem>
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

// The machine's monotonic clock (steady_clock), for the deadlines of the testbed's waits.
TimeNs steady_now_ns();

// Runs argv[0] (resolved by find_program) with argv. Throws RuntimeFailure only when the program
// cannot be started (not found, fork failed); a program that runs and fails is reported in the
// result.
CommandResult run_command(const std::vector<std::string>& argv, const CommandOptions& options = {});

// A program started in the background, with run_command's child set-up (own process group, dies
// with the caller, stdin /dev/null), its stdout and stderr going to two files; stop() ends it.
// The testbed's background traffic (hw/runner) runs its adaptsim-traffic sinks and sources so.
class BackgroundCommand {
 public:
  // Throws RuntimeFailure when the program cannot be started (not found, cannot execute).
  BackgroundCommand(const std::vector<std::string>& argv, const std::filesystem::path& out,
                    const std::filesystem::path& err);
  ~BackgroundCommand();  // stop()
  BackgroundCommand(const BackgroundCommand&) = delete;
  BackgroundCommand& operator=(const BackgroundCommand&) = delete;

  const std::vector<std::string>& argv() const { return argv_; }
  // Whether it has ended by itself (never blocks).
  bool exited();
  // Waits up to `timeout_ns` for a line of stdout starting with `prefix` ("listening on"), which
  // it returns; nullopt when the program ended or the time ran out first.
  std::optional<std::string> wait_for_line(const std::string& prefix, TimeNs timeout_ns);
  // SIGTERM to its process group, up to `grace_ns` to end, then SIGKILL; its status and the two
  // files' text. Idempotent: a later call returns the same result.
  CommandResult stop(TimeNs grace_ns = 2 * kNsPerSecond);

 private:
  std::vector<std::string> argv_;
  std::filesystem::path out_, err_;
  int pid_ = -1;
  bool reaped_ = false;
  int status_ = 0;
  std::optional<CommandResult> result_;
};

// The command as a copy-pasteable line, for messages ("ip link add 'a b' type bridge").
std::string command_line(const std::vector<std::string>& argv);

// "`ip link add x type bridge` failed (exit code 2): RTNETLINK answers: File exists": the
// command, its status and its stderr folded onto one line.
std::string describe_failure(const std::vector<std::string>& argv, const CommandResult& result);

}  // namespace adaptsim::testbed
