// `simctl run --live` without root: ranks placed on listed loopback addresses (placement hosts),
// the live section's validation (exit 2, one line naming file, line and key, before anything
// runs), and a failure's one-line report.

#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include <map>
#include <utility>
#include <vector>

#include "tests/simctl/live_rows_check.h"
#include "tests/simctl/live_support.h"

namespace fs = std::filesystem;
using namespace adaptsim::simctl_test;

namespace {

std::string loopback_hosts(const std::vector<int>& ports) {
  std::string out;
  for (int p : ports)
    out += (out.empty() ? "" : ", ") + ("127.0.0.1:" + std::to_string(p));
  return out;
}

struct Run {
  int code;
  std::string output;
  double seconds;
};

Run run_simctl(const fs::path& dir, const LiveScenario& sc, double timeout_s = 120) {
  std::ofstream(dir / "live.yaml") << sc.text();
  const double start = now_s();
  SimctlProcess p({"run", "--live", (dir / "live.yaml").string(), "-o", (dir / "out").string(),
                   "--no-progress"},
                  dir);
  const int code = p.wait(timeout_s);
  return {code, p.output(), now_s() - start};
}

int lines(const std::string& s) {
  return static_cast<int>(std::count(s.begin(), s.end(), '\n'));
}

}  // namespace

TEST_CASE("placement hosts: four ranks on listed loopback ports give mode=live rows") {
  const fs::path dir = scratch_dir("hosts_ok");
  LiveScenario sc;
  sc.live =
      "placement: hosts, timeout: 30s, hosts: [" + loopback_hosts(free_loopback_ports(4)) + "]";
  const Run r = run_simctl(dir, sc);
  INFO("output: " << r.output);
  REQUIRE(r.code == 0);
  const auto rows = read_csv(dir / "out" / "live-test.csv");
  check_live_rows(rows, sc);
  // Nothing of the run is left: no process mentions the run's TMPDIR (adaptsim-live's command
  // lines carry its scratch folder there).
  CHECK(eventually([&] { return processes_mentioning(dir.string()).empty(); }, 5));
  fs::remove_all(dir);
}

TEST_CASE("placement hosts: a listed address already in use fails on one line naming it") {
  const fs::path dir = scratch_dir("hosts_busy");
  // Rank 2's port is held by a listening socket here: that rank cannot bind it, so the run
  // fails, which proves the ranks use the listed addresses (a local launch would pick free ports).
  std::vector<int> ports = free_loopback_ports(4);
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<std::uint16_t>(ports[2]));
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  REQUIRE(::listen(fd, 4) == 0);
  LiveScenario sc;
  sc.systems = {"{label: star, kind: kungfu, strategy: STAR}"};
  sc.live = "placement: hosts, timeout: 5s, hosts: [" + loopback_hosts(ports) + "]";
  const Run r = run_simctl(dir, sc);
  ::close(fd);
  INFO("output: " << r.output);
  CHECK(r.code == 1);
  // "simctl: failed: live run of mobilenetv2 / star failed (exit code 1): rank 2 (pid ...) exited
  // with code 1; rank 0 ...; first error: cannot listen on 127.0.0.1:P: bind: Address already in
  // use" (the others wait for rank 2 until the 5 s timeout).
  CHECK(lines(r.output) == 1);
  CHECK(r.output.rfind("simctl: failed: live run of mobilenetv2 / star failed", 0) == 0);
  CHECK(r.output.find("rank 2 (pid") != std::string::npos);
  CHECK(r.output.find("first error: cannot listen on 127.0.0.1:" + std::to_string(ports[2])) !=
        std::string::npos);
  CHECK(eventually([&] { return processes_mentioning(dir.string()).empty(); }, 5));
  fs::remove_all(dir);
}

TEST_CASE("live section errors are bad input: exit 2, one line at the key, nothing run") {
  const fs::path dir = scratch_dir("live_errors");
  struct Case {
    std::string live;
    std::string expected;  // in the one line
  };
  const std::vector<Case> cases = {
      // A prefix names interfaces ("<prefix>-u<k>a" within 15 characters): letters and digits.
      {"placement: testbed, prefix: a-b", "key 'live.prefix': expected 1 to 12 letters and digits"},
      {"placement: testbed, prefix: abcdefghijklm", "key 'live.prefix'"},
      // One address per rank: 4 servers x 1 GPU.
      {"placement: hosts, hosts: [127.0.0.1:7000, 127.0.0.1:7001, 127.0.0.1:7002]",
       "key 'live.hosts': 3 hosts for 4 ranks"},
      {"placement: hosts", "key 'live.placement': placement hosts needs `hosts:"},
      {"placement: hosts, hosts: [127.0.0.1, a:1, b:2, c:3]",
       "key 'live.hosts': expected host:port entries, got \"127.0.0.1\""},
      {"placement: local, hosts: [a:1, b:2, c:3, d:4]", "only used with `placement: hosts`"},
      {"placement: cluster", "key 'live.placement'"},
      // Where compute runs: auto, sleep, spin or gpu.
      {"placement: local, compute: cuda", "key 'live.compute'"},
      // Sysctls of the testbed's host namespaces: net.* keys, one value each, testbed only.
      {"placement: local, host_sysctls: {net.ipv4.tcp_slow_start_after_idle: 0}",
       "key 'live.host_sysctls': set in the testbed's host namespaces; expected placement: "
       "testbed"},
      {"placement: testbed, host_sysctls: {kernel.panic: 1}",
       "key 'live.host_sysctls.kernel.panic': expected a network namespace's sysctl"},
      {"placement: testbed, host_sysctls: {net.ipv4.tcp_rmem: 4096 87380 6291456}",
       "expected one value without spaces"},
  };
  for (const Case& c : cases) {
    LiveScenario sc;
    sc.live = c.live;
    const Run r = run_simctl(dir, sc, 30);
    INFO("live: {" << c.live << "} -> " << r.output);
    CHECK(r.code == 2);
    CHECK(lines(r.output) == 1);
    CHECK(r.output.find("live.yaml:") != std::string::npos);
    CHECK(r.output.find(c.expected) != std::string::npos);
    CHECK_FALSE(fs::exists(dir / "out" / "live-test.csv"));
  }
  // Background traffic runs between the testbed's hosts, not between local processes.
  LiveScenario sc;
  sc.live = "placement: local";
  sc.workload_extra = "  background: [{from: s1, to: s0, start_step: 1}]\n";
  const Run r = run_simctl(dir, sc, 30);
  INFO(r.output);
  CHECK(r.code == 2);
  CHECK(lines(r.output) == 1);
  CHECK(r.output.find("key 'workload.background': a live run's background traffic runs between "
                      "the testbed's hosts; expected live.placement: testbed") !=
        std::string::npos);
  // NIC stragglers live are a testbed server's cap: refused on local processes at their key.
  const std::vector<Case> simulated_only = {
      {"  stragglers: [{worker: 1, from_step: 2, nic_bandwidth: 1Gbps}]\n",
       "key 'workload.stragglers': a straggler's nic_bandwidth is a testbed server's NIC cap "
       "live: expected live.placement: testbed"},
  };
  for (const Case& c : simulated_only) {
    LiveScenario one;
    one.live = "placement: local";
    one.systems = {"{label: kf, kind: kungfu}"};
    one.workload_extra = c.live;
    const Run e = run_simctl(dir, one, 30);
    INFO(c.live << " -> " << e.output);
    CHECK(e.code == 2);
    CHECK(lines(e.output) == 1);
    CHECK(e.output.find(c.expected) != std::string::npos);
  }
  fs::remove_all(dir);
}

namespace {

// The steps CSV as (step, batch, strategy, decision) rows: what the policy did, whichever mode.
std::vector<std::string> policy_columns(const fs::path& csv) {
  std::vector<std::string> out;
  for (const auto& row : read_csv(csv)) {
    out.push_back(row.at("step") + "," + row.at("batch_per_gpu") + "," + row.at("strategy") + "," +
                  row.at("decision"));
  }
  return out;
}

}  // namespace

TEST_CASE(
    "policies live on local processes: the per-step rows show the change at step 6, as "
    "simulated") {
  const fs::path root = ADAPTSIM_SOURCE_DIR;
  const std::string scenario = (root / "scenarios/policy-switch.yaml").string();
  for (const std::string& policy :
       {std::string(), std::string("workload.policy={name: scale-batch, step: 5, factor: 2}")}) {
    CAPTURE(policy);
    const fs::path dir = scratch_dir("policy_live");
    std::vector<std::string> extra;
    if (!policy.empty()) extra = {"--set", policy};
    auto args = [&](bool live) {
      std::vector<std::string> a = {"run", scenario, "-o", (dir / (live ? "live" : "sim")).string(),
                                    "--no-progress"};
      if (live) a.insert(a.begin() + 1, "--live");
      a.insert(a.end(), extra.begin(), extra.end());
      return a;
    };
    SimctlProcess sim(args(false), dir);
    REQUIRE_MESSAGE(sim.wait(60) == 0, sim.output());
    SimctlProcess live(args(true), dir);
    REQUIRE_MESSAGE(live.wait(120) == 0, live.output());
    const auto s = policy_columns(dir / "sim" / "policy-switch.steps.csv");
    const auto l = policy_columns(dir / "live" / "policy-switch.steps.csv");
    CHECK(s == l);
    REQUIRE(l.size() == 10);
    if (policy.empty()) {
      CHECK(l[5] == "5,32,STAR,strategy MULTI_BINARY_TREE_STAR");
      CHECK(l[6] == "6,32,MULTI_BINARY_TREE_STAR,");
    } else {
      CHECK(l[5] == "5,32,STAR,batch 64");
      CHECK(l[6] == "6,64,STAR,");
    }
    for (const auto& row : read_csv(dir / "live" / "policy-switch.steps.csv"))
      CHECK(row.at("mode") == "live");
    fs::remove_all(dir);
  }
}

namespace {

// Checks a --timeline file (sim/runtime/timeline.h) of `steps` steps with the variance monitor
// every step: per (process, worker) track, one span per step in order and apart, every compute
// and monitor span inside a step, the squares' all-reduce once per step, every async all-reduce
// ended after it began, as many per worker, and each message's transfer with its bytes and
// rate; the links' utilization counters (simulated only: `simulated`). Returns the step spans'
// durations in ms, per step, per track; `transfers_in_steps` gets per track the transfers that
// began and ended within the steps (the barrier before them and the statistics' all-reduce after
// them are live only).
std::vector<std::vector<double>> check_timeline(const fs::path& path, int steps, bool simulated,
                                                std::map<int, int>* transfers_in_steps) {
  std::ifstream in(path);
  REQUIRE_MESSAGE(in, path.string());
  const nlohmann::json doc = nlohmann::json::parse(in);
  const nlohmann::json& events = doc.at("traceEvents");
  using Track = std::pair<int, int>;
  std::map<Track, std::vector<std::pair<double, double>>> step_spans;
  std::map<Track, int> squares, reductions;
  std::map<std::string, double> begun;
  std::map<int, std::vector<std::pair<double, double>>> transfer_spans;  // by track's worker
  int transfers = 0, counters = 0;
  for (const auto& e : events) {
    const std::string ph = e.at("ph");
    if (ph == "M") continue;
    if (ph == "C") {
      // Simulated: a busy link's utilization per time bin, a fraction of its capacity.
      CHECK(e.at("cat") == "link");
      CHECK(e.at("name").get<std::string>().rfind("link ", 0) == 0);
      const double u = e.at("args").at("utilization").get<double>();
      CHECK(u >= 0);
      CHECK(u <= 1 + 1e-9);
      ++counters;
      continue;
    }
    const Track t{e.at("pid").get<int>(), e.at("tid").get<int>()};
    const std::string name = e.at("name");
    if (ph == "X" && name.rfind("step ", 0) == 0) {
      CHECK(std::stoi(name.substr(5)) == static_cast<int>(step_spans[t].size()));
      step_spans[t].push_back(
          {e.at("ts").get<double>(), e.at("ts").get<double>() + e.at("dur").get<double>()});
    }
    if (ph == "X" && name == "allreduce squares") ++squares[t];
    const std::string key = std::to_string(t.first) + "/" + e.value("id", std::string());
    if (ph == "b") begun[key] = e.at("ts").get<double>();
    if (ph == "e") {
      REQUIRE(begun.count(key) == 1);
      CHECK(e.at("ts").get<double>() >= begun[key]);
      if (e.value("cat", std::string()) == "comm") ++reductions[t];
      if (e.value("cat", std::string()) == "transfer") {
        // Each message: its payload (live, the barrier before the steps sends empty ones) and
        // achieved rate.
        CHECK((e.at("args").at("bytes").get<double>() > 0 || !simulated));
        CHECK(e.at("args").at("rate_Bps").get<double>() >= 0);
        transfer_spans[t.first * 1000 + t.second].push_back({begun[key], e.at("ts").get<double>()});
        ++transfers;
      }
    }
  }
  REQUIRE(!step_spans.empty());
  std::vector<std::vector<double>> durations(static_cast<std::size_t>(steps));
  for (const auto& [t, spans] : step_spans) {
    CAPTURE(t.first);
    CAPTURE(t.second);
    REQUIRE(static_cast<int>(spans.size()) == steps);
    for (std::size_t k = 0; k < spans.size(); ++k) {
      if (k > 0) CHECK(spans[k].first >= spans[k - 1].second - 1e-3);
      durations[k].push_back((spans[k].second - spans[k].first) / 1e3);
    }
    CHECK(squares[t] == steps);
    CHECK(reductions[t] > 0);
    CHECK(reductions[t] % steps == 0);
    CHECK(reductions[t] == reductions.begin()->second);
  }
  for (const auto& e : events) {
    if (e.at("ph") != "X") continue;
    const std::string cat = e.value("cat", std::string());
    if (cat != "compute" && cat != "monitor") continue;
    const Track t{e.at("pid").get<int>(), e.at("tid").get<int>()};
    const double b = e.at("ts").get<double>(), end = b + e.at("dur").get<double>();
    bool inside = false;
    for (const auto& [s0, s1] : step_spans[t])
      inside = inside || (b >= s0 - 1e-3 && end <= s1 + 1e-3);
    CHECK_MESSAGE(inside, e.dump());
  }
  CHECK(transfers > 0);
  CHECK((counters > 0) == simulated);
  for (const auto& [t, spans] : step_spans) {
    int within = 0;
    for (const auto& [b, e] : transfer_spans[t.first * 1000 + t.second]) {
      if (b >= spans.front().first - 1e-3 && e <= spans.back().second + 1e-3) ++within;
    }
    (*transfers_in_steps)[simulated ? t.second : t.first] = within;
  }
  return durations;
}

}  // namespace

TEST_CASE("--timeline: each worker's phases, simulated and live, nested in its steps") {
  const fs::path root = ADAPTSIM_SOURCE_DIR;
  const fs::path dir = scratch_dir("timeline");
  constexpr int kSteps = 3;  // one warm-up step and two measured
  auto args = [&](bool live) {
    return sim_or_live_args(live, root / "scenarios/fig8-local.yaml", dir,
                            {"--timeline", (dir / "{}-tl").string(), "--set",
                             "sweep.workload.monitors=[[{name: gradient-variance}]]", "--set",
                             "workload.models=[mobilenetv2]", "--set", "workload.steps=2", "--set",
                             "live.compute=sleep"});
  };
  SimctlProcess sim(args(false), dir);
  REQUIRE_MESSAGE(sim.wait(60) == 0, sim.output());
  SimctlProcess live(args(true), dir);
  REQUIRE_MESSAGE(live.wait(120) == 0, live.output());
  std::map<int, int> sim_transfers, live_transfers;
  const auto sim_steps = check_timeline(dir / "sim-tl" / "p0-mobilenetv2-kungfu.trace.json", kSteps,
                                        true, &sim_transfers);
  const auto live_steps = check_timeline(dir / "live-tl" / "p0-mobilenetv2-kungfu.trace.json",
                                         kSteps, false, &live_transfers);
  // The same messages in both modes: KungFu's chunks over the same strategy, and the steps'
  // agreements; each worker's within its steps (simulated: worker tracks; live: rank processes).
  CHECK(sim_transfers.size() == 4);
  for (const auto& [worker, n] : sim_transfers)
    CHECK_MESSAGE(n > 0, worker);
  CHECK(live_transfers == sim_transfers);
  // Simulated: one process, four worker tracks; live: four processes (ranks), one track each.
  CHECK(sim_steps.front().size() == 4);
  CHECK(live_steps.front().size() == 4);
  // The steps CSV's step time is the workers' mean step span.
  for (const auto& [steps, csv] : {std::pair{&sim_steps, dir / "sim" / "fig8-local.steps.csv"},
                                   std::pair{&live_steps, dir / "live" / "fig8-local.steps.csv"}}) {
    const auto rows = read_csv(csv);
    REQUIRE(rows.size() == static_cast<std::size_t>(kSteps));
    for (int k = 0; k < kSteps; ++k) {
      double mean = 0;
      for (double d : (*steps)[static_cast<std::size_t>(k)])
        mean += d / static_cast<double>((*steps)[static_cast<std::size_t>(k)].size());
      CHECK(std::stod(rows[static_cast<std::size_t>(k)].at("step_time_ms")) ==
            doctest::Approx(mean).epsilon(1e-4));
    }
  }
  fs::remove_all(dir);
}

TEST_CASE("a compute straggler live on local processes slows the steps after it as simulated") {
  // Worker 1 computes 10x from step 5 (runtime/straggler.h): the same step loop stretches its
  // compute deadlines in both modes, and the synchronous all-reduce waits for it. Its steps are
  // then bound by its compute, which both modes share, while the steps before are bound by
  // communication, which differs (1 Gbit/s NICs simulated, loopback live). So the steps after
  // must match the simulated ones, and be slower than those before.
  const fs::path root = ADAPTSIM_SOURCE_DIR;
  const fs::path dir = scratch_dir("straggler_live");
  struct Means {
    double before = 0, after = 0;
  };
  auto means = [&](bool live) {
    std::vector<std::string> a = {"run",
                                  (root / "scenarios/policy-switch.yaml").string(),
                                  "-o",
                                  (dir / (live ? "live" : "sim")).string(),
                                  "--no-progress",
                                  "--set",
                                  "workload.policy={name: none}",
                                  "--set",
                                  "workload.stragglers=[{worker: 1, from_step: 5, compute: 10}]"};
    if (live) a.insert(a.begin() + 1, "--live");
    SimctlProcess p(a, dir);
    REQUIRE_MESSAGE(p.wait(live ? 120 : 60) == 0, p.output());
    const auto rows = read_csv(dir / (live ? "live" : "sim") / "policy-switch.steps.csv");
    REQUIRE(rows.size() == 10);
    Means m;
    for (int k = 1; k <= 4; ++k)
      m.before += std::stod(rows[static_cast<std::size_t>(k)].at("step_time_ms")) / 4;
    for (int k = 6; k <= 9; ++k)
      m.after += std::stod(rows[static_cast<std::size_t>(k)].at("step_time_ms")) / 4;
    return m;
  };
  const Means sim = means(false), live = means(true);
  CAPTURE(sim.before);
  CAPTURE(sim.after);
  CAPTURE(live.before);
  CAPTURE(live.after);
  CHECK(sim.after > 1.4 * sim.before);
  CHECK(live.after > 2 * live.before);
  CHECK(live.after == doctest::Approx(sim.after).epsilon(0.15));
  fs::remove_all(dir);
}

namespace {

// A 3-server elastic scenario of KungFu (BINARY_TREE_STAR) on local processes, with
// `workload_extra` (the elastic: map, a policy, failures), written to dir/elastic.yaml.
fs::path elastic_scenario(const fs::path& dir, int steps, const std::string& workload_extra) {
  LiveScenario sc;
  sc.servers = 3;
  sc.warmup_steps = 1;
  sc.steps = steps;
  sc.systems = {"{label: kf, kind: kungfu, strategy: BINARY_TREE_STAR}"};
  sc.live = "placement: local";
  sc.workload_extra = workload_extra;
  std::ofstream(dir / "elastic.yaml") << sc.text();
  return dir / "elastic.yaml";
}

// The steps CSV of `scenario` run simulated or live into dir/out, with `--set`s.
std::vector<std::map<std::string, std::string>> run_steps(
    const fs::path& dir, const fs::path& scenario, bool live, const std::string& out,
    const std::vector<std::string>& sets, const std::vector<std::string>& extra = {}) {
  std::vector<std::string> a = {"run", scenario.string(), "-o", (dir / out).string(),
                                "--no-progress"};
  a.insert(a.end(), extra.begin(), extra.end());
  for (const std::string& set : sets)
    a.insert(a.end(), {"--set", set});
  if (live) a.insert(a.begin() + 1, "--live");
  SimctlProcess p(a, dir);
  REQUIRE_MESSAGE(p.wait(live ? 120 : 60) == 0, p.output());
  return read_csv(dir / out / "live-test.steps.csv");
}

}  // namespace

TEST_CASE(
    "an elastic run live on local processes resizes 1 -> 3 -> 1 -> 3 as simulated, both "
    "mechanisms") {
  // KungFu's protocol in both modes (trainer.h, "Worker-set changes"): live, the runner starts a
  // real process for each new worker, which joins by the store's notice, connects to the new
  // version's mesh, meets the others at the barrier and receives the model state (checked element
  // by element before its next step); the leavers stop. The per-step cluster sizes must be the
  // simulated ones, every resize's phases must be measured, and nothing may be left running.
  const fs::path dir = scratch_dir("elastic_live");
  const fs::path scenario =
      elastic_scenario(dir, 11,
                       "  elastic: {initial_workers: 1}\n"
                       "  policy: {name: resize-schedule, every: 3, sizes: [1, 3]}\n");
  for (const std::string mechanism : {"kungfu", "restart"}) {
    CAPTURE(mechanism);
    auto run = [&](bool live) {
      // Live, each process's timeline too (one file per process, merged).
      const std::vector<std::string> timeline = {"--timeline",
                                                 (dir / (mechanism + "-timeline")).string()};
      return run_steps(dir, scenario, live, mechanism + (live ? "-live" : "-sim"),
                       {"workload.elastic.mechanism=" + mechanism},
                       live ? timeline : std::vector<std::string>{});
    };
    const auto sim = run(false);
    const auto live = run(true);
    REQUIRE(sim.size() == 12);
    REQUIRE(live.size() == 12);
    const std::vector<std::string> expected = {"1", "1", "1", "3", "3", "3",
                                               "1", "1", "1", "3", "3", "3"};
    for (std::size_t k = 0; k < 12; ++k) {
      CAPTURE(k);
      CHECK(sim[k].at("workers") == expected[k]);
      CHECK(live[k].at("workers") == expected[k]);
      CHECK(live[k].at("decision") == sim[k].at("decision"));
    }
    // The growth after steps 2 and 8 and the shrink after step 5, each with its phases.
    const std::vector<const char*> up =
        mechanism == "kungfu"
            ? std::vector<const char*>{"resize.consensus_s",    "resize.propose_s",
                                       "resize.reconnect_s",    "resize.join.process_start_s",
                                       "resize.join.connect_s", "resize.barrier_s",
                                       "resize.sync_s",         "resize.broadcast_s",
                                       "resize.total_s"}
            : std::vector<const char*>{"resize.checkpoint_s",   "resize.join.process_start_s",
                                       "resize.join.restore_s", "resize.join.connect_s",
                                       "resize.join.barrier_s", "resize.total_s"};
    for (std::size_t k : {2u, 8u}) {
      const std::string& readings = live[k].at("readings");
      CAPTURE(readings);
      for (const char* key : up)
        CHECK(readings.find(key) != std::string::npos);
    }
    CHECK(live[5].at("readings").find("resize.total_s") != std::string::npos);
    // The merged timeline holds every worker's track and the new processes' phases.
    std::string merged;
    for (const auto& e : fs::directory_iterator(dir / (mechanism + "-timeline"))) {
      std::ifstream in(e.path());
      merged.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
    for (const char* pid : {"\"pid\":0", "\"pid\":1", "\"pid\":2"})
      CHECK(merged.find(pid) != std::string::npos);
    CHECK(merged.find("resize.join.process_start") != std::string::npos);
    // KungFu's shrink starts no process; a restart starts the one that remains.
    CHECK((live[5].at("readings").find("resize.join") == std::string::npos) ==
          (mechanism == "kungfu"));
    // Every process has ended, the store's temporary folder with them.
    CHECK(processes_mentioning(dir.string()).empty());
  }
  fs::remove_all(dir);
}

TEST_CASE(
    "a worker killed or hung live is found by its lapsed lease, and the survivors shrink "
    "and go on") {
  // failure.h in both modes: the killed process SIGKILLs itself as it would start step 4 (a hung
  // one stops taking part and renewing its lease, its connections open); the others' steps stall,
  // their watchdog reads the store's leases after failure_timeout, swaps in the survivors'
  // cluster, and the step is redone without it. Rank 0 (worker 0) too: the next survivor becomes
  // rank 0 and broadcasts the state. A worker paused for 3 s is dropped the same way, and leaves
  // once it runs again (its own step stalls in the old cluster; the store shows the new one).
  for (const auto& [killed, mode] : std::vector<std::pair<int, std::string>>{
           {1, "kill"}, {0, "kill"}, {1, "silent"}, {2, "pause, for: 3s"}}) {
    CAPTURE(killed);
    CAPTURE(mode);
    const fs::path dir = scratch_dir("failure_live");
    const fs::path scenario =
        elastic_scenario(dir, 7,
                         "  elastic: {initial_workers: 3, failure_timeout: "
                         "1s}\n  failures: [{worker: " +
                             std::to_string(killed) + ", step: 4, mode: " + mode + "}]\n");
    auto run = [&](bool live) { return run_steps(dir, scenario, live, live ? "live" : "sim", {}); };
    const auto sim = run(false);
    const auto live = run(true);
    REQUIRE(sim.size() == 8);
    REQUIRE(live.size() == 8);
    for (std::size_t k = 0; k < 8; ++k) {
      CAPTURE(k);
      CHECK(live[k].at("workers") == (k < 4 ? "3" : "2"));
      CHECK(live[k].at("workers") == sim[k].at("workers"));
    }
    // Found after the timeout (1 s) and a lease read, then the survivors' resize phases.
    const std::string& readings = live[4].at("readings");
    CAPTURE(readings);
    const std::size_t at = readings.find("failure.detect_s=");
    REQUIRE(at != std::string::npos);
    const double detect = std::stod(readings.substr(at + 17));
    CHECK(detect >= 1.0);
    CHECK(detect < 2.0);
    for (const char* key : {"resize.barrier_s", "resize.broadcast_s", "resize.total_s"})
      CHECK(readings.find(key) != std::string::npos);
    CHECK(processes_mentioning(dir.string()).empty());
    fs::remove_all(dir);
  }
}

namespace {

// The steps CSV of scenarios/fig4-live.yaml (fashion-mlp learning for real) with `sets`, run
// simulated or live into dir/sim or dir/live.
std::vector<std::map<std::string, std::string>> fig4_steps(const fs::path& dir,
                                                           const std::vector<std::string>& sets,
                                                           bool live) {
  const fs::path scenario = fs::path(ADAPTSIM_SOURCE_DIR) / "scenarios/fig4-live.yaml";
  std::vector<std::string> a = {"run", scenario.string(), "-o",
                                (dir / (live ? "live" : "sim")).string(), "--no-progress"};
  for (const std::string& s : sets)
    a.insert(a.end(), {"--set", s});
  if (live) a.insert(a.begin() + 1, "--live");
  SimctlProcess p(a, dir);
  REQUIRE_MESSAGE(p.wait(live ? 120 : 60) == 0, p.output());
  return read_csv(dir / (live ? "live" : "sim") / "fig4-live.steps.csv");
}

// The reading `key` of a steps CSV row ("k1=v1;k2=v2"), or NaN.
double reading_of(const std::map<std::string, std::string>& row, const std::string& key) {
  const std::string& r = row.at("readings");
  const std::size_t at = r.find(key + "=");
  return at == std::string::npos ? std::nan("") : std::stod(r.substr(at + key.size() + 1));
}

}  // namespace

TEST_CASE("a live run that learns resizes 1 -> 3 -> 2 and goes on learning from the agreed data") {
  // scenarios/fig4-live.yaml's fashion-mlp trained for real while KungFu's protocol resizes it:
  // the new processes receive the parameters and their momentum (elastic.optimizer_slots 1),
  // every worker agrees on the data cursor and the samples trained (ElasticHook's
  // all_reduce(trained_samples, max)), each takes its slice of the next global batch at the new
  // size, and the parameters' hashes are compared among the cluster's workers after every step
  // (a worker that missed the state fails the run). The samples trained add up the global
  // batches of every step's cluster, the learning rate follows the global batch (linear
  // scaling), and the model learns.
  const fs::path dir = scratch_dir("learn_elastic");
  const std::vector<std::string> sets = {
      "workload.steps=44", "workload.learn.eval_every=15",
      "workload.elastic={initial_workers: 1, optimizer_slots: 1}",
      "workload.policy={name: resize-schedule, every: 15, sizes: [1, 3, 2]}"};
  const auto sim = fig4_steps(dir, sets, false), live = fig4_steps(dir, sets, true);
  REQUIRE(live.size() == 45);
  REQUIRE(sim.size() == 45);
  auto reading = [&](std::size_t k, const std::string& key) { return reading_of(live[k], key); };
  double samples = 0;
  for (std::size_t k = 0; k < live.size(); ++k) {
    CAPTURE(k);
    const int workers = std::stoi(live[k].at("workers"));
    CHECK(live[k].at("workers") == sim[k].at("workers"));
    CHECK(workers == (k < 15 ? 1 : k < 30 ? 3 : 2));
    samples += 64.0 * workers;
    CHECK(reading(k, "learn.samples") == samples);
    CHECK(reading(k, "learn.lr") == doctest::Approx(0.05 * workers));  // base_batch 64
  }
  // Evaluations after steps 14, 29 and 44, the last on the cluster of 2: it learned.
  for (std::size_t k : {14u, 29u, 44u})
    CHECK(reading(k, "learn.test_accuracy") > 0);
  CHECK(reading(44, "learn.test_accuracy") > 0.6);
  CHECK(processes_mentioning(dir.string()).empty());
  fs::remove_all(dir);
}

TEST_CASE("a live run that learns restarts 1 -> 3 -> 2 from its checkpoint as KungFu resizes it") {
  // The stop-checkpoint-restart baseline with real learning: rank 0 writes the learner's
  // parameters, momentum and data position (cursor, samples trained) to the checkpoint, every
  // process stops, the new cluster's processes read it and go on. The checkpoint and KungFu's
  // broadcast carry the same state and the all-reduces fold in a fixed order, so both runs learn
  // the same: equal readings (samples, learning rate, test accuracy) at every step.
  const fs::path dir = scratch_dir("learn_restart");
  fs::create_directories(dir / "restart");
  fs::create_directories(dir / "kungfu");
  const std::vector<std::string> resize = {
      "workload.steps=44", "workload.learn.eval_every=15",
      "workload.policy={name: resize-schedule, every: 15, sizes: [1, 3, 2]}"};
  std::vector<std::string> kungfu = resize, restart = resize;
  kungfu.push_back("workload.elastic={initial_workers: 1, optimizer_slots: 1}");
  restart.push_back(
      "workload.elastic={mechanism: restart, initial_workers: 1, optimizer_slots: 1}");
  const auto by_restart = fig4_steps(dir / "restart", restart, true);
  const auto sim = fig4_steps(dir / "restart", restart, false);
  const auto by_kungfu = fig4_steps(dir / "kungfu", kungfu, true);
  REQUIRE(by_restart.size() == 45);
  REQUIRE(by_kungfu.size() == 45);
  REQUIRE(sim.size() == 45);
  for (std::size_t k = 0; k < by_restart.size(); ++k) {
    CAPTURE(k);
    CHECK(by_restart[k].at("workers") == sim[k].at("workers"));
    CHECK(by_restart[k].at("workers") == by_kungfu[k].at("workers"));
    for (const std::string key : {"learn.samples", "learn.lr", "learn.test_accuracy"}) {
      CAPTURE(key);
      const double a = reading_of(by_restart[k], key), b = reading_of(by_kungfu[k], key);
      CHECK(std::isnan(a) == std::isnan(b));
      if (!std::isnan(a)) CHECK(a == b);
    }
  }
  CHECK(std::any_of(by_restart.begin(), by_restart.end(), [](const auto& row) {
    return row.at("readings").find("resize.join.restore_s") != std::string::npos;
  }));
  CHECK(reading_of(by_restart[44], "learn.test_accuracy") > 0.6);
  CHECK(processes_mentioning(dir.string()).empty());
  fs::remove_all(dir);
}

TEST_CASE("a live run that learns grows its batch by the adaptive-batch policy on its real GNS") {
  // scenarios/fig4-live.yaml (4 processes x 64, fashion-mlp) with KungFu's Figure 4 policy
  // (policies.cpp, adaptive-batch) over "epochs" of 12800 samples and the gradient noise scale
  // monitor on the real gradients: at each epoch's end the batch per GPU may grow (x1 to x2, never
  // shrink), the learner takes global batches of the new size from its data cursor, and the
  // samples trained add up each step's global batch. Simulated, the gradients hold no values, the
  // GNS is NaN, and the batch stays.
  const fs::path dir = scratch_dir("learn_adaptive_batch");
  const std::vector<std::string> sets = {
      "workload.steps=149", "workload.learn.eval_every=50",
      "workload.policy={name: adaptive-batch, epoch_samples: 12800, max_batch: 1024}",
      "workload.monitors=[{name: gradient-noise-scale}]"};
  const auto sim = fig4_steps(dir, sets, false), live = fig4_steps(dir, sets, true);
  REQUIRE(live.size() == 150);
  REQUIRE(sim.size() == 150);
  auto reading = [&](std::size_t k, const std::string& key) { return reading_of(live[k], key); };
  double samples = 0, epoch = 0;
  int changes = 0;
  for (std::size_t k = 0; k < live.size(); ++k) {
    CAPTURE(k);
    CHECK(sim[k].at("batch_per_gpu") == "64");
    const int batch = std::stoi(live[k].at("batch_per_gpu"));
    samples += 4.0 * batch;
    epoch += 4.0 * batch;
    CHECK(reading(k, "learn.samples") == samples);
    CHECK(std::isfinite(reading(k, "gradient-noise-scale.b_simple")));
    if (k > 0) {
      const int before = std::stoi(live[k - 1].at("batch_per_gpu"));
      CHECK(batch >= before);
      CHECK(batch <= 2 * before);
      // A change follows the decision of an epoch's last step.
      CHECK((batch != before) == !live[k - 1].at("decision").empty());
      changes += batch != before ? 1 : 0;
    }
    if (!live[k].at("decision").empty()) CHECK(epoch >= 12800);
    if (epoch >= 12800) epoch = 0;
  }
  CHECK(changes >= 1);
  CHECK(reading(49, "learn.test_accuracy") > 0.6);
  CHECK(processes_mentioning(dir.string()).empty());
  fs::remove_all(dir);
}
