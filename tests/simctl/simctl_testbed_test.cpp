// `simctl run --live` on the emulated cluster (root): a small run gives mode=live rows, a worker
// killed mid-run (also in an adaptive run with background traffic) ends simctl with one line
// naming the rank, background traffic runs on its steps, and SIGINT ends simctl promptly; every
// time no namespace, interface, state file, adaptsim-live or adaptsim-traffic process is left.
//
// doctest cannot skip at run time, so the executable reports "skipped" to CTest: without root,
// iproute2 or kernel support it prints why and exits 77 (the tests' SKIP_RETURN_CODE). Each case
// is its own CTest test (--test-case) and uses its own testbed prefix, never the default one.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>
#include <signal.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "hw/testbed/testbed.h"
#include "tests/simctl/live_rows_check.h"
#include "tests/simctl/live_support.h"

namespace fs = std::filesystem;
using namespace adaptsim;
using namespace adaptsim::simctl_test;

namespace {

constexpr int kSkipExitCode = 77;  // the automake convention for "skipped"

// What a testbed with `prefix` or the run in `dir` could leave behind; empty when nothing.
std::string leftovers(const std::string& prefix, const fs::path& dir) {
  std::string what;
  for (const std::string& o : testbed::existing_objects(prefix))
    what += o + " ";
  if (fs::exists("/run/adaptsim-testbed/" + prefix + ".state")) what += prefix + ".state ";
  for (pid_t p : processes_mentioning(dir.string()))
    what += "pid " + std::to_string(p) + " ";
  return what;
}

// The testbed is gone once simctl returns; processes get a moment to be reaped.
void check_nothing_left(const std::string& prefix, const fs::path& dir) {
  CHECK(eventually([&] { return leftovers(prefix, dir).empty(); }, 5));
  CHECK(leftovers(prefix, dir) == "");
}

// `simctl run SCENARIO` simulated, or live on the testbed `prefix` (--live), with `sets` (each a
// --set), into dir/sim or dir/live; the rows of the output CSV `csv` there.
std::vector<std::map<std::string, std::string>> run_rows(const std::string& scenario,
                                                         const std::vector<std::string>& sets,
                                                         bool live, const std::string& prefix,
                                                         const fs::path& dir,
                                                         const std::string& csv) {
  const fs::path out = dir / (live ? "live" : "sim");
  std::vector<std::string> a = {"run",
                                scenario,
                                "-o",
                                out.string(),
                                "--no-progress",
                                "--set",
                                "live.placement=testbed",
                                "--set",
                                "live.prefix=" + prefix};
  if (live) a.insert(a.begin() + 1, "--live");
  for (const std::string& set : sets) {
    a.push_back("--set");
    a.push_back(set);
  }
  SimctlProcess p(a, dir);
  const int code = p.wait(150);
  INFO("output: " << p.output());
  REQUIRE(code == 0);
  return read_csv(out / csv);
}

fs::path write_scenario(const fs::path& dir, const LiveScenario& sc) {
  std::ofstream(dir / "live.yaml") << sc.text();
  return dir / "live.yaml";
}

std::vector<std::string> run_args(const fs::path& dir) {
  return {"run",          "--live", (dir / "live.yaml").string(), "-o", (dir / "out").string(),
          "--no-progress"};
}

int lines(const std::string& s) {
  return static_cast<int>(std::count(s.begin(), s.end(), '\n'));
}

// simctl's output when rank 2 was SIGKILLed in the run of `system`: exit 1 and one line,
// "simctl: failed: live run of mobilenetv2 / SYSTEM failed (exit code 1): rank 2 (pid N) was
// killed by signal 9 (Killed); rank 0 ... exited with code 1; ...": the root cause first.
void check_rank2_killed(int code, const std::string& out, const std::string& system) {
  CHECK(code == 1);
  CHECK(lines(out) == 1);
  CHECK(out.rfind("simctl: failed: live run of mobilenetv2 / " + system + " failed", 0) == 0);
  CHECK(out.find("rank 2 (pid") != std::string::npos);
  CHECK(out.find("killed by signal 9") != std::string::npos);
}

// The scenario dir/live.yaml simulated, then live, each with --link-stats into dir/sim-links and
// dir/live-links (10 ms bins); both must succeed.
void run_sim_and_live_with_link_stats(const fs::path& dir) {
  auto args = [&](bool live) {
    return sim_or_live_args(
        live, dir / "live.yaml", dir,
        {"--link-stats", (dir / "{}-links").string(), "--link-stats-bin", "10ms"});
  };
  SimctlProcess sim(args(false), dir);
  REQUIRE_MESSAGE(sim.wait(60) == 0, sim.output());
  SimctlProcess live(args(true), dir);
  const int code = live.wait(150);
  INFO("output: " << live.output());
  REQUIRE(code == 0);
}

// A links file's bytes per resource (link direction).
std::map<std::string, double> bytes_by_link(const fs::path& f) {
  std::map<std::string, double> out;
  for (const auto& r : read_csv(f))
    out[r.at("resource")] = std::stod(r.at("bytes"));
  return out;
}

// Every NIC link direction of `hosts` hosts (the links both modes list: the simulation's also has
// each host's internal resources) carried live at least the simulated bytes and at most 10 % more
// (frame, IP and TCP headers, ACKs); the live links' bytes.
std::map<std::string, double> check_links_carry_simulated(const fs::path& dir,
                                                          const std::string& base, int hosts) {
  const auto sim_links = bytes_by_link(dir / "sim-links" / (base + ".links.csv"));
  const auto live_links = bytes_by_link(dir / "live-links" / (base + ".links.csv"));
  CHECK(live_links.size() == static_cast<std::size_t>(2 * hosts));
  for (const auto& [name, bytes] : live_links) {
    CAPTURE(name);
    REQUIRE(sim_links.count(name) == 1);
    CHECK(bytes >= sim_links.at(name));
    CHECK(bytes <= 1.10 * sim_links.at(name));
  }
  return live_links;
}

}  // namespace

TEST_CASE("live testbed run: 4 hosts, kungfu and horovod, mode=live rows, nothing left") {
  const std::string prefix = "sctrun";
  const fs::path dir = scratch_dir("testbed_run");
  LiveScenario sc;
  sc.live = "placement: testbed, prefix: " + prefix + ", timeout: 30s";
  write_scenario(dir, sc);
  SimctlProcess p(run_args(dir), dir);
  const int code = p.wait(150);
  INFO("output: " << p.output());
  REQUIRE(code == 0);
  const auto rows = read_csv(dir / "out" / "live-test.csv");
  check_live_rows(rows, sc);
  check_nothing_left(prefix, dir);
  fs::remove_all(dir);
}

TEST_CASE("live testbed link stats: the links' counters and the ranks' traffic matrix") {
  // The same scenario simulated and live, --link-stats: per rank pair the live ranks sent what
  // the simulated ones did (BINARY_TREE_STAR's chunks), plus the live run's own few messages
  // (the barrier before the steps, the statistics' all-reduce after); per host link the counters
  // saw those bytes plus the frames' headers and the ACKs, within 10 %.
  const std::string prefix = "sctlinks";
  const fs::path dir = scratch_dir("testbed_links");
  LiveScenario sc;
  sc.systems = {"{label: bts, kind: kungfu, strategy: BINARY_TREE_STAR}"};
  sc.live = "placement: testbed, prefix: " + prefix + ", timeout: 30s";
  write_scenario(dir, sc);
  run_sim_and_live_with_link_stats(dir);
  const std::string base = "p0-mobilenetv2-bts";
  auto by_pair = [](const fs::path& f) {
    std::map<std::pair<int, int>, double> out;
    for (const auto& r : read_csv(f))
      out[{std::stoi(r.at("src_rank")), std::stoi(r.at("dst_rank"))}] = std::stod(r.at("bytes"));
    return out;
  };
  const auto sim_pairs = by_pair(dir / "sim-links" / (base + ".matrix.csv"));
  const auto live_pairs = by_pair(dir / "live-links" / (base + ".matrix.csv"));
  REQUIRE(!sim_pairs.empty());
  double live_total = 0, sim_total = 0;
  for (const auto& [pair, bytes] : live_pairs)
    live_total += bytes;
  for (const auto& [pair, bytes] : sim_pairs) {
    CAPTURE(pair.first);
    CAPTURE(pair.second);
    REQUIRE(live_pairs.count(pair) == 1);
    CHECK(live_pairs.at(pair) >= bytes);
    CHECK(live_pairs.at(pair) <= bytes + 4096);
    sim_total += bytes;
  }
  CHECK(live_total <= sim_total + 4096 * static_cast<double>(live_pairs.size()));
  // Counted where the testbed shapes them, the links' 10 ms bins stay near their caps (htb lets
  // a class burst 1 ms above its rate).
  for (const auto& r : read_csv(dir / "live-links" / (base + ".links.csv"))) {
    CAPTURE(r.at("resource"));
    CHECK(std::stod(r.at("peak_utilization")) <= 1.5);
  }
  const auto live_links = check_links_carry_simulated(dir, base, 4);
  // The bins add up to each link's bytes.
  std::map<std::string, double> binned;
  for (const auto& r : read_csv(dir / "live-links" / (base + ".link-bins.csv")))
    binned[r.at("resource")] += std::stod(r.at("bytes"));
  for (const auto& [name, bytes] : live_links)
    CHECK(binned[name] == doctest::Approx(bytes));
  check_nothing_left(prefix, dir);
  fs::remove_all(dir);
}

// Open MPI's release as `mpirun --version` prints it ("mpirun (Open MPI) 4.1.4"), or empty.
std::string open_mpi_release() {
  FILE* f = ::popen("mpirun --version 2>/dev/null", "r");
  if (f == nullptr) return "";
  char line[256] = {0};
  const bool got = std::fgets(line, sizeof line, f) != nullptr;
  ::pclose(f);
  const std::string text = got ? line : "";
  const std::string tag = "(Open MPI) ";
  const auto at = text.find(tag);
  if (at == std::string::npos) return "";
  std::string release = text.substr(at + tag.size());
  while (!release.empty() && (release.back() == '\n' || release.back() == ' '))
    release.pop_back();
  return release;
}

TEST_CASE("live testbed MPI library: mpirun across the namespaces, gradients through Open MPI") {
  // Horovod with mpi: {live: library} on 3 capped hosts: simctl starts the ranks with mpirun in
  // the first host's namespace, the others through its launch agent. The testbed's NIC counters
  // see the gradients cross the capped links while the ranks' own TCP runtime carries almost
  // nothing (the barrier, the statistics): Open MPI moved them. The same scenario simulated puts
  // the model of that library's messages on the same links.
  const std::string release = open_mpi_release();
  if (release.empty()) {
    MESSAGE("no Open MPI mpirun on PATH: skipping the MPI library case");
    return;
  }
  const std::string prefix = "sctmpi";
  const fs::path dir = scratch_dir("testbed_mpi");
  LiveScenario sc;
  sc.servers = 3;
  sc.systems = {"{label: hvd-lib, kind: horovod, mpi: {version: \"" + release +
                "\", live: library}}"};
  sc.live = "placement: testbed, prefix: " + prefix + ", timeout: 30s";
  write_scenario(dir, sc);
  // An image's own launcher setting (a lent GPU machine's sets OMPI_MCA_plm=isolated, which
  // starts every rank locally): the run names its launcher, so the ranks still reach their hosts.
  ::setenv("OMPI_MCA_plm", "isolated", 1);
  run_sim_and_live_with_link_stats(dir);
  ::unsetenv("OMPI_MCA_plm");
  const auto rows = read_csv(dir / "live" / "live-test.csv");
  REQUIRE(rows.size() == 1);
  CHECK(rows[0].at("mode") == "live");
  const std::string base = "p0-mobilenetv2-hvd-lib";
  auto total = [](const fs::path& f) {
    double sum = 0;
    for (const auto& r : read_csv(f))
      sum += std::stod(r.at("bytes"));
    return sum;
  };
  // Per NIC link direction, live carries what the model of Open MPI's messages put on it (plus
  // headers, ob1's included, and ACKs).
  check_links_carry_simulated(dir, base, 3);
  // The ranks' own TCP runtime carried none of it: the barrier and the statistics only.
  const double live_tcp = total(dir / "live-links" / (base + ".matrix.csv"));
  const double sim_matrix = total(dir / "sim-links" / (base + ".matrix.csv"));
  CAPTURE(live_tcp);
  CAPTURE(sim_matrix);
  CHECK(live_tcp < 0.01 * sim_matrix);
  check_nothing_left(prefix, dir);
  fs::remove_all(dir);
}

TEST_CASE("live testbed killed worker: exit 1, one line naming the rank, nothing left") {
  const std::string prefix = "sctkill";
  const fs::path dir = scratch_dir("testbed_kill");
  LiveScenario sc;
  sc.systems = {"{label: mbts, kind: kungfu, strategy: MULTI_BINARY_TREE_STAR}"};
  // Rank 2 SIGKILLs itself after 30 sent messages (adaptsim-live's test hook), inside the run.
  sc.live = "placement: testbed, prefix: " + prefix +
            ", timeout: 20s, fault: {kill_rank: 2, after_sends: 30}";
  write_scenario(dir, sc);
  const double start = now_s();
  SimctlProcess p(run_args(dir), dir);
  const int code = p.wait(120);
  const double seconds = now_s() - start;
  const std::string out = p.output();
  INFO("output: " << out);
  check_rank2_killed(code, out, "mbts");
  // The survivors notice the lost peer, not the 20 s timeout.
  CHECK(seconds < 60);
  CHECK_FALSE(fs::exists(dir / "out" / "live-test.csv"));
  check_nothing_left(prefix, dir);
  fs::remove_all(dir);
}

TEST_CASE("live testbed adaptive killed worker: one line naming the rank, no traffic left") {
  // An adaptive-strategy run with background traffic from an extra host (x0, a fifth namespace)
  // into the root's host: rank 2 dies mid-run. simctl ends with one line naming it, and the
  // testbed, the extra host and the traffic generators are gone.
  const std::string prefix = "sctakill";
  const fs::path dir = scratch_dir("testbed_adaptive_kill");
  LiveScenario sc;
  sc.systems = {"{label: star, kind: kungfu, strategy: STAR}"};
  sc.steps = 40;
  sc.workload_extra =
      "  policy: {name: adaptive-strategy, check_from: 1}\n"
      "  background: [{from: x0, to: s0, connections: 2, start_step: 0}]\n";
  sc.live = "placement: testbed, prefix: " + prefix +
            ", timeout: 20s, fault: {kill_rank: 2, after_sends: 200}";
  write_scenario(dir, sc);
  SimctlProcess p(run_args(dir), dir);
  const int code = p.wait(120);
  const std::string out = p.output();
  INFO("output: " << out);
  check_rank2_killed(code, out, "star");
  check_nothing_left(prefix, dir);
  CHECK(eventually([] { return processes_mentioning("adaptsim-traffic").empty(); }, 5));
  fs::remove_all(dir);
}

TEST_CASE("live testbed background: traffic from an extra host on its steps, nothing left") {
  // Four hosts and the extra host x0; a 200 Mbit/s flow into s0 during steps 2-4. The run
  // succeeds (a traffic generator that failed would fail it), the steps CSV marks the flow's
  // steps, and the five namespaces and the generators are gone.
  const std::string prefix = "sctbg";
  const fs::path dir = scratch_dir("testbed_background");
  LiveScenario sc;
  sc.systems = {"{label: star, kind: kungfu, strategy: STAR}"};
  sc.steps = 5;
  sc.workload_extra =
      "  background: [{from: x0, to: s0, connections: 2, rate: 200Mbps, start_step: 2, "
      "stop_step: 5}]\n";
  sc.live = "placement: testbed, prefix: " + prefix + ", timeout: 30s";
  write_scenario(dir, sc);
  SimctlProcess p(run_args(dir), dir);
  const int code = p.wait(150);
  INFO("output: " << p.output());
  REQUIRE(code == 0);
  const auto steps = read_csv(dir / "out" / "live-test.steps.csv");
  REQUIRE(steps.size() == 6);
  for (std::size_t k = 0; k < steps.size(); ++k) {
    CAPTURE(k);
    CHECK(steps[k].at("background_flows") == (k >= 2 && k < 5 ? "1" : "0"));
  }
  check_nothing_left(prefix, dir);
  CHECK(eventually([] { return processes_mentioning("adaptsim-traffic").empty(); }, 5));
  fs::remove_all(dir);
}

TEST_CASE("live testbed SIGINT: simctl ends promptly by the signal, nothing left") {
  const std::string prefix = "sctint";
  const fs::path dir = scratch_dir("testbed_sigint");
  LiveScenario sc;
  sc.systems = {"{label: mbts, kind: kungfu, strategy: MULTI_BINARY_TREE_STAR}"};
  sc.steps = 200;  // tens of seconds: the signal lands mid-run
  sc.live = "placement: testbed, prefix: " + prefix + ", timeout: 30s";
  write_scenario(dir, sc);
  SimctlProcess p(run_args(dir), dir);
  // Mid-run: simctl, the launcher and its 4 ranks (in the namespaces) are up.
  const bool running =
      eventually([&] { return processes_mentioning(dir.string()).size() >= 6; }, 60);
  INFO("output: " << p.output());
  REQUIRE(running);
  sleep_ms(500);
  const double start = now_s();
  p.signal(SIGINT);
  const int code = p.wait(15);
  const double seconds = now_s() - start;
  // The handler removes the testbed, then simctl dies by SIGINT (exit status 128 + 2);
  // adaptsim-live dies with it (PR_SET_PDEATHSIG), its ranks with the launcher.
  CHECK(code == 128 + SIGINT);
  CHECK(seconds < 10);
  check_nothing_left(prefix, dir);
  fs::remove_all(dir);
}

TEST_CASE("live testbed policy: STAR to MULTI_BINARY_TREE_STAR after step 5, as simulated") {
  // scenarios/policy-switch.yaml on 4 namespaces with 1 Gbit/s NICs: the same policy object runs
  // in every rank; the steps CSV shows the switch at step 6 as the simulation's does, and the
  // gradients of every step were checked exact (or the run would have failed).
  const std::string prefix = "sctpol";
  const fs::path dir = scratch_dir("testbed_policy");
  const std::string scenario = (fs::path(ADAPTSIM_SOURCE_DIR) / "scenarios/policy-switch.yaml");
  SimctlProcess live({"run", "--live", scenario, "-o", (dir / "live").string(), "--no-progress",
                      "--set", "live.placement=testbed", "--set", "live.prefix=" + prefix},
                     dir);
  const int code = live.wait(150);
  INFO("output: " << live.output());
  REQUIRE(code == 0);
  SimctlProcess sim({"run", scenario, "-o", (dir / "sim").string(), "--no-progress"}, dir);
  REQUIRE(sim.wait(60) == 0);
  const auto l = read_csv(dir / "live" / "policy-switch.steps.csv");
  const auto s = read_csv(dir / "sim" / "policy-switch.steps.csv");
  REQUIRE(l.size() == 10);
  REQUIRE(s.size() == 10);
  for (std::size_t k = 0; k < l.size(); ++k) {
    CAPTURE(k);
    CHECK(l[k].at("mode") == "live");
    CHECK(l[k].at("strategy") == s[k].at("strategy"));
    CHECK(l[k].at("decision") == s[k].at("decision"));
    CHECK(l[k].at("strategy") == (k <= 5 ? "STAR" : "MULTI_BINARY_TREE_STAR"));
  }
  check_nothing_left(prefix, dir);
  fs::remove_all(dir);
}

TEST_CASE("live testbed NIC straggler: a server's caps lowered at a step slow the steps after it") {
  // Worker 1's server's NIC at 200 Mbit/s from step 5 (runtime/straggler.h): simulated, its links'
  // capacity changes when rank 0 starts step 5; live, simctl follows rank 0's progress file and
  // changes the namespace's caps (both directions) with tc at the same point. KungFu's STAR: every
  // step's gradients cross worker 1's NIC, so the steps after must be slower by about as much in
  // both modes (the medians' ratio after / before), and nothing may be left.
  const std::string prefix = "sctnic";
  const fs::path dir = scratch_dir("testbed_nic_straggler");
  const std::string scenario = (fs::path(ADAPTSIM_SOURCE_DIR) / "scenarios/policy-switch.yaml");
  auto slowdown = [&](bool live) {
    const auto rows = run_rows(scenario,
                               {"workload.policy={name: none}",
                                "workload.stragglers=[{worker: 1, from_step: 5, nic_bandwidth: "
                                "200Mbps}]"},
                               live, prefix, dir, "policy-switch.steps.csv");
    REQUIRE(rows.size() == 10);
    auto median = [&](int from, int to) {
      std::vector<double> v;
      for (int k = from; k <= to; ++k)
        v.push_back(std::stod(rows[static_cast<std::size_t>(k)].at("step_time_ms")));
      std::sort(v.begin(), v.end());
      return (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
    };
    return median(6, 9) / median(1, 4);
  };
  const double sim = slowdown(false), live = slowdown(true);
  CAPTURE(sim);
  CAPTURE(live);
  CHECK(sim > 1.4);
  CHECK(live > 1.25);
  CHECK(live / sim > 0.7);
  CHECK(live / sim < 1.4);
  check_nothing_left(prefix, dir);
  fs::remove_all(dir);
}

TEST_CASE("live testbed elastic run: etcd in the first server's namespace, resizes as simulated") {
  // `live: {config_store: etcd}` on the testbed: adaptsim-live starts a private etcd in the first
  // server's namespace on its address (hw/live/etcd_store.h), the workers in every namespace reach
  // it over the emulated network, the launcher from the root namespace through setns(2). The
  // per-step cluster sizes must be the simulated ones, and no etcd, process or namespace is left.
  const std::string prefix = "sctetcd";
  const fs::path dir = scratch_dir("testbed_etcd");
  LiveScenario sc;
  sc.servers = 3;
  sc.steps = 8;
  sc.systems = {"{label: kf, kind: kungfu, strategy: BINARY_TREE_STAR}"};
  sc.live = "placement: testbed, prefix: " + prefix + ", config_store: etcd";
  sc.workload_extra =
      "  elastic: {initial_workers: 1}\n"
      "  policy: {name: resize-schedule, every: 3, sizes: [1, 3]}\n";
  write_scenario(dir, sc);
  SimctlProcess live(run_args(dir), dir);
  const int code = live.wait(150);
  INFO("output: " << live.output());
  REQUIRE(code == 0);
  SimctlProcess sim(
      {"run", (dir / "live.yaml").string(), "-o", (dir / "sim").string(), "--no-progress"}, dir);
  REQUIRE(sim.wait(60) == 0);
  const auto l = read_csv(dir / "out" / "live-test.steps.csv");
  const auto s = read_csv(dir / "sim" / "live-test.steps.csv");
  REQUIRE(l.size() == 9);
  REQUIRE(s.size() == 9);
  const std::vector<std::string> expected = {"1", "1", "1", "3", "3", "3", "1", "1", "1"};
  for (std::size_t k = 0; k < l.size(); ++k) {
    CAPTURE(k);
    CHECK(l[k].at("workers") == expected[k]);
    CHECK(s[k].at("workers") == expected[k]);
  }
  CHECK(l[2].at("readings").find("resize.join.process_start_s") != std::string::npos);
  check_nothing_left(prefix, dir);
  // The private etcd listened on the testbed's first address (10.*), and is gone with it.
  CHECK(processes_mentioning("--initial-cluster default=http://10.").empty());
  fs::remove_all(dir);
}

TEST_CASE("live testbed learning: fashion-mlp learns across four capped hosts, as simulated") {
  // scenarios/fig4-testbed.yaml cut short: four one-GPU VMs behind 1 Gbit/s NICs, the model
  // trained for real, its gradients crossing the capped links; the simulated run of the same
  // scenario learns by the fitted dynamics. Both count the same samples, evaluate at the same
  // steps, and the live model learns; the step times agree within the validation's margin.
  const std::string prefix = "sctlearn";
  const fs::path dir = scratch_dir("testbed_learn");
  const fs::path scenario = fs::path(ADAPTSIM_SOURCE_DIR) / "scenarios/fig4-testbed.yaml";
  const std::vector<std::string> sets = {"--set", "workload.steps=40",
                                         "--set", "workload.learn.eval_every=20",
                                         "--set", "sweep.workload.batch_per_gpu=[32]",
                                         "--set", "sweep.workload.policy=[{name: none}]",
                                         "--set", "live.prefix=" + prefix};
  std::vector<std::string> live_args = {
      "run", "--live", scenario.string(), "-o", (dir / "live").string(), "--no-progress"};
  live_args.insert(live_args.end(), sets.begin(), sets.end());
  SimctlProcess live(live_args, dir);
  const int code = live.wait(150);
  INFO("output: " << live.output());
  REQUIRE(code == 0);
  std::vector<std::string> sim_args = {"run", scenario.string(), "-o", (dir / "sim").string(),
                                       "--no-progress"};
  sim_args.insert(sim_args.end(), sets.begin(), sets.end());
  SimctlProcess sim(sim_args, dir);
  REQUIRE(sim.wait(60) == 0);
  const auto l = read_csv(dir / "live" / "fig4-testbed.steps.csv");
  const auto s = read_csv(dir / "sim" / "fig4-testbed.steps.csv");
  REQUIRE(l.size() == 40);
  REQUIRE(s.size() == 40);
  auto reading = [](const std::map<std::string, std::string>& row, const std::string& key) {
    const std::string& r = row.at("readings");
    const std::size_t at = r.find(key + "=");
    return at == std::string::npos ? -1.0 : std::stod(r.substr(at + key.size() + 1));
  };
  double live_ms = 0, sim_ms = 0;
  for (std::size_t k = 0; k < l.size(); ++k) {
    CAPTURE(k);
    CHECK(reading(l[k], "learn.samples") == 128.0 * static_cast<double>(k + 1));
    CHECK(reading(s[k], "learn.samples") == 128.0 * static_cast<double>(k + 1));
    const bool eval = k == 19 || k == 39;
    CHECK((reading(l[k], "learn.test_accuracy") >= 0) == eval);
    CHECK((reading(s[k], "learn.test_accuracy") >= 0) == eval);
    if (k > 0) {  // the first step opens the connections
      live_ms += std::stod(l[k].at("step_time_ms"));
      sim_ms += std::stod(s[k].at("step_time_ms"));
    }
  }
  CHECK(reading(l[39], "learn.test_accuracy") > 0.6);
  // A network-bound step (docs/figures.md, Figure 4 on the testbed: within 10 % over 1200 steps).
  CHECK(live_ms == doctest::Approx(sim_ms).epsilon(0.3));
  check_nothing_left(prefix, dir);
  fs::remove_all(dir);
}

int main(int argc, char** argv) {
  std::string why;
  if (!testbed::testbed_supported(&why)) {
    std::printf("SKIPPED: %s\n", why.c_str());
    return kSkipExitCode;
  }
  doctest::Context context(argc, argv);
  return context.run();
}

TEST_CASE("live testbed WAN: regions joined by capped links, steps as simulated") {
  // scenarios/wan-testbed.yaml's RING in one region and across two (3 + 3): the testbed's WAN
  // emulation (a 200 Mbit/s class per region pair on the regions' uplinks) must bind live as the
  // WAN link binds simulated: the two-region step several times the one-region step in both
  // modes, and each live step near the simulated one (the full comparison: docs/figures.md,
  // "Training across regions", 11 of 12 rows within 15 %).
  const std::string prefix = "sctwan";
  const fs::path dir = scratch_dir("testbed_wan");
  const std::string scenario = (fs::path(ADAPTSIM_SOURCE_DIR) / "scenarios/wan-testbed.yaml");
  const std::string net =
      "nic_bandwidth: 1Gbps, wan_bandwidth: 200Mbps, us_eu_latency: 10us, us_asia_latency: "
      "10us, eu_asia_latency: 10us, nic_latency: 7.5us, nic_queue: 100ms, wan_queue: 100ms";
  auto steps = [&](bool live) {
    const auto rows = run_rows(
        scenario,
        {"workload.systems=[{label: ring, kind: kungfu, strategy: RING}]", "workload.steps=3",
         "sweep.topology.params=[{servers_us: 6, servers_eu: 0, servers_asia: 0, " + net +
             "}, {servers_us: 3, servers_eu: 3, servers_asia: 0, " + net + "}]"},
        live, prefix, dir, "wan-testbed.csv");
    REQUIRE(rows.size() == 2);
    return std::pair{std::stod(rows[0].at("step_time_ms_mean")),
                     std::stod(rows[1].at("step_time_ms_mean"))};
  };
  const auto [sim1, sim2] = steps(false);
  const auto [live1, live2] = steps(true);
  CAPTURE(sim1);
  CAPTURE(sim2);
  CAPTURE(live1);
  CAPTURE(live2);
  CHECK(sim2 > 3 * sim1);
  CHECK(live2 > 3 * live1);
  CHECK(live2 / sim2 > 0.75);
  CHECK(live2 / sim2 < 1.33);
  check_nothing_left(prefix, dir);
  fs::remove_all(dir);
}
