// simctl run under mpirun (issue 18 item 3): the ranks share the sweep's tasks and rank 0 writes
// the CSVs, the manifest and the tasks' files, byte for byte those of one process (the manifest
// but for when and how it ran: started_utc, wall_time_s, ranks); a task that fails on another
// rank fails the run with its error and leaves no files; --live is refused. A CTest entry of its
// own: without an mpirun, or in a build without MPI, it prints why and exits with 77
// (mpirun_test_main), registered as the test's SKIP_RETURN_CODE (CTest reports it skipped, not
// passed); doctest cannot skip at run time, hence the hand-written main.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/find_mpirun.h"
#include "tests/support/run_command.h"

namespace fs = std::filesystem;

namespace {

const fs::path kRoot = ADAPTSIM_SOURCE_DIR;

std::string g_mpirun;  // set by main before any test runs

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A scratch folder per test; each run goes into a folder of its own with the same relative
// arguments, so the manifests' recorded command lines are the same.
struct Scratch {
  fs::path dir;
  explicit Scratch(const std::string& name)
      : dir(fs::temp_directory_path() / ("simctl_mpirun_test_" + name)) {
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  ~Scratch() { fs::remove_all(dir); }
  void write(const std::string& name, const std::string& text) const {
    std::ofstream(dir / name) << text;
  }
  // `simctl run ARGS` in dir/RUN (created), by one process (ranks 0) or under mpirun -np ranks.
  adaptsim::testing::CommandResult run(const std::string& run, int ranks,
                                       const std::string& args) const {
    fs::create_directories(dir / run);
    std::string launcher;
    if (ranks > 0) {
      // Loopback only (self, tcp): the shared-memory transport may be unavailable in containers.
      launcher = g_mpirun + " --allow-run-as-root --oversubscribe --mca btl self,tcp -np " +
                 std::to_string(ranks) + " ";
    }
    return adaptsim::testing::run_command("cd " + (dir / run).string() + " && " + launcher +
                                          SIMCTL_PATH + " run " + args);
  }
};

// Every file under `root`, by its path relative to it, with its bytes.
std::map<std::string, std::string> files_under(const fs::path& root) {
  std::map<std::string, std::string> files;
  for (const auto& e : fs::recursive_directory_iterator(root)) {
    if (e.is_regular_file()) files[fs::relative(e.path(), root).string()] = read_file(e.path());
  }
  return files;
}

// A manifest without the fields that say when and how the run went, which differ between any
// two runs (started_utc, wall_time_s) or say how many processes shared it (ranks).
nlohmann::ordered_json manifest_without_execution(const fs::path& path) {
  nlohmann::ordered_json m = nlohmann::ordered_json::parse(read_file(path));
  for (const char* key : {"started_utc", "wall_time_s", "ranks"})
    m.erase(key);
  return m;
}

// Four sweep points of two systems each (8 tasks, so every rank of 2 or 3 has some), training
// with a steps CSV and per-task timelines.
const std::string kTraining =
    "name: small\n"
    "seed: 5\n"
    "topology:\n"
    "  file: " +
    (kRoot / "topologies/cloud-vms.yaml").string() +
    "\n"
    "  params: {servers: 2}\n"
    "workload:\n"
    "  kind: training\n"
    "  models: [mobilenetv2]\n"
    "  batch_per_gpu: 8\n"
    "  device: " +
    (kRoot / "traces/devices/k80-half.yaml").string() +
    "\n"
    "  warmup_steps: 1\n"
    "  steps: 2\n"
    "  systems:\n"
    "    - {label: ideal, kind: ideal}\n"
    "    - {label: kungfu-star, kind: kungfu, strategy: STAR}\n"
    "sweep:\n"
    "  topology.params.servers: [1, 2, 3, 4]\n";

}  // namespace

TEST_CASE("mpirun -np 2 and -np 3 write a single process's CSVs and files, byte for byte") {
  const Scratch s("same");
  s.write("s.yaml", kTraining);
  const std::string args = "../s.yaml -o out --threads 1 --timeline out/timelines";
  const auto single = s.run("single", 0, args);
  INFO(single.output);
  REQUIRE(single.code == 0);
  const auto expected = files_under(s.dir / "single/out");
  REQUIRE(expected.count("small.csv") == 1);
  REQUIRE(expected.count("small.steps.csv") == 1);
  CHECK(std::count_if(expected.begin(), expected.end(), [](const auto& f) {
          return f.first.ends_with(".trace.json");
        }) == 8);  // 4 points x 2 systems
  for (int ranks : {2, 3}) {
    const std::string name = "np" + std::to_string(ranks);
    const auto r = s.run(name, ranks, args);
    INFO(name << ": " << r.output);
    REQUIRE(r.code == 0);
    // Rank 0 alone reports.
    CHECK(std::count(r.output.begin(), r.output.end(), '\n') == 1);
    CHECK(r.output.find("wrote out/small.csv (8 rows)") != std::string::npos);
    const auto got = files_under(s.dir / name / "out");
    REQUIRE(got.size() == expected.size());
    for (const auto& [path, bytes] : expected) {
      INFO(path);
      REQUIRE(got.count(path) == 1);
      if (path == "small.manifest.json") continue;
      CHECK(got.at(path) == bytes);  // the CSVs, the steps CSV, every timeline
    }
    CHECK(manifest_without_execution(s.dir / name / "out/small.manifest.json") ==
          manifest_without_execution(s.dir / "single/out/small.manifest.json"));
    const auto m = nlohmann::json::parse(read_file(s.dir / name / "out/small.manifest.json"));
    CHECK(m["ranks"] == ranks);
  }
  CHECK(nlohmann::json::parse(read_file(s.dir / "single/out/small.manifest.json"))["ranks"] == 1);
}

TEST_CASE("a task that fails on rank 1 fails the run with its error, and nothing is written") {
  // Point 1 (rank 1 of 2) sends 64 MiB in 8 KiB chunks, 8192 messages one after another on a
  // connection, each with a per-message overhead of 1e6 s (the most a duration may be): 8.2e9 s,
  // past integer nanoseconds' 2^62 ns = 4.6e9 s, so the task throws TimeOverflow while it runs,
  // after validation. Point 0 (an overhead of 1 us, rank 0) succeeds.
  const Scratch s("fails");
  s.write("s.yaml",
          "name: small\n"
          "topology:\n"
          "  file: " +
              (kRoot / "topologies/cloud-vms.yaml").string() +
              "\n"
              "  params: {servers: 2}\n"
              "workload:\n"
              "  kind: allreduce\n"
              "  strategies: [STAR]\n"
              "  min_bytes: 64MiB\n"
              "  max_bytes: 64MiB\n"
              "  chunk_size: 8KiB\n"
              "  per_message_overhead: 1us\n"
              "sweep:\n"
              "  workload.per_message_overhead: [1us, 1000000s]\n");
  const auto single = s.run("single", 0, "../s.yaml -o out");
  INFO(single.output);
  REQUIRE(single.code == 2);
  const std::string error = single.output;  // one line
  CHECK(error.find("simctl: error: a simulated time of") == 0);
  REQUIRE(std::count(error.begin(), error.end(), '\n') == 1);
  const auto r = s.run("np2", 2, "../s.yaml -o out");
  INFO(r.output);
  CHECK(r.code == 2);
  CHECK(r.output.find(error) != std::string::npos);
  CHECK(r.output.find(error) == r.output.rfind(error));  // once: rank 0 reports
  CHECK((!fs::exists(s.dir / "np2/out") || fs::is_empty(s.dir / "np2/out")));
}

TEST_CASE("--live under mpirun is refused in one line, before anything runs") {
  const Scratch s("live");
  s.write("s.yaml", kTraining);
  const auto r = s.run("np2", 2, "../s.yaml -o out --live");
  INFO(r.output);
  CHECK(r.code == 2);
  const std::string expected = "simctl: error: --live under mpirun:";
  CHECK(r.output.find(expected) != std::string::npos);
  CHECK(r.output.find(expected) == r.output.rfind(expected));
  CHECK_FALSE(fs::exists(s.dir / "np2/out"));
}

int main(int argc, char** argv) {
  return adaptsim::testing::mpirun_test_main(argc, argv, ADAPTSIM_SIMCTL_HAVE_MPI,
                                             "simctl cannot share a sweep under mpirun",
                                             ADAPTSIM_MPIEXEC, g_mpirun);
}
