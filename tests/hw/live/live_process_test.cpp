// adaptsim-live across real processes: hw/tcp's local launcher, the per-rank prefix launcher, the
// result file, a worker killed mid-run (the others fail naming it, nothing is left running), and
// bad input.

#include <doctest/doctest.h>

#include <signal.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include "hw/live/etcd_store.h"
#include "hw/tcp/mpi_rendezvous.h"
#include "tests/hw/live/live_test_support.h"
#include "tests/hw/tcp/tcp_test_support.h"
#include "tests/support/time_scale.h"

using namespace adaptsim;
using namespace adaptsim::live::testing;
using namespace adaptsim::tcp::testing;

namespace {

const double kDeadlineS =
    30 * adaptsim::testing::time_scale();  // far below ctest's; nothing can hang the suite

std::vector<std::string> tool(std::vector<std::string> args) {
  args.insert(args.begin(), live_tool_path());
  return args;
}

// A small inline model (3 tensors, 1.4 MB) with 2 + 4 + 1 ms of compute per step.
std::string config(const std::string& system, int steps) {
  return R"({
    "model": {"name": "tiny", "layers": [
      {"name": "fc", "backward_flops": 1, "tensors": [{"name": "fc.bias", "elements": 100},
                                                       {"name": "fc.weight", "elements": 100000}]},
      {"name": "conv", "backward_flops": 3,
       "tensors": [{"name": "conv.weight", "elements": 250000}]}]},
    "batch_per_gpu": 16,
    "compute": {"forward": "2ms", "backward": "4ms", "optimizer": "1ms"},
    "system": )" +
         system + R"(,
    "warmup_steps": 1, "steps": )" +
         std::to_string(steps) + R"(, "timeout": "10s"})";
}

// An elastic run of KungFu on 2 one-GPU workers starting on 1, with a one-tensor model (400 KB):
// `compute` the split, `extra` more keys (a policy, monitors; each with its trailing comma).
std::string elastic_config(const std::string& compute, const std::string& extra, int steps,
                           const std::string& timeout) {
  return R"({
    "model": {"name": "tiny", "layers": [
      {"name": "fc", "backward_flops": 1, "tensors": [{"name": "fc.weight", "elements": 100000}]}]},
    "batch_per_gpu": 16,
    "compute": )" +
         compute + R"(,
    "system": {"kind": "kungfu", "strategy": "BINARY_TREE_STAR"},
    )" + extra +
         R"(
    "elastic": {"capacity": 2, "ranks_per_host": 1, "initial_workers": 1},
    "warmup_steps": 1, "steps": )" +
         std::to_string(steps) + R"(, "timeout": ")" + timeout + R"("})";
}

// elastic_config's cluster made three workers from the start, with leases of `failure_timeout`.
std::string three_workers(std::string config, const std::string& failure_timeout) {
  const std::string keys =
      R"("elastic": {"capacity": 2, "ranks_per_host": 1, "initial_workers": 1})";
  REQUIRE(config.find(keys) != std::string::npos);
  config.replace(config.find(keys), keys.size(),
                 R"("elastic": {"capacity": 3, "ranks_per_host": 1, "failure_timeout": ")" +
                     failure_timeout + R"("})");
  return config;
}

const std::string kKungFu = R"({"kind": "kungfu", "strategy": "MULTI_BINARY_TREE_STAR"})";
const std::string kHorovod = R"({"kind": "horovod", "cycle_time": "2ms"})";

nlohmann::json read_json(const std::string& path) {
  return nlohmann::json::parse(read_text(path));
}

void check_result(const nlohmann::json& file, int n, int steps) {
  CHECK(file.at("n_ranks") == n);
  CHECK(file.at("verified_steps") == steps + 1);
  const nlohmann::json& j = file.at("result");
  CHECK(j.at("step_s").size() == static_cast<std::size_t>(steps));
  CHECK(j.at("steps").size() == static_cast<std::size_t>(steps + 1));  // warm-up included
  const double step = j.at("step_mean_s").get<double>();
  CHECK(step >= j.at("compute_s").get<double>() - 1e-12);
  CHECK(j.at("compute_s").get<double>() >= 0.007 * (1 - 1e-9));
  CHECK(j.at("samples_per_s_per_gpu").get<double>() == doctest::Approx(16 / step));
  CHECK(j.at("samples_per_s_total").get<double>() ==
        doctest::Approx(n * j.at("samples_per_s_per_gpu").get<double>()));
}

// Waits until `count` processes carry `marker`.
bool wait_for_processes(const std::string& marker, std::size_t count) {
  for (int i = 0; i < 500; ++i) {
    if (processes_with_env(marker).size() >= count) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

// The one process carrying both markers.
int process_with_both(const std::string& a, const std::string& b) {
  const std::vector<int> with_a = processes_with_env(a);
  const std::set<int> set_a(with_a.begin(), with_a.end());
  for (int pid : processes_with_env(b)) {
    if (set_a.count(pid)) return pid;
  }
  return -1;
}

// Each survivor names itself and the dead rank 2.
void check_survivors_name_rank_2(const ProcessResult& r) {
  for (int rank : {0, 1, 3}) {
    const std::string line = "adaptsim-live: rank " + std::to_string(rank) + ": ";
    const auto at = r.err.find(line);
    REQUIRE_MESSAGE(at != std::string::npos, "no error line from rank " << rank);
    const std::string text = r.err.substr(at, r.err.find('\n', at) - at);
    CHECK_MESSAGE(text.find("rank 2 (") != std::string::npos, text);
  }
  CHECK(r.err.find("adaptsim-live: launcher: rank 2 (pid") != std::string::npos);
  CHECK(r.err.find("was killed by signal 9") != std::string::npos);
}

bool all_gone(const std::string& marker) {
  for (int i = 0; i < 300; ++i) {
    if (processes_with_env(marker).empty()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

// Open MPI's mpirun where Debian or a local install puts it, else empty.
std::string find_mpirun() {
  for (const char* c : {"/usr/local/bin/mpirun", "/usr/bin/mpirun"}) {
    if (::access(c, X_OK) == 0) return c;
  }
  return "";
}

// The bytes rank `rank` sent over hw/tcp, from its messages file (run_live_training's
// messages_dir: dst_rank,messages,bytes).
double tcp_bytes_sent(const std::string& dir, int rank) {
  std::istringstream in(read_text(dir + "/rank" + std::to_string(rank) + ".messages.csv"));
  std::string line;
  std::getline(in, line);
  REQUIRE(line == "dst_rank,messages,bytes");
  double total = 0;
  while (std::getline(in, line))
    total += std::stod(line.substr(line.rfind(',') + 1));
  return total;
}

}  // namespace

TEST_CASE("--procs 4: local processes train, rank 0 writes the result JSON") {
  const TempDir tmp;
  const std::string& dir = tmp.path;
  write_text(dir + "/cfg.json", config(kKungFu, 3));
  const auto r = run_process(tool({dir + "/cfg.json", "--procs", "4", "--ranks-per-host", "1", "-o",
                                   dir + "/out/result.json"}),
                             kDeadlineS);
  INFO(diagnostics(r));
  REQUIRE(r.exit_code == 0);
  const auto j = read_json(dir + "/out/result.json");
  check_result(j, 4, 3);
  CHECK(j.at("system") == "kungfu");
  CHECK(j.at("strategy") == "MULTI_BINARY_TREE_STAR");
  CHECK(r.out.find("# live tiny on 4 ranks") != std::string::npos);
  // Written atomically: no temporary file left next to it.
  std::size_t files = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir + "/out"))
    ++files;
  CHECK(files == 1);
}

TEST_CASE("--procs 3 --rank-prefix: every rank runs under its own prefix (host-list rendezvous)") {
  const TempDir tmp;
  const std::string& dir = tmp.path;
  write_text(dir + "/cfg.json", config(kHorovod, 3));
  const auto r = run_process(
      tool({dir + "/cfg.json", "--procs", "3", "--rank-prefix",
            "/usr/bin/env ADAPTSIM_LIVE_TEST_RANK={rank}", "-q", "-o", dir + "/result.json"}),
      kDeadlineS);
  INFO(diagnostics(r));
  REQUIRE(r.exit_code == 0);
  const auto j = read_json(dir + "/result.json");
  check_result(j, 3, 3);
  CHECK(j.at("system") == "horovod");
  CHECK(r.out.empty());
}

TEST_CASE("mpirun: ranks meet through MPI and train over TCP") {
  const std::string mpirun = find_mpirun();
  if (mpirun.empty()) {
    MESSAGE("mpirun not found: skipping the mpirun test");
    return;
  }
  const TempDir tmp;
  const std::string& dir = tmp.path;
  write_text(dir + "/cfg.json", config(kKungFu, 2));
  const auto r = run_process({mpirun, "--allow-run-as-root", "--oversubscribe", "-np", "3", "--mca",
                              "btl", "self,tcp", live_tool_path(), dir + "/cfg.json", "--bind",
                              "127.0.0.1", "-q", "-o", dir + "/result.json"},
                             kDeadlineS);
  INFO(diagnostics(r));
  REQUIRE(r.exit_code == 0);
  check_result(read_json(dir + "/result.json"), 3, 2);
}

TEST_CASE("mpirun with mpi: {live: library}: Horovod reduces through the MPI library itself") {
  const std::string mpirun = find_mpirun();
  const std::string library = tcp::mpi_library_version();  // "Open MPI v4.1.4"
  if (mpirun.empty() || library.rfind("Open MPI v", 0) != 0) {
    MESSAGE("no mpirun or no Open MPI in this build (\"" << library
                                                         << "\"): skipping the MPI library test");
    return;
  }
  const std::string release = library.substr(std::string("Open MPI v").size());
  const TempDir tmp;
  const std::string& dir = tmp.path;
  const int steps = 2;
  // The same Horovod twice under one mpirun each: the model of Open MPI over hw/tcp, then the
  // library. Every rank records what it sent over hw/tcp.
  for (const std::string mode : {"model", "library"}) {
    std::filesystem::create_directories(dir + "/" + mode);
    std::string text = config(R"({"kind": "horovod", "cycle_time": "2ms", "mpi": {"version": ")" +
                                  release + R"(", "live": ")" + mode + R"("}})",
                              steps);
    text.insert(text.rfind('}'), ", \"messages_dir\": \"" + dir + "/" + mode + "\"");
    write_text(dir + "/" + mode + ".json", text);
    const auto r = run_process({mpirun,
                                "--allow-run-as-root",
                                "--oversubscribe",
                                "-np",
                                "3",
                                "--mca",
                                "btl",
                                "self,tcp",
                                "--mca",
                                "btl_tcp_if_include",
                                "lo",
                                "--mca",
                                "mpi_yield_when_idle",
                                "1",
                                live_tool_path(),
                                dir + "/" + mode + ".json",
                                "--bind",
                                "127.0.0.1",
                                "-q",
                                "-o",
                                dir + "/" + mode + "/result.json"},
                               kDeadlineS);
    INFO(mode << ": " << diagnostics(r));
    REQUIRE(r.exit_code == 0);
    // Every step's reduced gradients were checked against the exact sums (verified_steps).
    check_result(read_json(dir + "/" + mode + "/result.json"), 3, steps);
  }
  // The model sends every gradient over hw/tcp (1.4 MB a step, 3 steps with the warm-up, a ring
  // moves 2(n-1)/n of it from each rank); the library sends them through Open MPI's own sockets,
  // leaving hw/tcp the start barrier and the end's statistics.
  const double gradients = 4.0 * (100 + 100000 + 250000);
  for (int rank = 0; rank < 3; ++rank) {
    CHECK(tcp_bytes_sent(dir + "/model", rank) > (steps + 1) * gradients);
    CHECK(tcp_bytes_sent(dir + "/library", rank) < 0.01 * gradients);
  }
}

TEST_CASE("mpi: {live: library} needs mpirun and the release the scenario names") {
  const TempDir tmp;
  const std::string& dir = tmp.path;
  write_text(dir + "/lib.json",
             config(R"({"kind": "horovod", "mpi": {"version": "4.0.0", "live": "library"}})", 1));
  // Not under mpirun: refused before any rank starts.
  const auto r = run_process(tool({dir + "/lib.json", "--procs", "2"}), kDeadlineS);
  INFO(diagnostics(r));
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("adaptsim-live must run under mpirun") != std::string::npos);
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  // Under mpirun with another release than the library's (4.0.0 is not Debian's).
  const std::string mpirun = find_mpirun();
  const std::string library = tcp::mpi_library_version();
  if (mpirun.empty() || library.rfind("Open MPI v4.0.0", 0) == 0 ||
      library.rfind("Open MPI v", 0) != 0) {
    MESSAGE("no mpirun, no Open MPI or Open MPI 4.0.0 (\"" << library
                                                           << "\"): skipping the release check");
    return;
  }
  const auto m =
      run_process({mpirun, "--allow-run-as-root", "--oversubscribe", "-np", "2", "--mca", "btl",
                   "self,tcp", live_tool_path(), dir + "/lib.json", "--bind", "127.0.0.1", "-q"},
                  kDeadlineS);
  INFO(diagnostics(m));
  CHECK(m.exit_code != 0);
  CHECK(m.err.find("adaptsim-live: mpi: {live: library}: the system's mpi.version is 4.0.0 but "
                   "the MPI library is " +
                   library) != std::string::npos);
}

TEST_CASE("a worker killed mid-run: the others exit non-zero naming it, nothing is left") {
  const TempDir tmp;
  const std::string& dir = tmp.path;
  write_text(dir + "/cfg.json", config(kKungFu, 100000));
  const std::string marker = unique_marker();
  ChildProcess launcher(tool({dir + "/cfg.json", "--procs", "4", "-q"}), {marker});
  REQUIRE(wait_for_processes(marker, 5));                       // the launcher and its 4 workers
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // well into training
  const int victim = process_with_both(marker, "ADAPTSIM_TCP_RANK=2");
  REQUIRE(victim > 0);
  ::kill(victim, SIGKILL);
  const auto r = launcher.wait(kDeadlineS);
  INFO(diagnostics(r));
  CHECK(r.exit_code == 1);
  check_survivors_name_rank_2(r);
  CHECK(all_gone(marker));
}

TEST_CASE("a worker killed mid-run under the prefix launcher (horovod): same, nothing left") {
  const TempDir tmp;
  const std::string& dir = tmp.path;
  write_text(dir + "/cfg.json", config(kHorovod, 100000));
  const std::string marker = unique_marker();
  ChildProcess launcher(tool({dir + "/cfg.json", "--procs", "4", "--rank-prefix",
                              "/usr/bin/env ADAPTSIM_LIVE_TEST_RANK={rank}", "-q"}),
                        {marker});
  REQUIRE(wait_for_processes(marker, 5));
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const int victim = process_with_both(marker, "ADAPTSIM_LIVE_TEST_RANK=2");
  REQUIRE(victim > 0);
  ::kill(victim, SIGKILL);
  const auto r = launcher.wait(kDeadlineS);
  INFO(diagnostics(r));
  CHECK(r.exit_code == 1);
  check_survivors_name_rank_2(r);
  CHECK(all_gone(marker));
}

TEST_CASE("bad input: one clear line and exit code 2, before any worker starts") {
  const TempDir tmp;
  const std::string& dir = tmp.path;
  write_text(dir + "/nccl.json", config(R"({"kind": "nccl"})", 1));
  write_text(dir + "/ok.json", config(kKungFu, 1));
  struct Case {
    std::vector<std::string> args;
    std::string expect;
  };
  const std::vector<Case> cases = {
      {{dir + "/nccl.json", "--procs", "2"}, "needs GPUs and NCCL"},
      {{dir + "/missing.json", "--procs", "2"}, "missing.json: cannot read the file"},
      {{dir + "/ok.json"}, "--procs N"},
      {{dir + "/ok.json", "--rank-prefix", "env"}, "need --procs N"},
      {{dir + "/ok.json", "--procs", "2", "--rank-prefix", "no-such-program-xyz"},
       "not found in PATH"},
      {{}, "config is required"},
  };
  for (const Case& c : cases) {
    const auto r = run_process(tool(c.args), kDeadlineS);
    INFO(diagnostics(r));
    CHECK(r.exit_code == 2);
    CHECK(r.err.find(c.expect) != std::string::npos);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  }
}

TEST_CASE("an elastic run with its config store in etcd keeps its cluster while etcd is down" *
          doctest::skip(!live::etcd_available())) {
  // Issue 15: etcd stopped mid-run -> every worker keeps its cluster and says so once; a proposal
  // it could not write, its notices and leases wait; once etcd answers again the job resizes.
  const TempDir tmp;
  const std::string& dir = tmp.path;
  live::EtcdServer etcd(dir);
  write_text(
      dir + "/cfg.json",
      elastic_config(R"({"forward": "20ms", "backward": "40ms", "optimizer": "5ms"})",
                     R"("policy": {"name": "resize-schedule", "every": 4, "sizes": [1, 2]},)", 27,
                     "20s"));
  ChildProcess p(tool({dir + "/cfg.json", "--etcd", etcd.endpoint().address.str(),
                       "--elastic-store", dir + "/store", "-o", dir + "/result.json"}));
  // Once the first cluster has connected (its address is in etcd; the job's keys are named after
  // the store folder), and a few steps later, etcd goes away for 0.7 s.
  const live::EtcdStore view(dir + "/store", 2, etcd.endpoint(), "store", kNsPerSecond);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!view.address(0, 0) && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  REQUIRE(view.address(0, 0).has_value());
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  etcd.stop();
  std::this_thread::sleep_for(std::chrono::milliseconds(700));
  etcd.start();
  const ProcessResult r = p.wait(kDeadlineS);
  INFO(diagnostics(r));
  REQUIRE(r.exit_code == 0);
  // Said once per outage by each worker that ran into it (whichever request found it first: a
  // read, its address, its lease; two workers at most here), and that it answers again.
  std::size_t down = 0, back = 0;
  std::istringstream lines(r.err);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("adaptsim-live: worker ", 0) != 0) continue;
    // "etcd at HOST:PORT: unavailable (connect: ...)", or, where etcd died mid-answer, "... a
    // truncated HTTP response": either way the worker's one line of the outage.
    if (line.find(": etcd at ") != std::string::npos) ++down;
    if (line.find("the config store answers again") != std::string::npos) ++back;
  }
  CHECK(down >= 1);
  CHECK(down <= 2);
  // A worker that leaves the cluster before its next read does not get to say it answers again.
  CHECK(back >= 1);
  CHECK(back <= down);
  // Every step ran, and the cluster still changes size after the outage.
  const auto j = read_json(dir + "/result.json");
  const auto& steps = j.at("result").at("steps");
  REQUIRE(steps.size() == 28);
  int changes_after = 0;
  for (std::size_t k = 17; k < steps.size(); ++k)
    changes_after += steps[k].at("workers") != steps[k - 1].at("workers") ? 1 : 0;
  CHECK(changes_after >= 1);
  // Nothing of the job is left in etcd.
  const live::EtcdStore after(dir + "/store", 2, etcd.endpoint(), "store", kNsPerSecond);
  std::string error;
  CHECK_FALSE(after.get(&error).has_value());
  CHECK(error.find("no cluster under /adaptsim/store/") != std::string::npos);
  CHECK(after.notice_versions().empty());
}

TEST_CASE("--measure-start: a new worker's start-up, timed from the notice to its set-up") {
  const TempDir tmp;
  const std::string& dir = tmp.path;
  std::string config =
      elastic_config(R"({"forward": "2ms", "backward": "4ms", "optimizer": "1ms"})", "", 3, "10s");
  const std::string two = R"("capacity": 2)";
  REQUIRE(config.find(two) != std::string::npos);
  write_text(dir + "/cfg.json", config.replace(config.find(two), two.size(), R"("capacity": 3)"));
  // The number after `key` in `out`.
  auto number_after = [](const std::string& out, const std::string& key) {
    const std::size_t at = out.find(key);
    REQUIRE_MESSAGE(at != std::string::npos, key);
    return std::stod(out.substr(at + key.size()));
  };
  for (const char* k : {"1", "2"}) {
    CAPTURE(k);
    const auto r = run_process(tool({dir + "/cfg.json", "--measure-start", "3", "--concurrent", k}),
                               kDeadlineS);
    INFO(diagnostics(r));
    REQUIRE(r.exit_code == 0);
    const double wall_ms = number_after(r.out, std::string("3 runs of ") + k + " at once: median ");
    const double cpu_ms = number_after(r.out, "CPU time per process: median ");
    CHECK(wall_ms > 0);  // a process's start takes milliseconds at least
    CHECK(wall_ms < 10000);
    // The probe's CPU time counts from its exec, its wall time from the notice before the fork.
    CHECK(cpu_ms > 0);
    CHECK(cpu_ms <= wall_ms);
    CHECK(r.out.find("# tiny: a new worker's process start") != std::string::npos);
  }
  // Three at once need four workers; this elastic capacity is 3.
  const auto r = run_process(tool({dir + "/cfg.json", "--measure-start", "1", "--concurrent", "3"}),
                             kDeadlineS);
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("--concurrent 3 needs an elastic capacity of 4 or more") != std::string::npos);
}

TEST_CASE("monitors in a live elastic run: a new process's monitors agree with the running ones'") {
  // A new process replays the agreed history through its monitors (trainer_resize.cpp,
  // adopt_agreed_state), so its window means equal the running workers' from its first step.
  const TempDir tmp;
  const std::string& dir = tmp.path;
  write_text(dir + "/cfg.json",
             elastic_config(R"({"forward": "4ms", "backward": "8ms", "optimizer": "1ms"})",
                            R"("policy": {"name": "resize-schedule", "every": 3, "sizes": [1, 2]},
    "monitors": [{"name": "throughput", "window": 4}],)",
                            11, "10s"));
  const auto r = run_process(
      tool({dir + "/cfg.json", "--elastic-store", dir + "/store", "-o", dir + "/result.json"}),
      kDeadlineS);
  INFO(diagnostics(r));
  REQUIRE(r.exit_code == 0);
  const live::FileStore store(dir + "/store", 2);
  const std::vector<runtime::RunRecord> records = store.read_records();
  // Worker 0's process and two of worker 1 (it joins after steps 2 and 8, leaves after step 5).
  REQUIRE(records.size() == 3);
  const runtime::RunRecord* first = nullptr;
  for (const runtime::RunRecord& rec : records)
    if (rec.step_sum_s[0] > 0) first = &rec;
  REQUIRE(first != nullptr);
  int compared = 0;
  for (const runtime::RunRecord& rec : records) {
    if (&rec == first) continue;
    for (std::size_t k = 0; k < rec.step_sum_s.size(); ++k) {
      if (rec.step_sum_s[k] == 0) continue;  // a step this process did not run
      CAPTURE(k);
      CHECK(rec.step_readings[k].at("throughput.window_mean") ==
            first->step_readings[k].at("throughput.window_mean"));
      ++compared;
    }
  }
  CHECK(compared >= 6);
}

TEST_CASE("an elastic run waits for a new process slower to start than a lease (issue 15)") {
  // Worker 1's processes start 1 s late (a sleep before exec, as a loaded machine's start-up); the
  // leases live 300 ms and the failure detector runs (a worker is killed later on). Its runner
  // holds the new process's lease until the process renews it itself, so worker 0 waits for it at
  // the resize's barrier instead of dropping it; before, worker 0 went on alone and worker 1's
  // late process waited at a version nobody else was in until the run timed out.
  const TempDir tmp;
  const std::string& dir = tmp.path;
  std::string config =
      elastic_config(R"({"forward": "2ms", "backward": "4ms", "optimizer": "1ms"})",
                     R"("policy": {"name": "resize-schedule", "every": 3, "sizes": [2, 2]},
    "failures": [{"worker": 1, "step": 8, "mode": "kill"}],)",
                     10, "20s");
  const std::string keys = R"("initial_workers": 1)";
  REQUIRE(config.find(keys) != std::string::npos);
  // Both scaled under the sanitizers (a slow process's loop must not miss its own renewals).
  const double scale = adaptsim::testing::time_scale();
  config.replace(
      config.find(keys), keys.size(),
      R"("initial_workers": 1, "failure_timeout": ")" + std::to_string(300 * scale) + R"(ms")");
  write_text(dir + "/cfg.json", config);
  write_text(dir + "/prefix.json", R"([["/usr/bin/env"], ["/bin/sh", "-c", "sleep )" +
                                       std::to_string(scale) + R"(; exec \"$0\" \"$@\""]])");
  // The folder store, and etcd (the runner's etcd leases, one per starting worker).
  for (const bool etcd : {false, true}) {
    if (etcd && !live::etcd_available()) {
      MESSAGE("skipped with etcd: no etcd on PATH (Debian's etcd-server)");
      continue;
    }
    CAPTURE(etcd);
    const std::string store = dir + (etcd ? "/etcd-store" : "/store");
    std::vector<std::string> args = {dir + "/cfg.json",
                                     "--rank-prefix-json",
                                     dir + "/prefix.json",
                                     "--elastic-store",
                                     store,
                                     "-o",
                                     store + ".json"};
    std::optional<live::EtcdServer> server;
    if (etcd) {
      std::filesystem::create_directories(dir + "/etcd");
      server.emplace(dir + "/etcd");
      args.insert(args.end(), {"--etcd", server->endpoint().address.str()});
    }
    const auto r = run_process(tool(args), kDeadlineS);
    INFO(diagnostics(r));
    REQUIRE(r.exit_code == 0);
    const auto j = read_json(store + ".json");
    const auto& steps = j.at("result").at("steps");
    REQUIRE(steps.size() == 11);
    // One worker until the resize after step 2, both from step 3 until the kill at step 8.
    for (std::size_t k = 0; k < 8; ++k) {
      CAPTURE(k);
      CHECK(steps[k].at("workers") == (k < 3 ? 1 : 2));
    }
    // The late process marked its start, for the runner to let go of its lease.
    CHECK(live::FileStore(store, 2).started(1, 1));
  }
}

TEST_CASE("an elastic run whose new process never starts ends at its timeout naming the barrier") {
  // Worker 1's process sleeps through the run (its runner holds its lease, so nobody drops it):
  // worker 0 waits at the resize's barrier until the live timeout, whose line names the barrier,
  // its cluster version and members (at the step after the resize); the launcher then ends the
  // sleeping process.
  const TempDir tmp;
  const std::string& dir = tmp.path;
  const double scale = adaptsim::testing::time_scale();
  write_text(
      dir + "/cfg.json",
      elastic_config(R"({"forward": "2ms", "backward": "4ms", "optimizer": "1ms"})",
                     R"("policy": {"name": "resize-schedule", "every": 3, "sizes": [2, 2]},)", 6,
                     std::to_string(2 * scale) + "s"));
  write_text(dir + "/prefix.json",
             R"([["/usr/bin/env"], ["/bin/sh", "-c", "sleep 600; exec \"$0\" \"$@\""]])");
  const auto r = run_process(tool({dir + "/cfg.json", "--rank-prefix-json", dir + "/prefix.json",
                                   "--elastic-store", dir + "/store", "-o", dir + "/result.json"}),
                             kDeadlineS);
  INFO(diagnostics(r));
  CHECK(r.exit_code == 1);
  CHECK(r.err.find("worker 0 step 3: waiting at 'adaptsim:resize:v1:barrier' of cluster version "
                   "1 (workers 0 1)") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(dir + "/result.json"));
}

TEST_CASE("a worker paused for longer than its lease is dropped and leaves once it runs again") {
  // Worker 2's process stops running at step 4 for 1.5 s (its loop thread sleeps: no timer, no
  // socket, no lease renewal), with leases of 300 ms. The others drop it and finish the run
  // without it; when it runs again it is in a cluster nobody else is in, finds every member's
  // lease alive, reads the store, sees a newer cluster without it and leaves with one line.
  // Before, it retried for ever and the run ended at its timeout.
  const TempDir tmp;
  const std::string& dir = tmp.path;
  const double scale = adaptsim::testing::time_scale();
  std::string config =
      elastic_config(R"({"forward": "2ms", "backward": "4ms", "optimizer": "1ms"})",
                     R"("failures": [{"worker": 2, "step": 4, "mode": "pause", "for": ")" +
                         std::to_string(1.5 * scale) + R"(s"}],)",
                     8, "20s");
  config = three_workers(config, std::to_string(300 * scale) + "ms");
  write_text(dir + "/cfg.json", config);
  const auto started = std::chrono::steady_clock::now();
  const auto r = run_process(
      tool({dir + "/cfg.json", "--elastic-store", dir + "/store", "-o", dir + "/result.json"}),
      kDeadlineS);
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  INFO(diagnostics(r));
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.find("adaptsim-live: worker 2 step 4: dropped from the cluster while it did not "
                   "run (cluster version 1 holds workers 0 1): it leaves") != std::string::npos);
  const auto j = read_json(dir + "/result.json");
  const auto& steps = j.at("result").at("steps");
  REQUIRE(steps.size() == 9);
  for (std::size_t k = 0; k < steps.size(); ++k) {
    CAPTURE(k);
    CHECK(steps[k].at("workers") == (k < 4 ? 3 : 2));
  }
  // Bounded by the pause and the paused worker's own watchdog, far from the 20 s timeout.
  CHECK(took < 10 * scale);
}

TEST_CASE("a worker paused while the others drop it and grow back joins as a new process") {
  // Worker 2's process stops running at step 4 for 2 s, with leases (and watchdogs) of 1 s and
  // steps of about 90 ms. The others drop it after about 1 s, redo step 4 at 2 and grow back to 3
  // after step 7 (about 1.4 s in): its runner sees its process and starts none, and they wait at
  // the resize's barrier. It runs again at 2 s, before their watchdog (about 2.4 s), reads the
  // store, finds version 2 holding it two versions past its own, reads that version's notice and
  // joins as a new process would; the state broadcast reaches it (checked against the root's) and
  // the run ends at 3 workers. Before, it failed with one line.
  const TempDir tmp;
  const std::string& dir = tmp.path;
  const double scale = adaptsim::testing::time_scale();
  auto ms = [scale](double x) { return std::to_string(x * scale) + "ms"; };
  std::string config = elastic_config(
      R"({"forward": ")" + ms(20) + R"(", "backward": ")" + ms(60) + R"(", "optimizer": ")" +
          ms(10) + R"("})",
      R"("failures": [{"worker": 2, "step": 4, "mode": "pause", "for": ")" + ms(2000) +
          R"("}], "policy": {"name": "resize", "step": 7, "workers": 3},)",
      13, "30s");
  config = three_workers(config, ms(1000));
  write_text(dir + "/cfg.json", config);
  const auto r = run_process(
      tool({dir + "/cfg.json", "--elastic-store", dir + "/store", "-o", dir + "/result.json"}),
      kDeadlineS);
  INFO(diagnostics(r));
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.find("adaptsim-live: worker 2 step 4: back in cluster version 2 after the others "
                   "went on without it from version 0: it joins as a new process does") !=
        std::string::npos);
  const auto j = read_json(dir + "/result.json");
  const auto& steps = j.at("result").at("steps");
  REQUIRE(steps.size() == 14);
  for (std::size_t k = 0; k < steps.size(); ++k) {
    CAPTURE(k);
    CHECK(steps[k].at("workers") == (k < 4 || k > 7 ? 3 : 2));
  }
}
