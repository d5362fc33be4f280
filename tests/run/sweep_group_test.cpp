// The runner under a run::SweepGroup without MPI: K ranks as K threads of one process (as gloo
// tests its algorithms), exchanging bytes through shared slots. Each rank runs its strided share,
// rank 0 writes the files of a single process, byte for byte; a failure on one rank is thrown on
// every rank, and nothing is written. The same under mpirun: tests/simctl/simctl_mpirun_test.cpp.

#include <doctest/doctest.h>

#include <barrier>
#include <exception>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "sim/core/error.h"
#include "sim/run/runner.h"
#include "sim/run/scenario.h"
#include "sim/run/sweep_group.h"

namespace fs = std::filesystem;
using namespace adaptsim;

namespace {

// What the K threads share: a slot per rank and a barrier around every exchange.
struct Exchange {
  explicit Exchange(int ranks) : barrier(ranks), slots(static_cast<std::size_t>(ranks)) {}
  std::barrier<> barrier;
  std::vector<std::string> slots;
};

class ThreadGroup final : public run::SweepGroup {
 public:
  ThreadGroup(Exchange& exchange, int rank) : exchange_(exchange), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return static_cast<int>(exchange_.slots.size()); }
  std::vector<std::string> gather(const std::string& bytes) override {
    exchange_.slots[static_cast<std::size_t>(rank_)] = bytes;
    exchange_.barrier.arrive_and_wait();
    std::vector<std::string> all;
    if (rank_ == 0) all = exchange_.slots;
    exchange_.barrier.arrive_and_wait();  // the slots are free again
    return all;
  }
  std::string broadcast(const std::string& bytes) override {
    if (rank_ == 0) exchange_.slots[0] = bytes;
    exchange_.barrier.arrive_and_wait();
    std::string out = exchange_.slots[0];
    exchange_.barrier.arrive_and_wait();
    return out;
  }

 private:
  Exchange& exchange_;
  int rank_;
};

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::map<std::string, std::string> files_under(const fs::path& root) {
  std::map<std::string, std::string> files;
  if (!fs::exists(root)) return files;
  for (const auto& e : fs::recursive_directory_iterator(root)) {
    if (e.is_regular_file()) files[fs::relative(e.path(), root).string()] = read_file(e.path());
  }
  return files;
}

// Figure 9 on 1 to 4 cloud VMs, MobileNetV2, two steps: 4 points x 2 systems, 8 tasks.
run::Scenario small_fig9(std::vector<std::string> extra = {}) {
  run::LoadOptions load;
  load.overrides = {"sweep.topology.params.servers=[1,2,3,4]",
                    "sweep.topology.params.nic_egress_bandwidth=[10Gbps]",
                    "workload.models=[mobilenetv2]", "workload.steps=2",
                    "workload.systems=[{label: ideal, kind: ideal}, {label: star, kind: kungfu, "
                    "strategy: STAR}]"};
  load.overrides.insert(load.overrides.end(), extra.begin(), extra.end());
  return run::load_scenario(fs::path(ADAPTSIM_SOURCE_DIR) / "scenarios/fig9.yaml", load);
}

// run_scenario on `ranks` threads, each a rank; returns each rank's error ("" when none).
std::vector<std::string> run_as_group(const run::Scenario& scenario, run::RunOptions options,
                                      int ranks) {
  Exchange exchange(ranks);
  std::vector<std::string> errors(static_cast<std::size_t>(ranks));
  {
    std::vector<std::jthread> threads;
    for (int r = 0; r < ranks; ++r) {
      threads.emplace_back([&, r] {
        ThreadGroup group(exchange, r);
        run::RunOptions mine = options;
        mine.group = &group;
        try {
          run::run_scenario(scenario, mine);
        } catch (const InputError& e) {
          errors[static_cast<std::size_t>(r)] = std::string("input: ") + e.what();
        } catch (const std::exception& e) {
          errors[static_cast<std::size_t>(r)] = std::string("runtime: ") + e.what();
        }
      });
    }
  }
  return errors;
}

}  // namespace

TEST_CASE("a sweep shared by 2 or 3 ranks writes a single process's files, byte for byte") {
  const fs::path dir = fs::temp_directory_path() / "sweep_group_test_same";
  fs::remove_all(dir);
  const run::Scenario scenario = small_fig9();
  run::RunOptions options;
  options.threads = 2;
  options.out_dir = dir / "single";
  options.timeline_dir = dir / "single" / "timelines";
  run::run_scenario(scenario, options);
  const auto expected = files_under(dir / "single");
  REQUIRE(expected.size() == 3 + 8);  // CSV, steps CSV, manifest; 4 points x 2 timelines
  for (int ranks : {2, 3}) {
    const std::string name = "np" + std::to_string(ranks);
    options.out_dir = dir / name;
    options.timeline_dir = dir / name / "timelines";
    const auto errors = run_as_group(scenario, options, ranks);
    for (const std::string& e : errors)
      CHECK(e.empty());
    const auto got = files_under(dir / name);
    REQUIRE(got.size() == expected.size());
    for (const auto& [path, bytes] : expected) {
      INFO(name << ": " << path);
      REQUIRE(got.count(path) == 1);
      if (path == "fig9.manifest.json") continue;
      CHECK(got.at(path) == bytes);
    }
    // The manifest: the same but for when and how it ran.
    const std::string manifest = got.at("fig9.manifest.json");
    CHECK(manifest.find("\"ranks\": " + std::to_string(ranks)) != std::string::npos);
    auto without_execution = [](std::string m) {
      std::istringstream in(m);
      std::string line, out;
      while (std::getline(in, line)) {
        if (line.find("\"started_utc\"") == std::string::npos &&
            line.find("\"wall_time_s\"") == std::string::npos &&
            line.find("\"ranks\"") == std::string::npos) {
          out += line + "\n";
        }
      }
      return out;
    };
    CHECK(without_execution(manifest) == without_execution(expected.at("fig9.manifest.json")));
  }
  CHECK(expected.at("fig9.manifest.json").find("\"ranks\": 1") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("a task that fails on rank 1 fails every rank with its error, and nothing is written") {
  // 2 points x 2 systems, strided over 2 ranks: task 3 (point 1, kungfu) runs on rank 1. Its
  // per-message overhead of 1e6 s on each of a step's many messages takes the simulated time past
  // 2^62 ns: TimeOverflow (bad input) while the task runs, after validation.
  const fs::path dir = fs::temp_directory_path() / "sweep_group_test_fails";
  fs::remove_all(dir);
  const run::Scenario scenario =
      small_fig9({"sweep.workload.per_message_overhead=[1us,1000000s]",
                  "sweep.topology.params.servers=[2]", "workload.steps=100"});
  run::RunOptions options;
  options.threads = 1;
  options.out_dir = dir / "single";
  std::string single;
  try {
    run::run_scenario(scenario, options);
  } catch (const InputError& e) {
    single = std::string("input: ") + e.what();
  }
  INFO(single);
  REQUIRE(single.find("input: a simulated time of") == 0);
  options.out_dir = dir / "np2";
  const auto errors = run_as_group(scenario, options, 2);
  CHECK(errors[0] == single);
  CHECK(errors[1] == single);
  CHECK(files_under(dir).empty());
  fs::remove_all(dir);
}

TEST_CASE("agree: an error of rank 2 alone is every rank's, naming rank 2 and its host") {
  Exchange exchange(3);
  std::vector<std::string> errors(3);
  {
    std::vector<std::jthread> threads;
    for (int r = 0; r < 3; ++r) {
      threads.emplace_back([&, r] {
        ThreadGroup group(exchange, r);
        try {
          group.agree([&] {
            if (r == 2) throw InputError("s.yaml: no such file");
          });
          group.agree([] {});  // everyone passes: nothing thrown
        } catch (const InputError& e) {
          errors[static_cast<std::size_t>(r)] = e.what();
        }
      });
    }
  }
  for (const std::string& e : errors) {
    CHECK(e.find("rank 2 (host ") == 0);
    CHECK(e.ends_with("): s.yaml: no such file"));
  }
}
