// Running ip/tc-like programs without a shell, and reading a state file back; no root needed.
#include <doctest/doctest.h>

#include <unistd.h>

#include <chrono>

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

TEST_CASE("a process's start time identifies it; a missing process has none") {
  CHECK(process_start_ticks(static_cast<int>(::getpid())).has_value());
  CHECK_FALSE(process_start_ticks(0x3fffffff).has_value());
}
