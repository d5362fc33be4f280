#include "sim/core/error.h"

#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <vector>

#include <doctest/doctest.h>

TEST_CASE("print_error_line: lines from processes sharing stderr never interleave") {
  // Four processes write 300 lines each into one pipe as their stderr, concurrently; every line
  // read back must be one whole line of one writer ("tool: writer W line L <padding>").
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  constexpr int kWriters = 4, kLines = 300;
  const std::string padding(120, 'x');
  std::vector<pid_t> children;
  for (int w = 0; w < kWriters; ++w) {
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      ::close(fds[0]);
      ::dup2(fds[1], STDERR_FILENO);
      for (int l = 0; l < kLines; ++l) {
        adaptsim::print_error_line(
            "tool", "writer " + std::to_string(w) + " line " + std::to_string(l) + " " + padding);
      }
      ::_exit(0);
    }
    children.push_back(pid);
  }
  ::close(fds[1]);
  std::string all;
  char buf[4096];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;)
    all.append(buf, static_cast<std::size_t>(n));
  ::close(fds[0]);
  for (pid_t pid : children) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status));
  }
  std::vector<int> next(kWriters, 0);  // each writer's lines arrive in its own order
  std::size_t lines = 0, start = 0;
  for (std::size_t end; (end = all.find('\n', start)) != std::string::npos; start = end + 1) {
    const std::string line = all.substr(start, end - start);
    int w = -1, l = -1;
    REQUIRE_MESSAGE(std::sscanf(line.c_str(), "tool: writer %d line %d", &w, &l) == 2, line);
    REQUIRE(w >= 0);
    REQUIRE(w < kWriters);
    CHECK(l == next[w]++);
    CHECK(line ==
          "tool: writer " + std::to_string(w) + " line " + std::to_string(l) + " " + padding);
    ++lines;
  }
  CHECK(start == all.size());  // nothing after the last newline
  CHECK(lines == kWriters * kLines);
}

TEST_CASE("one_line escapes line breaks and control characters (issue 21)") {
  CHECK(adaptsim::one_line("a\nb\r\tc\x1b") == "a\\nb\\r\\tc\\x1b");
  CHECK(adaptsim::one_line("caf\xc3\xa9 ok") == "caf\xc3\xa9 ok");
}
