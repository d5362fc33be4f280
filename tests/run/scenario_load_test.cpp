// Loading a scenario's sweep: validation keeps counts only when asked (flat memory for huge
// sweeps), and shows its progress on a terminal (issue 21 item 10).

#include <doctest/doctest.h>
#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "sim/core/error.h"
#include "sim/io/topology_loader.h"
#include "sim/run/runner.h"
#include "sim/run/scenario.h"
#include "sim/train/nccl_model.h"

namespace fs = std::filesystem;
using namespace adaptsim;

namespace {

// A scratch folder of this process: CTest runs each test case as its own process, side by side,
// and two of them writing one file raced (one read it empty).
// Removed when the process ends.
fs::path scratch_dir() {
  struct Scratch {
    fs::path dir = fs::temp_directory_path() /
                   ("adaptsim_run_test-" + std::to_string(static_cast<long>(::getpid())));
    Scratch() { fs::create_directories(dir); }
    ~Scratch() {
      std::error_code ec;
      fs::remove_all(dir, ec);
    }
  };
  static const Scratch scratch;
  return scratch.dir;
}

// A 10 x 5 = 50-point sweep of a small all-reduce.
fs::path write_sweep_scenario() {
  const fs::path p = scratch_dir() / "sweep.yaml";
  std::ofstream(p) << "name: sweep\n"
                      "topology:\n"
                      "  file: "
                   << (fs::path(ADAPTSIM_SOURCE_DIR) / "topologies/cloud-vms.yaml").string()
                   << "\n"
                      "workload: {kind: allreduce, strategies: [STAR, RING], min_bytes: 8B, "
                      "max_bytes: 64B, step_factor: 8}\n"
                      "sweep:\n"
                      "  topology.params.nic_latency: [1us, 2us, 3us, 4us, 5us, 6us, 7us, 8us, "
                      "9us, 10us]\n"
                      "  topology.params.servers: [1, 2, 3, 4, 5]\n";
  return p;
}

// Everything readable on `fd` now.
std::string drain(int fd) {
  std::string out;
  char buf[4096];
  pollfd p{fd, POLLIN, 0};
  while (::poll(&p, 1, 100) > 0 && (p.revents & POLLIN)) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n <= 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  return out;
}

}  // namespace

TEST_CASE("validation can keep only the counts of a sweep's points and tasks") {
  const fs::path p = write_sweep_scenario();
  run::LoadOptions keep;
  const run::Scenario all = run::load_scenario(p, keep);
  // 50 points; per point 2 strategies x sizes 8 B, 64 B = 4 tasks.
  CHECK(all.points.size() == 50);
  CHECK(all.point_count == 50);
  CHECK(all.task_count == 200);
  run::LoadOptions counts;
  counts.keep_points = false;
  const run::Scenario counted = run::load_scenario(p, counts);
  CHECK(counted.points.empty());
  CHECK(counted.point_count == 50);
  CHECK(counted.task_count == 200);
  CHECK(counted.sweep_columns == all.sweep_columns);
}

TEST_CASE("a scenario's text loads as its file does, relative paths from the given folder") {
  // parse_scenario is what fuzz/scenario_fuzz.cpp feeds: the same checks without a file.
  const fs::path p = fs::path(ADAPTSIM_SOURCE_DIR) / "scenarios/allreduce.yaml";
  std::ifstream in(p);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  run::LoadOptions o;
  o.overrides = {"topology.params.servers=4", "workload.strategies=[STAR]"};
  const run::Scenario from_file = run::load_scenario(p, o);
  const run::Scenario from_text = run::parse_scenario(text, p, o);
  CHECK(from_text.path == p);
  CHECK(from_text.resolved_yaml == from_file.resolved_yaml);
  CHECK(from_text.file_hash == from_file.file_hash);
  CHECK(from_text.task_count == from_file.task_count);
  o.overrides = {"workload.strategies=[STAR"};
  CHECK_THROWS_WITH_AS(run::parse_scenario(text, p, o),
                       doctest::Contains("--set workload.strategies=[STAR:"), InputError);
}

TEST_CASE("an all-reduce sweep's strategies unset with --set leave its Open MPI series alone") {
  // allreduce.yaml lists `strategies: all`; null unsets it, as an absent key does.
  const fs::path p = fs::path(ADAPTSIM_SOURCE_DIR) / "scenarios/allreduce.yaml";
  run::LoadOptions o;
  o.overrides = {"topology.params.servers=4", "workload.strategies=null",
                 "workload.mpi=[{version: 4.0.0}]", "workload.min_bytes=1MiB",
                 "workload.max_bytes=4MiB"};
  CHECK(run::load_scenario(p, o).task_count == 3);  // one series, 1, 2 and 4 MiB
  o.overrides.pop_back();
  o.overrides.pop_back();
  o.overrides[2] = "workload.mpi=null";  // then nothing is left to run
  CHECK_THROWS_WITH_AS(run::load_scenario(p, o), doctest::Contains("workload.strategies"),
                       InputError);
}

TEST_CASE("a sweep beyond the stated bound is refused before any point is loaded") {
  // 4 axes of 60 values: 12,960,000 points, above kMaxSweepPoints (10,000,000).
  const fs::path dir = scratch_dir();
  std::string values;
  for (int i = 1; i <= 60; ++i)
    values += (i > 1 ? ", " : "") + std::to_string(i);
  std::ofstream(dir / "huge.yaml")
      << "name: huge\ntopology: {file: "
      << (fs::path(ADAPTSIM_SOURCE_DIR) / "topologies/cloud-vms.yaml").string()
      << "}\nworkload: {kind: allreduce, strategies: [STAR], min_bytes: 8B, max_bytes: 8B}\n"
         "sweep:\n  a.x: ["
      << values << "]\n  a.y: [" << values << "]\n  a.z: [" << values << "]\n  a.w: [" << values
      << "]\n";
  CHECK_THROWS_WITH_AS(run::load_scenario(dir / "huge.yaml"),
                       doctest::Contains("huge.yaml:5: key 'sweep': the sweep's axes multiply to "
                                         "more than 10000000 points"),
                       InputError);
}

TEST_CASE("validation shows its progress on a terminal, and nothing elsewhere") {
  const fs::path p = write_sweep_scenario();
  int master = -1, slave = -1;
  REQUIRE(::openpty(&master, &slave, nullptr, nullptr, nullptr) == 0);
  const int saved = ::dup(STDERR_FILENO);
  run::LoadOptions o;
  o.keep_points = false;
  o.progress = true;
  o.progress_after = std::chrono::milliseconds(0);  // draw from the first point
  ::dup2(slave, STDERR_FILENO);
  const run::Scenario sc = run::load_scenario(p, o);
  ::dup2(saved, STDERR_FILENO);
  const std::string shown = drain(master);
  CHECK(sc.point_count == 50);
  CHECK(shown.find("simctl: validating 50 sweep points [") != std::string::npos);
  CHECK(shown.find("50/50") != std::string::npos);
  // The bar is cleared at the end, so the line after it (ok, or one error line) stands alone.
  CHECK(shown.size() >= 4);
  CHECK(shown.substr(shown.size() - 4) == "\r\033[K");

  // Not a terminal (a pipe): nothing, even with progress asked for.
  int pipe_fds[2];
  REQUIRE(::pipe(pipe_fds) == 0);
  ::fcntl(pipe_fds[0], F_SETFL, O_NONBLOCK);
  ::dup2(pipe_fds[1], STDERR_FILENO);
  (void)run::load_scenario(p, o);
  ::dup2(saved, STDERR_FILENO);
  CHECK(drain(pipe_fds[0]).empty());
  ::close(pipe_fds[0]);
  ::close(pipe_fds[1]);
  ::close(saved);
  ::close(master);
  ::close(slave);
}

TEST_CASE("a result that is not a number is bad input, never a CSV cell (issue 21 item 6)") {
  // A device rate of 1e300 img/s wrote inf and -nan into the CSV with exit code 0. Inputs are
  // range-checked so none arises; this is the runner's last guard.
  io::CsvTable t({"servers", "model", "system", "step_time_ms_mean", "throughput_total"});
  t.add_row({"inf", "resnet50", "nan", "12.5", "100"});  // a sweep value and text: not results
  CHECK_NOTHROW(run::check_results_finite(t, 1));
  for (const char* bad : {"inf", "-inf", "nan", "-nan"}) {
    io::CsvTable u = t;
    u.add_row({"1", "resnet50", "ideal", "1.0", bad});
    CHECK_THROWS_WITH_AS(run::check_results_finite(u, 1),
                         doctest::Contains("row 2, column throughput_total: the result is"),
                         InputError);
  }
}

namespace {

// An all-reduce scenario's time per call (us) by series, from its text (one size).
std::map<std::string, double> time_per_series(const std::string& text) {
  const run::Scenario s = run::parse_scenario(text, fs::temp_directory_path() / "mpi.yaml");
  run::RunOptions options;
  options.progress = false;
  const run::Tables t = run::collect_rows(s, options);
  const std::size_t strategy = t.summary.column("strategy"), time = t.summary.column("time_us");
  std::map<std::string, double> us;
  for (const auto& row : t.summary.rows())
    us[row[strategy]] = std::stod(row[time]);
  return us;
}

}  // namespace

TEST_CASE(
    "an all-reduce sweep's Open MPI series: one per entry, named, rendezvous costing a round "
    "trip") {
  // 4 hosts, 1 MiB: Open MPI 4.0.0's decision runs the ring (1 MiB <= 4 x 1 MiB), whose 6 steps
  // each send a 256 KiB block; by rendezvous each step first waits for a header's round trip,
  // two more path latencies (2 x 2 x 12.5 us on cloud-vms.yaml): at least 6 x 50 us = 300 us
  // more. In the all-gather a step's receive is posted only when the previous step ended, so a
  // header that arrives earlier waits for it: up to one more round trip in all.
  const std::string text =
      "name: mpi\n"
      "topology:\n"
      "  file: " +
      (fs::path(ADAPTSIM_SOURCE_DIR) / "topologies/cloud-vms.yaml").string() +
      "\n"
      "  params: {servers: 4}\n"
      "workload:\n"
      "  kind: allreduce\n"
      "  min_bytes: 1MiB\n"
      "  max_bytes: 1MiB\n"
      "  mpi:\n"
      "    - {version: 4.0.0}\n"
      "    - {version: 4.0.0, rendezvous: false}\n"
      "    - {version: 4.1.4, algorithm: recursive_doubling}\n";
  std::map<std::string, double> us = time_per_series(text);
  REQUIRE(us.size() == 3);
  REQUIRE(us.count("OMPI-4.0.0-fixed") == 1);
  REQUIRE(us.count("OMPI-4.0.0-fixed-eager") == 1);
  REQUIRE(us.count("OMPI-4.1.4-recursive_doubling") == 1);
  const double header_us = 2 * 6 * 40 / 1.25e3;  // 40 B each way per step at 10 Gbit/s
  const double extra = us["OMPI-4.0.0-fixed"] - us["OMPI-4.0.0-fixed-eager"];
  CHECK(extra >= 300 + header_us - 1e-3);
  CHECK(extra <= 350 + header_us);
  // Recursive doubling sends the whole message twice (lg 4), the ring 1.5 times.
  CHECK(us["OMPI-4.1.4-recursive_doubling"] > us["OMPI-4.0.0-fixed"]);
}

TEST_CASE(
    "mpi series: on 3 ranks Rabenseifner's fold makes partners late, and answering in the receive "
    "call sends their payloads one after the other (match_in_receive: false is the ablation)") {
  const std::string text =
      "name: mpi-match\n"
      "topology:\n"
      "  file: " ADAPTSIM_SOURCE_DIR
      "/topologies/cloud-vms.yaml\n"
      "  params: {servers: 3, nic_bandwidth: 1Gbps}\n"
      "workload:\n"
      "  kind: allreduce\n"
      "  min_bytes: 4MiB\n"
      "  max_bytes: 4MiB\n"
      "  mpi:\n"
      "    - {version: 4.1.4}\n"
      "    - {version: 4.1.4, match_in_receive: false}\n";
  std::map<std::string, double> us = time_per_series(text);
  REQUIRE(us.count("OMPI-4.1.4-fixed") == 1);
  REQUIRE(us.count("OMPI-4.1.4-fixed-matchlate") == 1);
  MESSAGE("3 ranks, 4 MiB, Rabenseifner: " << us["OMPI-4.1.4-fixed"] << " us, answered late "
                                           << us["OMPI-4.1.4-fixed-matchlate"] << " us");
  CHECK(us["OMPI-4.1.4-fixed"] > 1.1 * us["OMPI-4.1.4-fixed-matchlate"]);
}

namespace {

// The rows of an all-reduce sweep of one NCCL series, 1 MiB and 1 GiB, over `topology` (a file of
// topologies/ with `params`, YAML flow text) and `workload_keys` (more workload keys, each with
// its trailing ", ").
struct NcclRow {
  std::string series;
  std::uint64_t bytes;
  double time_us;
};
std::vector<NcclRow> nccl_series_rows(const std::string& topology, const std::string& params,
                                      const std::string& workload_keys) {
  const fs::path topo = fs::path(ADAPTSIM_SOURCE_DIR) / "topologies" / topology;
  const std::string text = "name: nccl\ntopology: {file: " + topo.string() + ", params: " + params +
                           "}\n"
                           "workload: {kind: allreduce, nccl: true, " +
                           workload_keys +
                           "endpoint: gpu, min_bytes: 1MiB, max_bytes: 1GiB, step_factor: 1024}\n";
  const run::Scenario s = run::parse_scenario(text, fs::temp_directory_path() / "nccl.yaml");
  run::RunOptions options;
  const run::Tables t = run::collect_rows(s, options);
  const std::size_t strategy = t.summary.column("strategy"), time = t.summary.column("time_us"),
                    size = t.summary.column("size_bytes");
  std::vector<NcclRow> out;
  for (const auto& row : t.summary.rows())
    out.push_back({row[strategy], std::stoull(row[size]), std::stod(row[time])});
  return out;
}

}  // namespace

TEST_CASE("an all-reduce sweep's NCCL series is NCCL's own cost model over the topology's GPUs") {
  const std::vector<NcclRow> rows = nccl_series_rows("hgx-h100.yaml", "{}", "");
  REQUIRE(rows.size() == 2);
  const topo::Topology h100 = topo::build_cluster(
      io::load_topology(fs::path(ADAPTSIM_SOURCE_DIR) / "topologies/hgx-h100.yaml").spec);
  const train::NcclCommParams p =
      train::nccl_params_from_topology(h100, {0, 1, 2, 3, 4, 5, 6, 7}, train::GpuArch::kHopper);
  for (const NcclRow& row : rows) {
    CHECK(row.series == "NCCL");
    const double us = train::nccl_predict(train::NcclColl::kAllReduce, row.bytes, p).time_us;
    CHECK(row.time_us == doctest::Approx(us).epsilon(1e-4));  // rounded up to the ns
  }
}

TEST_CASE("an all-reduce sweep's NCCL series without NVLS: series NCCL-noNVLS, NCCL's ring") {
  const std::vector<NcclRow> rows = nccl_series_rows("hgx-h100.yaml", "{}", "nccl_nvls: false, ");
  REQUIRE(rows.size() == 2);
  const topo::Topology h100 = topo::build_cluster(
      io::load_topology(fs::path(ADAPTSIM_SOURCE_DIR) / "topologies/hgx-h100.yaml").spec);
  train::NcclCommParams p =
      train::nccl_params_from_topology(h100, {0, 1, 2, 3, 4, 5, 6, 7}, train::GpuArch::kHopper);
  REQUIRE(p.nvls_channels == 8);
  p.nvls_channels = 0;
  for (const NcclRow& row : rows) {
    CHECK(row.series == "NCCL-noNVLS");
    const train::NcclEstimate e = train::nccl_predict(train::NcclColl::kAllReduce, row.bytes, p);
    CHECK(e.algo != train::NcclAlgo::kNvls);
    CHECK(row.time_us == doctest::Approx(e.time_us).epsilon(1e-4));
  }
}

TEST_CASE("an all-reduce sweep's NCCL series over NCCL's socket transport: series NCCL-socket") {
  const std::vector<NcclRow> rows =
      nccl_series_rows("dgx1.yaml", "{servers: 2}", "nccl_net: {transport: socket}, ");
  REQUIRE(rows.size() == 2);
  io::LoadedTopology loaded =
      io::load_topology(fs::path(ADAPTSIM_SOURCE_DIR) / "topologies/dgx1.yaml");
  loaded.spec.servers = 2;
  const topo::Topology dgx = topo::build_cluster(loaded.spec);
  std::vector<int> all(16);
  for (int r = 0; r < 16; ++r)
    all[static_cast<std::size_t>(r)] = r;
  train::NcclNet sockets;
  sockets.transport = train::NcclNetTransport::kSocket;
  const train::NcclCommParams p =
      train::nccl_params_from_topology(dgx, all, train::GpuArch::kVolta, sockets);
  const train::NcclCommParams ib =
      train::nccl_params_from_topology(dgx, all, train::GpuArch::kVolta);
  for (const NcclRow& row : rows) {
    CHECK(row.series == "NCCL-socket");
    const double us = train::nccl_predict(train::NcclColl::kAllReduce, row.bytes, p).time_us;
    CHECK(row.time_us == doctest::Approx(us).epsilon(1e-4));
    CHECK(us > train::nccl_predict(train::NcclColl::kAllReduce, row.bytes, ib).time_us);
  }
}
