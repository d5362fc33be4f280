// The sweep's thread pool (sim/run/thread_pool.h) and the tasks it runs side by side: results in
// task order, the lowest-numbered failure rethrown, on_done serialised, and a sweep's rows the
// same on one thread as on four. Under ThreadSanitizer (scripts/test-sanitizers.sh tsan) these
// are the in-process checks that tasks share nothing unsynchronised.

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "sim/run/runner.h"
#include "sim/run/scenario.h"
#include "sim/run/thread_pool.h"

namespace fs = std::filesystem;
using namespace adaptsim;

TEST_CASE("parallel_map returns results in task order, whatever order tasks finish in") {
  // Task i sleeps (n - i) * 100 us: later tasks finish first, yet results[i] == i * i.
  const std::size_t n = 40;
  const auto results = run::parallel_map<std::size_t>(n, 4, [&](std::size_t i) {
    std::this_thread::sleep_for(std::chrono::microseconds(100 * (n - i)));
    return i * i;
  });
  REQUIRE(results.size() == n);
  for (std::size_t i = 0; i < n; ++i)
    CHECK(results[i] == i * i);
}

TEST_CASE("parallel_map calls on_done once per task, one call at a time, counting 1..n") {
  // Not atomic on purpose: on_done is documented as serialised, so plain counters must do.
  const std::size_t n = 200;
  std::vector<std::size_t> seen;
  std::size_t calls = 0;
  std::atomic<std::size_t> ran{0};
  run::parallel_map<int>(
      n, 4,
      [&](std::size_t) {
        ++ran;
        return 0;
      },
      [&](std::size_t done) {
        ++calls;
        seen.push_back(done);
      });
  CHECK(ran == n);
  REQUIRE(calls == n);
  // Counts 1, 2, ..., n in order: each call reports one more completed task than the last.
  for (std::size_t i = 0; i < n; ++i)
    CHECK(seen[i] == i + 1);
}

TEST_CASE("parallel_map rethrows the lowest-numbered failed task's exception") {
  // Tasks 7 and 3 throw; whichever finished first, the caller sees task 3's.
  auto fn = [](std::size_t i) -> int {
    if (i == 7) throw std::runtime_error("task 7");
    if (i == 3) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      throw std::runtime_error("task 3");
    }
    return static_cast<int>(i);
  };
  for (int threads : {1, 2, 8}) {
    CAPTURE(threads);
    try {
      run::parallel_map<int>(16, threads, fn);
      FAIL("no exception");
    } catch (const std::runtime_error& e) {
      // With one thread, task 3 fails first and stops the rest; with more, both may run.
      CHECK(std::string(e.what()) == "task 3");
    }
  }
}

TEST_CASE("parallel_map with no tasks, or more threads than tasks") {
  CHECK(run::parallel_map<int>(0, 4, [](std::size_t) { return 1; }).empty());
  const auto two = run::parallel_map<int>(2, 16, [](std::size_t i) { return int(i) + 1; });
  CHECK(two == std::vector<int>{1, 2});
  // 0 threads: one per hardware thread.
  const auto many = run::parallel_map<int>(64, 0, [](std::size_t i) { return int(i); });
  REQUIRE(many.size() == 64);
  CHECK(many[63] == 63);
}

namespace {

// Figure 9 on 2 and 4 cloud VMs at one egress cap, MobileNetV2, two steps: 2 points x 5 systems,
// 10 tasks that run on the pool at once and share the scenario, its topology and the model zoo.
std::vector<std::vector<std::string>> fig9_rows(int threads) {
  run::LoadOptions load;
  load.overrides = {"sweep.topology.params.servers=[2,4]",
                    "sweep.topology.params.nic_egress_bandwidth=[10Gbps]",
                    "workload.models=[mobilenetv2]", "workload.steps=2"};
  const run::Scenario s =
      run::load_scenario(fs::path(ADAPTSIM_SOURCE_DIR) / "scenarios/fig9.yaml", load);
  run::RunOptions options;
  options.threads = threads;
  return run::collect_rows(s, options).summary.rows();
}

}  // namespace

TEST_CASE("a training sweep's rows are the same on one thread and on four") {
  const auto one = fig9_rows(1);
  CHECK(one.size() == 10);
  CHECK(one == fig9_rows(4));
}
