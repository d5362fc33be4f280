// End-to-end tests of the simctl binary: bad input gives one line naming file, line and key,
// exit code 2 and no output files; the same scenario and seed give byte-identical CSVs.

#include <doctest/doctest.h>
#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/support/run_command.h"

namespace fs = std::filesystem;

namespace {

using Result = adaptsim::testing::CommandResult;

Result run(const std::string& args) {
  return adaptsim::testing::run_command(std::string(SIMCTL_PATH) + " " + args);
}

const fs::path kRoot = ADAPTSIM_SOURCE_DIR;

// A scratch folder per test with a valid small scenario that tests then break.
struct Scratch {
  fs::path dir;
  explicit Scratch(const std::string& name)
      : dir(fs::temp_directory_path() / ("simctl_test_" + name)) {
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  fs::path write(const std::string& name, const std::string& text) const {
    std::ofstream(dir / name) << text;
    return dir / name;
  }
  std::string scenario(const std::string& workload_extra = "",
                       const std::string& topology_file = "") const {
    const std::string topo =
        topology_file.empty() ? (kRoot / "topologies/cloud-vms.yaml").string() : topology_file;
    return "name: small\nseed: 3\ntopology:\n  file: " + topo +
           "\n  params: {servers: 4}\nworkload:\n  kind: allreduce\n  strategies: [STAR, "
           "CLASSIC_RING]\n  min_bytes: 1KiB\n  max_bytes: 4MiB\n  step_factor: 4\n" +
           workload_extra;
  }
  bool out_is_empty() const { return !fs::exists(dir / "out") || fs::is_empty(dir / "out"); }
};

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void expect_input_error(const Scratch& s, const fs::path& scenario, const std::string& expected) {
  const Result r = run("run " + scenario.string() + " -o " + (s.dir / "out").string());
  CHECK(r.code == 2);
  CHECK_MESSAGE(r.output.find(expected) != std::string::npos, "output was: " << r.output);
  // One line.
  CHECK(std::count(r.output.begin(), r.output.end(), '\n') == 1);
  CHECK(s.out_is_empty());
}

// `simctl run --no-progress ARGS -o DIR/out OPTION DIR/NAME` refused for the scenario's kind:
// exit 2, `expected` on the one line, neither folder created.
void expect_option_refused(const Scratch& s, const std::string& args, const std::string& option,
                           const std::string& name, const std::string& expected) {
  const Result r = run("run --no-progress " + args + " -o " + (s.dir / "out").string() + " " +
                       option + " " + (s.dir / name).string());
  CHECK(r.code == 2);
  CHECK_MESSAGE(r.output.find(expected) != std::string::npos, r.output);
  CHECK(std::count(r.output.begin(), r.output.end(), '\n') == 1);
  CHECK_FALSE(fs::exists(s.dir / "out"));
  CHECK_FALSE(fs::exists(s.dir / name));
}

}  // namespace

TEST_CASE("a valid scenario runs and writes its CSV and manifest") {
  Scratch s("ok");
  const auto sc = s.write("small.yaml", s.scenario());
  const Result r = run("run " + sc.string() + " -o " + (s.dir / "out").string());
  CHECK(r.code == 0);
  CHECK(fs::exists(s.dir / "out" / "small.csv"));
  CHECK(fs::exists(s.dir / "out" / "small.manifest.json"));
  const std::string csv = read_file(s.dir / "out" / "small.csv");
  CHECK(csv.rfind(
            "mode,topology,n_ranks,strategy,size_bytes,count,dtype,time_us,algbw_GBps,busbw_GBps\n",
            0) == 0);
  // 2 strategies x 4 sizes (1 KiB, 4 KiB, ..., 1 MiB, 4 MiB: 1K*4^k <= 4M -> k = 0..6: 7 sizes).
  CHECK(std::count(csv.begin(), csv.end(), '\n') == 1 + 2 * 7);
  const std::string manifest = read_file(s.dir / "out" / "small.manifest.json");
  CHECK(manifest.find("\"seed\": 3") != std::string::npos);
  CHECK(manifest.find("\"version\"") != std::string::npos);
  CHECK(manifest.find("\"wall_time_s\"") != std::string::npos);
}

TEST_CASE("--seed is recorded in the manifest, which holds the resolved scenario") {
  Scratch s("seed");
  const auto sc = s.write("small.yaml", s.scenario());
  const Result r = run("run " + sc.string() + " --seed 77 --set workload.step_factor=16 -o " +
                       (s.dir / "out").string());
  REQUIRE_MESSAGE(r.code == 0, r.output);
  const std::string manifest = read_file(s.dir / "out" / "small.manifest.json");
  // --seed 77 replaces the scenario's seed: 3.
  CHECK(manifest.find("\"seed\": 77") != std::string::npos);
  CHECK(manifest.find("\"seed\": 3") == std::string::npos);
  // The resolved scenario is the file with every override applied: --set step_factor=16 (the
  // file says 4) and --seed 77, next to what the file says unchanged (name, the topology file).
  const auto resolved_at = manifest.find("\"resolved_scenario_yaml\": \"");
  REQUIRE(resolved_at != std::string::npos);
  const std::string resolved =
      manifest.substr(resolved_at, manifest.find('\n', resolved_at) - resolved_at);
  CHECK(resolved.find("name: small") != std::string::npos);
  CHECK(resolved.find("seed: 77") != std::string::npos);
  CHECK(resolved.find("step_factor: 16") != std::string::npos);
  CHECK(resolved.find("cloud-vms.yaml") != std::string::npos);
  // 1 KiB x 16^k <= 4 MiB: k = 0..3, 4 sizes per strategy, 2 strategies.
  const std::string csv = read_file(s.dir / "out" / "small.csv");
  CHECK(std::count(csv.begin(), csv.end(), '\n') == 1 + 2 * 4);
}

TEST_CASE("the same scenario and seed give byte-identical CSVs, whatever the thread count") {
  Scratch s("determinism");
  const auto sc = s.write("small.yaml", s.scenario());
  REQUIRE(run("run " + sc.string() + " --threads 1 -o " + (s.dir / "a").string()).code == 0);
  REQUIRE(run("run " + sc.string() + " --threads 2 -o " + (s.dir / "b").string()).code == 0);
  const std::string a = read_file(s.dir / "a" / "small.csv");
  CHECK(!a.empty());
  CHECK(a == read_file(s.dir / "b" / "small.csv"));
  // The shipped all-reduce scenario too.
  REQUIRE(
      run("run " + (kRoot / "scenarios/allreduce.yaml").string() + " -o " + (s.dir / "c").string())
          .code == 0);
  REQUIRE(
      run("run " + (kRoot / "scenarios/allreduce.yaml").string() + " -o " + (s.dir / "d").string())
          .code == 0);
  CHECK(read_file(s.dir / "c" / "allreduce.csv") == read_file(s.dir / "d" / "allreduce.csv"));
}

TEST_CASE("unknown strategy") {
  Scratch s("strategy");
  std::string text = s.scenario();
  text.replace(text.find("CLASSIC_RING"), 12, "CLASIC_RING");
  expect_input_error(s, s.write("x.yaml", text),
                     "x.yaml:8: key 'workload.strategies': unknown strategy \"CLASIC_RING\" (did "
                     "you mean CLASSIC_RING?)");
}

TEST_CASE("negative and unit-less bandwidth in a --set override") {
  Scratch s("bandwidth");
  const auto sc = s.write("x.yaml", s.scenario());
  Result r = run("run " + sc.string() + " -o " + (s.dir / "out").string() +
                 " --set topology.params.nic_bandwidth=-5Gbps");
  CHECK(r.code == 2);
  CHECK(r.output.find("--set topology.params.nic_bandwidth=-5Gbps: key 'server.nic.bandwidth': "
                      "expected a non-negative bandwidth") != std::string::npos);
  r = run("run " + sc.string() + " -o " + (s.dir / "out").string() +
          " --set topology.params.nic_bandwidth=10");
  CHECK(r.code == 2);
  // The bare number is substituted for ${nic_bandwidth} at server.nic.bandwidth: the error names
  // the override and that key.
  CHECK_MESSAGE(r.output.find("--set topology.params.nic_bandwidth=10: key 'server.nic.bandwidth': "
                              "expected a bandwidth with a unit such as") != std::string::npos,
                r.output);
  CHECK(r.output.find("bare number \"10\"") != std::string::npos);
  CHECK(std::count(r.output.begin(), r.output.end(), '\n') == 1);
  CHECK(s.out_is_empty());
}

TEST_CASE("negative and unit-less NIC bandwidth in a scratch topology file") {
  Scratch s("topology_bandwidth");
  const std::string topo =
      "name: scratch\n"
      "params:\n"
      "  servers: 2\n"
      "servers: ${servers}\n"
      "server:\n"
      "  gpus: 1\n"
      "  pcie: {bandwidth: 12GB/s, latency: 1us}\n"
      "  nic:\n"
      "    bandwidth: BW\n"
      "    latency: 5us\n"
      "fabric: {kind: switch}\n";
  auto with = [&](const std::string& bandwidth) {
    std::string text = topo;
    text.replace(text.find("BW"), 2, bandwidth);
    const auto t = s.write("nic.yaml", text);
    return s.write("x.yaml", s.scenario("", t.string()));
  };
  const std::string nic_yaml = (s.dir / "nic.yaml").string();
  // `bandwidth:` under server.nic is line 9 of the topology file.
  expect_input_error(
      s, with("-10Gbps"),
      nic_yaml +
          ":9: key 'server.nic.bandwidth': expected a non-negative bandwidth, got \"-10Gbps\"");
  expect_input_error(
      s, with("10"),
      nic_yaml + ":9: key 'server.nic.bandwidth': expected a bandwidth with a unit such as");
  expect_input_error(s, with("10"), "got the bare number \"10\"");
  // The same file with a unit runs.
  CHECK(run("validate " + with("10Gbps").string()).code == 0);
}

TEST_CASE("disconnected topology") {
  Scratch s("disconnected");
  std::string topo = read_file(kRoot / "topologies/wan-regions.yaml");
  const std::string head = topo.substr(0, topo.find("  links:"));
  // The `links:` key is on the line after the head's last newline.
  const int links_line = 1 + static_cast<int>(std::count(head.begin(), head.end(), '\n'));
  topo = head + "  links:\n    - {between: [us, eu], bandwidth: 1Gbps, latency: 40ms}\n";
  const auto t = s.write("wan.yaml", topo);
  std::string text = s.scenario("", t.string());
  text.replace(text.find("  params: {servers: 4}"), 22, "  params: {}");
  // Regions us = s0, s1; eu = s2, s3; asia = s4, s5 (2 servers each, ranks in server order). Only
  // us and eu are linked: rank 0 (s0.gpu0) reaches ranks 1..3 but not rank 4 (s4.gpu0), and the
  // WAN's `links` key is to blame.
  expect_input_error(
      s, s.write("x.yaml", text),
      t.string() + ":" + std::to_string(links_line) +
          ": key 'fabric.links': no path from s0.gpu0 to s4.gpu0 (disconnected topology)");
}

TEST_CASE("missing required key, wrong type, unknown key") {
  Scratch s("keys");
  std::string missing = s.scenario();
  missing.replace(missing.find("  min_bytes: 1KiB\n"), 18, "");
  expect_input_error(s, s.write("m.yaml", missing),
                     "m.yaml:7: key 'workload.min_bytes': missing required key");

  std::string wrong = s.scenario();
  wrong.replace(wrong.find("step_factor: 4"), 14, "step_factor: four");
  expect_input_error(s, s.write("w.yaml", wrong),
                     "w.yaml:11: key 'workload.step_factor': expected an integer, got \"four\"");

  const std::string typo = s.scenario("  chunk_sise: 1MiB\n");
  expect_input_error(s, s.write("t.yaml", typo),
                     "t.yaml:12: unknown key 'workload.chunk_sise' (did you mean 'chunk_size'?)");
}

TEST_CASE("empty file and non-YAML file") {
  Scratch s("files");
  expect_input_error(s, s.write("empty.yaml", ""), "empty.yaml: empty file");
  // The flow sequence "[yaml" opened on line 1 is never closed: the parser runs into the end of
  // the input, which is line 2 (after the file's one newline), still looking for its ']'.
  expect_input_error(s, s.write("junk.yaml", "{{{ not: [yaml\n"),
                     "junk.yaml:2: not valid YAML: end of sequence flow not found");
  std::string binary(64, '\0');
  binary[3] = 'x';
  expect_input_error(s, s.write("bin.yaml", binary), "bin.yaml: not a YAML file");
  expect_input_error(s, s.dir / "does-not-exist.yaml", "does-not-exist.yaml: cannot read the file");
}

TEST_CASE("validate, list and version") {
  CHECK(run("validate " + (kRoot / "scenarios/allreduce.yaml").string()).code == 0);
  const Result l = run("list strategies");
  CHECK(l.code == 0);
  CHECK(l.output.find("MULTI_BINARY_TREE_STAR") != std::string::npos);
  CHECK(run("list topologies").output.find("dgx1.yaml") != std::string::npos);
  CHECK(run("--version").output.rfind("simctl ", 0) == 0);
  // --help ends with the examples section: a run, an override, a sweep, validate and list.
  const Result h = run("--help");
  CHECK(h.code == 0);
  CHECK(h.output.find("Examples:\n") != std::string::npos);
  CHECK(h.output.find("simctl run scenarios/allreduce.yaml") != std::string::npos);
  CHECK(h.output.find("--set topology.params.servers=32") != std::string::npos);
  CHECK(h.output.find("simctl validate scenarios/fig9.yaml") != std::string::npos);
  CHECK(h.output.find("Exit codes: 0 success, 1 run-time failure, 2 bad input.") !=
        std::string::npos);
  CHECK(run("frobnicate").code == 2);
}

TEST_CASE("socket_buffer: a size, only on serialized connections") {
  const std::string sc = (kRoot / "scenarios/validate-testbed.yaml").string();
  Result r = run("validate " + sc + " --set workload.connection=parallel");
  CHECK(r.code == 2);
  CHECK_MESSAGE(r.output.find("key 'workload.socket_buffer': needs connection: serialized") !=
                    std::string::npos,
                r.output);
  r = run("validate " + sc + " --set workload.socket_buffer=4");
  CHECK(r.code == 2);
  CHECK_MESSAGE(r.output.find("key 'workload.socket_buffer'") != std::string::npos, r.output);
}

TEST_CASE("transport_threads: unlimited or one, and one only on host endpoints") {
  const std::string sc = (kRoot / "scenarios/allreduce.yaml").string();
  Result r = run("validate " + sc + " --set workload.transport_threads=one");
  CHECK_MESSAGE(r.code == 0, r.output);
  r = run("validate " + sc + " --set workload.transport_threads=two");
  CHECK(r.code == 2);
  CHECK_MESSAGE(r.output.find("key 'workload.transport_threads'") != std::string::npos, r.output);
  CHECK_MESSAGE(r.output.find("unlimited") != std::string::npos, r.output);
  r = run("validate " + sc + " --set workload.transport_threads=one --set workload.endpoint=gpu");
  CHECK(r.code == 2);
  CHECK_MESSAGE(r.output.find("key 'workload.transport_threads': one applies to host endpoints") !=
                    std::string::npos,
                r.output);
}

TEST_CASE("share_cv: only with sharing tcp, and a plausible coefficient of variation") {
  const std::string sc = (kRoot / "scenarios/validate-testbed.yaml").string();
  Result r = run("validate " + sc);
  CHECK_MESSAGE(r.code == 0, r.output);
  r = run("validate " + sc + " --set workload.sharing=max-min");
  CHECK(r.code == 2);
  CHECK_MESSAGE(r.output.find("key 'workload.share_cv': needs sharing: tcp") != std::string::npos,
                r.output);
  r = run("validate " + sc + " --set workload.share_cv=-0.5");
  CHECK(r.code == 2);
  CHECK_MESSAGE(
      r.output.find("expected a coefficient of variation between 0 and 10") != std::string::npos,
      r.output);
}

TEST_CASE("--trace-connections: every message of a simulated training run, per task") {
  // STAR on 4 one-GPU hosts, one step: each child sends its whole gradient set to the root
  // (rank 0) and the root broadcasts the sum back, so the three children's bytes to the root and
  // the root's bytes to each child are all the same total, and nothing else is sent.
  Scratch s("trace");
  const std::string sc = (kRoot / "scenarios/validate-testbed.yaml").string();
  const Result r =
      run("run --no-progress " + sc + " -o " + (s.dir / "out").string() + " --trace-connections " +
          (s.dir / "tr").string() +
          " --set 'sweep.topology.params.servers=[4]' --set 'workload.models=[mobilenetv2]'"
          " --set 'workload.systems=[{label: my star, kind: kungfu, strategy: STAR}]'"
          " --set workload.steps=1 --set workload.warmup_steps=0");
  REQUIRE_MESSAGE(r.code == 0, r.output);
  std::ifstream in(s.dir / "tr" / "p0-mobilenetv2-my_star.connections.csv");
  REQUIRE(in);
  std::string line;
  std::getline(in, line);
  CHECK(line == "src_rank,dst_rank,start_s,end_s,bytes");
  std::map<std::pair<int, int>, double> bytes;
  int rows = 0;
  while (std::getline(in, line)) {
    int src = 0, dst = 0;
    double start = 0, end = 0, size = 0;
    REQUIRE(std::sscanf(line.c_str(), "%d,%d,%lf,%lf,%lf", &src, &dst, &start, &end, &size) == 5);
    CHECK(start <= end);
    bytes[{src, dst}] += size;
    ++rows;
  }
  CHECK(rows > 6);
  REQUIRE(bytes.size() == 6);
  const double total = bytes[{1, 0}];
  CHECK(total > 1e6);
  for (int child = 1; child < 4; ++child) {
    CHECK(bytes[{child, 0}] == total);
    CHECK(bytes[{0, child}] == total);
  }
}

TEST_CASE("--trace-connections: training workloads only") {
  Scratch s("trace_kind");
  const Result r =
      run("run --no-progress " + (kRoot / "scenarios/allreduce.yaml").string() + " -o " +
          (s.dir / "out").string() + " --trace-connections " + (s.dir / "tr").string());
  CHECK(r.code == 2);
  CHECK_MESSAGE(r.output.find("writes no connection traces (training only)") != std::string::npos,
                r.output);
  CHECK_FALSE(fs::exists(s.dir / "out"));
}

TEST_CASE("--timeline: training workloads only, nothing written otherwise") {
  Scratch s("timeline_kind");
  expect_option_refused(
      s, (kRoot / "scenarios/allreduce.yaml").string(), "--timeline", "tl",
      "--timeline: scenario 'allreduce': its workload has no timeline (training only)");
}

TEST_CASE("--link-stats --live: a testbed's links only, nothing written otherwise") {
  // fig8-local runs on local processes: no links of its own to count.
  Scratch s("link_stats_live_local");
  expect_option_refused(s, "--live " + (kRoot / "scenarios/fig8-local.yaml").string(),
                        "--link-stats", "links",
                        "--link-stats: scenario 'fig8-local': its workload has no links to report "
                        "(simulated all-reduce and training runs, and live training on a testbed, "
                        "without elastic: only)");
}

TEST_CASE("policy: bad input is one line with file, line and key, exit 2, nothing written") {
  const Scratch s("policy_bad");
  const std::string training =
      "name: small\nseed: 3\ntopology:\n  file: " + (kRoot / "topologies/cloud-vms.yaml").string() +
      "\n  params: {servers: 4}\nworkload:\n  kind: training\n  models: [mobilenetv2]\n"
      "  batch_per_gpu: 32\n  device: " +
      (kRoot / "traces/devices/k80-half.yaml").string() +
      "\n  steps: 3\n  systems:\n    - {label: kf, kind: kungfu}\n";
  struct Case {
    std::string policy;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {"  policy: {name: switch-stratgy, step: 1, strategy: STAR}\n",
       "bad.yaml:14: key 'workload.policy.name'"},
      {"  policy: {name: switch-strategy, step: one, strategy: STAR}\n",
       "bad.yaml:14: key 'workload.policy.step': expected an integer"},
      {"  policy: {name: scale-batch, step: 1, factor: 2x}\n",
       "bad.yaml:14: key 'workload.policy.factor': expected a number"},
      {"  policy: {name: switch-strategy, step: 1, strategy: SPIRAL}\n",
       "bad.yaml:14: key 'workload.policy.strategy': unknown strategy \"SPIRAL\""},
      // Figure 4's policy: a cap below the batch the run starts at; no GNS monitor to read.
      {"  policy: {name: adaptive-batch, epoch_samples: 60000, max_batch: 16}\n  monitors: "
       "[{name: gradient-noise-scale}]\n",
       "bad.yaml:14: key 'workload.policy': the policy grows the batch per GPU up to max_batch 16, "
       "below the batch the run starts at (32)"},
      {"  policy: {name: adaptive-batch, epoch_samples: 60000}\n",
       "bad.yaml:14: key 'workload.policy': adaptive-batch reads the gradient noise scale"},
      {"  policy: {name: resize, step: 1, workers: 2}\n",
       "bad.yaml:14: key 'workload.policy': a policy that changes the worker set needs the "
       "workload's `elastic:` map"},
      // Elastic runs: a size of 0, a size beyond the topology's GPUs, a negative duration, an
      // initial size of 0, an unknown mechanism.
      {"  elastic: {mechanism: kungfu}\n  policy: {name: resize-schedule, every: 2, sizes: [1, "
       "0]}\n",
       "bad.yaml:15: key 'workload.policy.sizes': expected sizes of at least 1 worker"},
      {"  elastic: {mechanism: kungfu}\n  policy: {name: resize, step: 1, workers: 5}\n",
       "bad.yaml:15: key 'workload.policy': asks for a cluster of 5 workers; the topology has 4 "
       "GPUs"},
      {"  elastic: {retry: -1s}\n", "bad.yaml:14: key 'workload.elastic.retry'"},
      {"  elastic: {process_start: -1ms}\n", "bad.yaml:14: key 'workload.elastic.process_start'"},
      {"  elastic: {initial_workers: 0}\n",
       "bad.yaml:14: key 'workload.elastic.initial_workers': expected a whole number of workers "
       "from 1 to the topology's 4"},
      {"  elastic: {mechanism: reboot}\n", "bad.yaml:14: key 'workload.elastic.mechanism'"},
      // Stragglers: a worker that does not exist, a negative step, an item that changes nothing.
      {"  stragglers: [{worker: 7, from_step: 1, compute: 2}]\n",
       "bad.yaml:14: key 'workload.stragglers[0].worker': worker 7 does not exist: the topology "
       "has 4"},
      {"  stragglers: [{worker: 1, from_step: -1, compute: 2}]\n",
       "bad.yaml:14: key 'workload.stragglers[0].from_step'"},
      {"  stragglers: [{worker: 1, from_step: 1}]\n",
       "a straggler needs `compute` (a factor) or `nic_bandwidth`"},
      // Failures: a kill of a worker that does not exist, a negative step, an unknown mode, and
      // failures without an elastic cluster to shrink.
      {"  elastic: {}\n  failures: [{worker: 9, step: 2}]\n",
       "bad.yaml:15: key 'workload.failures[0].worker': worker 9 does not exist: the topology has "
       "4"},
      {"  elastic: {}\n  failures: [{worker: 1, step: -2}]\n",
       "bad.yaml:15: key 'workload.failures[0].step'"},
      {"  elastic: {}\n  failures: [{worker: 1, step: 2, mode: explode}]\n",
       "bad.yaml:15: key 'workload.failures[0].mode'"},
      {"  failures: [{worker: 1, step: 2}]\n",
       "bad.yaml:14: key 'workload.failures': failures need the workload's `elastic:` map"},
      // A pause: without its duration, a duration of 0, a duration for another mode.
      {"  elastic: {}\n  failures: [{worker: 1, step: 2, mode: pause}]\n",
       "bad.yaml:15: key 'workload.failures[0].for': missing: a paused worker runs again after "
       "this duration"},
      {"  elastic: {}\n  failures: [{worker: 1, step: 2, mode: pause, for: 0s}]\n",
       "bad.yaml:15: key 'workload.failures[0].for': must be > 0"},
      {"  elastic: {}\n  failures: [{worker: 1, step: 2, mode: pause, for: -1s}]\n",
       "bad.yaml:15: key 'workload.failures[0].for'"},
      {"  elastic: {}\n  failures: [{worker: 1, step: 2, mode: silent, for: 2s}]\n",
       "bad.yaml:15: key 'workload.failures[0].for': only a pause lasts a while: expected mode: "
       "pause"},
      {"  elastic: {failure_timeout: 0s}\n", "bad.yaml:14: key 'workload.elastic.failure_timeout'"},
      {"  monitors: [{name: throughput, window: 0s}]\n",
       "bad.yaml:14: key 'workload.monitors[0].window'"},
  };
  for (const Case& c : cases) {
    INFO(c.policy);
    expect_input_error(s, s.write("bad.yaml", training + c.policy), c.expected);
  }
  // A strategy change for a system without one.
  const std::string horovod = training;
  std::string text = horovod;
  text.replace(text.find("{label: kf, kind: kungfu}"), 25, "{label: hvd, kind: horovod}");
  expect_input_error(
      s, s.write("bad.yaml", text + "  policy: {name: switch-strategy, step: 1, strategy: STAR}\n"),
      "the policy changes the all-reduce strategy, which system 'hvd' (horovod) does not have");
  // A worker-set change for a system that cannot.
  expect_input_error(s, s.write("bad.yaml", text + "  elastic: {initial_workers: 1}\n"),
                     "bad.yaml:14: key 'workload.elastic': system 'hvd' (horovod) cannot change "
                     "its worker set");
}

TEST_CASE("background: bad input is one line with file, line and key, exit 2, nothing written") {
  const Scratch s("background_bad");
  const std::string training =
      "name: small\nseed: 3\ntopology:\n  file: " + (kRoot / "topologies/cloud-vms.yaml").string() +
      "\n  params: {servers: 4}\nworkload:\n  kind: training\n  models: [mobilenetv2]\n"
      "  batch_per_gpu: 32\n  device: " +
      (kRoot / "traces/devices/k80-half.yaml").string() +
      "\n  steps: 3\n  systems:\n    - {label: kf, kind: kungfu}\n  background:\n";
  struct Case {
    std::string flow;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {"    - {from: s4, to: s0, start_step: 1}\n",
       "bad.yaml:15: key 'workload.background[0].from': host \"s4\" is not in the cluster, which "
       "has 4 servers; expected s0..s3"},
      {"    - {from: vm1, to: s0, start_step: 1}\n",
       "bad.yaml:15: key 'workload.background[0].from': host \"vm1\" is not a host name"},
      {"    - {from: x0, to: x0, start_step: 1}\n",
       "bad.yaml:15: key 'workload.background[0].to': is the flow's own source host"},
      {"    - {from: x0, to: s0, connections: -2, start_step: 1}\n",
       "bad.yaml:15: key 'workload.background[0].connections'"},
      {"    - {from: x0, to: s0, connections: 0, start_step: 1}\n",
       "bad.yaml:15: key 'workload.background[0].connections'"},
      {"    - {from: x0, to: s0, rate: 10, start_step: 1}\n",
       "bad.yaml:15: key 'workload.background[0].rate'"},
      {"    - {from: x0, to: s0}\n",
       "bad.yaml:15: key 'workload.background[0].start_step': missing"},
      {"    - {from: x0, to: s0, start_step: 2, stop_step: 2}\n",
       "bad.yaml:15: key 'workload.background[0].stop_step': expected a step after start_step"},
      {"    - {from: x0, to: s0, start: 1s, stop_step: 4}\n",
       "bad.yaml:15: key 'workload.background[0].stop_step': expected stop with start"},
      {"    - {from: x0, to: s0, start: -1s}\n", "bad.yaml:15: key 'workload.background[0].start'"},
      {"    - {from: x0, to: s0, start_step: 1, bandwidth: 1Gbps}\n",
       "bad.yaml:15: unknown key 'workload.background[0].bandwidth'"},
  };
  for (const Case& c : cases) {
    INFO(c.flow);
    expect_input_error(s, s.write("bad.yaml", training + c.flow), c.expected);
  }
  // The adaptive policy's threshold, and a monitor's interval, in a scenario.
  const std::string no_background = training.substr(0, training.rfind("  background:"));
  expect_input_error(
      s,
      s.write("bad.yaml", no_background + "  policy: {name: adaptive-strategy, threshold: 1.2}\n"),
      "bad.yaml:14: key 'workload.policy.threshold': expected a number in (0, 1)");
  expect_input_error(
      s,
      s.write("bad.yaml", no_background + "  monitors: [{name: gradient-variance, interval: 0}]\n"),
      "bad.yaml:14: key 'workload.monitors[0].interval'");
  // The calibrated CPU kernels need a calibration profile that has them.
  expect_input_error(s, s.write("bad.yaml", no_background + "  monitor_kernels: cpu\n"),
                     "bad.yaml:14: key 'workload.monitor_kernels': needs a calibration profile "
                     "with measured CPU kernels sum, sq_norm and variance");
  expect_input_error(s, s.write("bad.yaml", no_background + "  monitor_kernels: tpu\n"),
                     "bad.yaml:14: key 'workload.monitor_kernels'");
}

// The "gradient variance" span of worker 0's step `step` in a --timeline trace, in microseconds.
double variance_span_us(const fs::path& trace, int step) {
  const nlohmann::json j = nlohmann::json::parse(read_file(trace));
  double step_begin = -1, step_end = -1;
  for (const auto& e : j.at("traceEvents"))
    if (e.value("ph", "") == "X" && e.value("tid", -1) == 0 &&
        e.value("name", "") == "step " + std::to_string(step)) {
      step_begin = e.at("ts").get<double>();
      step_end = step_begin + e.at("dur").get<double>();
    }
  for (const auto& e : j.at("traceEvents"))
    if (e.value("ph", "") == "X" && e.value("tid", -1) == 0 &&
        e.value("name", "") == "gradient variance" && e.at("ts").get<double>() >= step_begin &&
        e.at("ts").get<double>() < step_end)
      return e.at("dur").get<double>();
  FAIL("no gradient variance span in step ", step, " of ", trace);
  return 0;
}

TEST_CASE(
    "monitor_kernels cpu: the kernels measured on as many threads as ranks, else time-shared") {
  // traces/calibration/loopback-tcp-4procs.yaml: 2 cores, one-thread variance 0.911023 ns per
  // element, no fixed cost. Four ranks on two cores: each one-thread kernel takes twice as long.
  // With a `concurrent` block measured on 4 threads (the job's ranks), its kernels are taken as
  // they are; measured on 3 threads, it does not describe this job and is not used.
  const Scratch s("concurrent_kernels");
  const std::string profile = read_file(kRoot / "traces/calibration/loopback-tcp-4procs.yaml");
  auto with_concurrent = [&](int threads) {
    const std::string csv = (kRoot / "traces/calibration/loopback-tcp-4procs.csv").string();
    std::string text = profile;
    text.replace(text.find("loopback-tcp-4procs.csv"), 23, csv);
    text +=
        "  concurrent:\n    threads: " + std::to_string(threads) +
        "\n    kernels:\n"
        "      - {kernel: sum, overhead: 0ns, per_element: 0.5ns, bandwidth: 24GB/s, points: 4}\n"
        "      - {kernel: sq_norm, overhead: 0ns, per_element: 1.5ns, bandwidth: 2.6GB/s, "
        "points: 4}\n"
        "      - {kernel: variance, overhead: 0ns, per_element: 3.25ns, bandwidth: 3.7GB/s, "
        "points: 4}\n";
    return s.write("p" + std::to_string(threads) + ".yaml", text);
  };
  auto variance_us = [&](const std::string& calibration_flag, const std::string& tag) {
    const Result r = run("run " + (kRoot / "scenarios/fig8-local.yaml").string() + " -o " +
                         (s.dir / tag).string() + " --timeline " +
                         (s.dir / (tag + "-tl")).string() + " --no-progress " + calibration_flag +
                         " --set 'sweep.workload.monitors=[[{name: gradient-variance}]]'"
                         " --set 'workload.models=[mobilenetv2]' --set workload.steps=1");
    REQUIRE_MESSAGE(r.code == 0, r.output);
    return variance_span_us(s.dir / (tag + "-tl") / "p0-mobilenetv2-kungfu.trace.json", 1);
  };
  const double shared = variance_us("", "one-thread");
  const double four = variance_us("--calibration " + with_concurrent(4).string(), "four");
  const double three = variance_us("--calibration " + with_concurrent(3).string(), "three");
  CHECK(shared > 0);
  CHECK(four / shared == doctest::Approx(3.25 / (0.911023 * 2)).epsilon(1e-4));
  CHECK(three == doctest::Approx(shared).epsilon(1e-6));
}

TEST_CASE("policy-switch.yaml: the steps CSV shows STAR to step 5, the decision, MBTS from 6") {
  const Scratch s("policy_steps");
  const Result r = run("run " + (kRoot / "scenarios/policy-switch.yaml").string() + " -o " +
                       (s.dir / "out").string() + " --no-progress");
  REQUIRE_MESSAGE(r.code == 0, r.output);
  std::istringstream in(read_file(s.dir / "out" / "policy-switch.steps.csv"));
  std::string line;
  std::getline(in, line);
  CHECK(line ==
        "mode,topology,n_gpus,model,system,step,measured,step_time_ms,"
        "throughput_total_samples_per_s,batch_per_gpu,workers,allreduce_bytes,strategy,decision,"
        "background_flows,readings");
  int step = 0;
  while (std::getline(in, line)) {
    CAPTURE(line);
    CHECK(line.rfind("sim,cloud-vms,4,mobilenetv2,kungfu," + std::to_string(step) + ",", 0) == 0);
    // ...,batch,workers,allreduce_bytes,strategy,decision,background_flows (none),readings (the
    // two monitors' window means); the bytes are MobileNetV2's 3,504,872 float32 gradients.
    const std::string tail = line.substr(line.rfind(",32,4,") + 6);
    CHECK(tail.rfind("14019488,", 0) == 0);
    const std::string rest = tail.substr(tail.find(',') + 1);
    const std::string strategy_and_decision = rest.substr(0, rest.rfind(','));
    if (step <= 4) CHECK(strategy_and_decision == "STAR,,0");
    if (step == 5) CHECK(strategy_and_decision == "STAR,strategy MULTI_BINARY_TREE_STAR,0");
    if (step >= 6) CHECK(strategy_and_decision == "MULTI_BINARY_TREE_STAR,,0");
    CHECK(tail.find("allreduce-throughput.window_mean=") != std::string::npos);
    CHECK(tail.find(" throughput.window_mean=") != std::string::npos);
    ++step;
  }
  CHECK(step == 10);
  // The summary CSV is still one row per task.
  CHECK(r.output.find("policy-switch.csv (1 rows), policy-switch.steps.csv") != std::string::npos);
}

TEST_CASE("list policies: every policy and monitor with its summary") {
  const Result r = run("list policies");
  CHECK(r.code == 0);
  for (const char* name : {"switch-strategy", "scale-batch", "resize", "resize-schedule",
                           "provision", "throughput", "allreduce-throughput"})
    CHECK_MESSAGE(r.output.find(name) != std::string::npos, name);
}
