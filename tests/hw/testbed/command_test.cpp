// Running ip/tc-like programs without a shell, and reading a state file back; no root needed.
#include <doctest/doctest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "hw/testbed/command.h"
#include "hw/testbed/state_file.h"
#include "sim/core/error.h"

using namespace adaptsim;
using namespace adaptsim::testbed;

TEST_CASE("a command's stdout, stderr and exit code are captured") {
  const CommandResult ok = run_command({"echo", "a b", "c"});
  CHECK(ok.ok());
  CHECK(ok.out == "a b c\n");
  // Arguments reach the program unsplit and unexpanded: no shell in between.
  const CommandResult literal = run_command({"echo", "$HOME;", "*"});
  CHECK(literal.out == "$HOME; *\n");
  const CommandResult failed = run_command({"sh", "-c", "echo oops >&2; exit 3"});
  CHECK_FALSE(failed.ok());
  CHECK(failed.exit_code == 3);
  CHECK(failed.err == "oops\n");
  CHECK(describe_failure({"sh", "-c", "echo oops >&2; exit 3"}, failed) ==
        "`sh -c 'echo oops >&2; exit 3'` failed (exit code 3): oops");
}

TEST_CASE("a command that outlives its deadline is killed") {
  CommandOptions o;
  o.timeout_ns = 200 * kNsPerMs;
  const auto start = std::chrono::steady_clock::now();
  const CommandResult r = run_command({"sleep", "10"}, o);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK(r.timed_out);
  CHECK_FALSE(r.ok());
  CHECK(seconds < 3.0);
  CHECK(r.status() == "timed out");
}

namespace {

// Field `index` (1-based, as in proc(5)) of /proc/<pid>/stat; fields after the command name,
// which is in parentheses and may hold spaces.
long stat_field(const std::string& stat, int index) {
  std::istringstream rest(stat.substr(stat.rfind(')') + 2));
  std::string field;
  for (int i = 3; i <= index; ++i)
    rest >> field;
  return std::stol(field);
}

// Whether `pid` still runs: /proc/<pid> exists and is not a zombie.
bool running(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  if (!std::getline(in, stat)) return false;
  return stat.substr(stat.rfind(')') + 2, 1) != "Z";
}

bool ends_within(pid_t pid, double seconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (running(pid)) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

}  // namespace

TEST_CASE("a command runs in its own process group") {
  // cat reads its own stat: pid (field 1) == process group (field 5), and the group is not ours.
  const CommandResult r = run_command({"cat", "/proc/self/stat"});
  REQUIRE(r.ok());
  const long pid = std::stol(r.out);
  CHECK(stat_field(r.out, 5) == pid);
  CHECK(stat_field(r.out, 5) != ::getpgrp());
}

TEST_CASE("a command that times out is killed with its children") {
  // The shell starts a background sleep and prints its pid; at the deadline the whole group goes,
  // so the sleep (in the shell's group) ends too instead of lingering for 30 s.
  CommandOptions o;
  o.timeout_ns = 300 * kNsPerMs;
  const CommandResult r = run_command({"sh", "-c", "sleep 30 & echo $!; wait"}, o);
  CHECK(r.timed_out);
  const pid_t child = static_cast<pid_t>(std::stol(r.out));
  CHECK(ends_within(child, 3.0));
}

TEST_CASE("a command dies with its caller") {
  // A forked caller runs `sleep 30` through run_command and is SIGKILLed: the sleep gets
  // SIGKILL from the kernel (PR_SET_PDEATHSIG) instead of running on as an orphan.
  const std::string pid_file =
      (std::filesystem::temp_directory_path() / ("command_test_" + std::to_string(::getpid())))
          .string();
  std::filesystem::remove(pid_file);
  const pid_t caller = ::fork();
  REQUIRE(caller >= 0);
  if (caller == 0) {
    run_command(
        {"sh", "-c",
         "echo $$ > " + pid_file + ".tmp; mv " + pid_file + ".tmp " + pid_file + "; exec sleep 30"},
        {60 * kNsPerSecond});
    ::_exit(0);
  }
  pid_t sleeper = -1;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (sleeper < 0 && std::chrono::steady_clock::now() < deadline) {
    std::ifstream in(pid_file);
    if (!(in >> sleeper)) sleeper = -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ::kill(caller, SIGKILL);
  int status = 0;
  ::waitpid(caller, &status, 0);
  std::filesystem::remove(pid_file);
  REQUIRE(sleeper > 0);
  CHECK(ends_within(sleeper, 3.0));
}

TEST_CASE("a missing program is a RuntimeFailure naming it") {
  CHECK_THROWS_WITH_AS(run_command({"adaptsim-no-such-program", "x"}),
                       doctest::Contains("adaptsim-no-such-program x"), RuntimeFailure);
  CHECK_FALSE(find_program("adaptsim-no-such-program").has_value());
  // ip and tc live in sbin, which find_program searches even when PATH lacks it.
  CHECK(find_program("sh").has_value());
}

TEST_CASE("command lines quote what a shell would split") {
  CHECK(command_line({"ip", "link", "add", "a-br", "type", "bridge"}) ==
        "ip link add a-br type bridge");
  CHECK(command_line({"echo", "it's", ""}) == "echo 'it'\\''s' ''");
}

TEST_CASE("a state file's records are read back, unknown lines ignored") {
  const StateRecord r = parse_state("tb",
                                    "owner 4242 123456\n"
                                    "topology cloud-vms\n"
                                    "subnet 10.213.0.0/16\n"
                                    "host tb-h0 10.213.1.1 25000000 25000000\n"
                                    "link tb-br\n"
                                    "netns tb-h0\n"
                                    "future-record x\n"
                                    "link tb-v0\n");
  CHECK(r.prefix == "tb");
  CHECK(r.owner_pid == 4242);
  CHECK(r.owner_start_ticks == 123456);
  CHECK(r.topology == "cloud-vms");
  CHECK(r.subnet == "10.213.0.0/16");
  CHECK(r.host_lines == std::vector<std::string>{"tb-h0 10.213.1.1 25000000 25000000"});
  const std::vector<PlannedObject> expected = {
      {ObjectKind::kLink, "tb-br"}, {ObjectKind::kNetns, "tb-h0"}, {ObjectKind::kLink, "tb-v0"}};
  CHECK(r.objects == expected);
  CHECK(state_path("tb") == std::filesystem::path("/run/adaptsim-testbed/tb.state"));
}

TEST_CASE("a process's start time identifies it: a missing process has none") {
  CHECK(process_start_ticks(static_cast<int>(::getpid())).has_value());
  CHECK_FALSE(process_start_ticks(0x3fffffff).has_value());
}
