// Bad input, table-driven, through the simctl binary: every row is one input a user can write, and
// simctl must answer it with exit code 2, exactly one line naming where the problem is and what
// was expected, and no output files — at `validate` and at `run` alike (a row marked run_only
// needs options only `run` has). Each table holds one class of defect of issue 21; a row names
// the example that failed before its fix.

#include <doctest/doctest.h>
#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/run_command.h"

namespace fs = std::filesystem;

namespace {

const fs::path kRoot = ADAPTSIM_SOURCE_DIR;

using Result = adaptsim::testing::CommandResult;

Result run_simctl(const std::string& args) {
  return adaptsim::testing::run_command(std::string(SIMCTL_PATH) + " " + args);
}

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (std::size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
  return s;
}

// Small valid scenarios that rows break. {root} is the source tree, {dir} the row's scratch folder.
const std::string kAllreduce =
    "name: small\n"
    "topology:\n"
    "  file: {root}/topologies/cloud-vms.yaml\n"
    "  params: {servers: 2}\n"
    "workload:\n"
    "  kind: allreduce\n"
    "  strategies: [STAR]\n"
    "  min_bytes: 1KiB\n"
    "  max_bytes: 64KiB\n";
const std::string kTraining =
    "name: small\n"
    "topology:\n"
    "  file: {root}/topologies/cloud-vms.yaml\n"
    "  params: {servers: 2}\n"
    "workload:\n"
    "  kind: training\n"
    "  models: [mobilenetv2]\n"
    "  batch_per_gpu: 8\n"
    "  device: {root}/traces/devices/k80-half.yaml\n"
    "  warmup_steps: 0\n"
    "  steps: 1\n"
    "  systems:\n"
    "    - {kind: ideal}\n";

struct Case {
  std::string name;
  // simctl arguments after the subcommand; "{dir}/s.yaml" is `scenario` written out.
  std::string args;
  std::string scenario;                                    // empty: none written
  std::vector<std::pair<std::string, std::string>> files;  // more files for the scratch folder
  std::string expected;  // must appear in the one error line ({root}, {dir} substituted)
  bool run_only = false;
};

// Runs every row with `validate` (unless run_only) and `run`.
void check_cases(const std::string& table, const std::vector<Case>& cases) {
  int index = 0;
  for (const Case& c : cases) {
    const fs::path dir =
        fs::temp_directory_path() / ("simctl_bad_input_" + table) / std::to_string(index++);
    fs::remove_all(dir);
    fs::create_directories(dir);
    const auto expand = [&](const std::string& s) {
      return replace_all(replace_all(s, "{root}", kRoot.string()), "{dir}", dir.string());
    };
    if (!c.scenario.empty()) std::ofstream(dir / "s.yaml") << expand(c.scenario);
    for (const auto& [name, text] : c.files)
      std::ofstream(dir / name) << expand(text);
    std::vector<std::string> commands;
    if (!c.run_only) commands.push_back("validate " + expand(c.args));
    commands.push_back("run --no-progress " + expand(c.args) + " -o " + (dir / "out").string());
    for (const std::string& command : commands) {
      INFO("case: " << c.name);
      INFO("simctl " << command);
      const Result r = run_simctl(command);
      INFO("output: " << r.output);
      CHECK(r.code == 2);
      CHECK(r.output.find(expand(c.expected)) != std::string::npos);
      CHECK(std::count(r.output.begin(), r.output.end(), '\n') == 1);
      CHECK((!fs::exists(dir / "out") || fs::is_empty(dir / "out")));
    }
  }
}

// The scenario with `from` replaced by `to` (which must be there once).
std::string with(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  REQUIRE_MESSAGE(at != std::string::npos, from);
  return text.replace(at, from.size(), to);
}

}  // namespace

TEST_CASE("bad input: a file that is not a regular file or is too large is one error (item 4)") {
  const std::string big = "{dir}/big.yaml";
  {
    // 65 MiB, sparse: over the 64 MiB limit without writing it.
    const fs::path dir = fs::temp_directory_path() / "simctl_bad_input_files_big";
    fs::create_directories(dir);
    fs::resize_file((std::ofstream(dir / "big.yaml"), dir / "big.yaml"), 65ull << 20);
  }
  const std::string big_path =
      (fs::temp_directory_path() / "simctl_bad_input_files_big" / "big.yaml").string();
  check_cases(
      "files",
      {
          {"scenario is a character device",
           "/dev/zero",
           "",
           {},
           "/dev/zero: is a character device, not a regular file"},
          {"scenario is a directory", "{dir}", "", {}, "{dir}: is a directory, not a regular file"},
          {"scenario is too large",
           big_path,
           "",
           {},
           big_path + ": larger than 64 MiB, the limit for an input file"},
          {"topology.file is a character device",
           "{dir}/s.yaml",
           with(kAllreduce, "{root}/topologies/cloud-vms.yaml", "/dev/zero"),
           {},
           "s.yaml:3: key 'topology.file': topology file /dev/zero: is a character "
           "device, not a regular file"},
          {"calibration: is a character device",
           "{dir}/s.yaml",
           "calibration: /dev/zero\n" + kAllreduce,
           {},
           "s.yaml:1: key 'calibration': calibration profile /dev/zero: is a character "
           "device"},
          {"--calibration is a character device",
           "{dir}/s.yaml --calibration /dev/zero",
           kAllreduce,
           {},
           "/dev/zero: is a character device, not a regular file"},
          {"workload.device is a character device",
           "{dir}/s.yaml",
           with(kTraining, "{root}/traces/devices/k80-half.yaml", "/dev/zero"),
           {},
           "s.yaml:9: key 'workload.device': /dev/zero: is a character device"},
          {"workload.device is a FIFO-like directory",
           "{dir}/s.yaml",
           with(kTraining, "{root}/traces/devices/k80-half.yaml", "{dir}"),
           {},
           "key 'workload.device': {dir}: is a directory, not a regular file"},
      });
  (void)big;
}

TEST_CASE("bad input: nothing in a YAML file is silently ignored (item 6)") {
  check_cases(
      "yaml",
      {
          {"a duplicated key",
           "{dir}/s.yaml",
           with(kAllreduce, "  max_bytes: 64KiB\n", "  max_bytes: 64KiB\n  max_bytes: 1GiB\n"),
           {},
           "s.yaml:10: key 'workload.max_bytes' is given twice in one mapping (first at line 9)"},
          {"a duplicated key in a flow mapping",
           "{dir}/s.yaml",
           with(kAllreduce, "{servers: 2}", "{servers: 2, servers: 4}"),
           {},
           "s.yaml:4: key 'topology.params.servers' is given twice"},
          {"a duplicated key in a --set value",
           "{dir}/s.yaml --set 'topology.params={servers: 2, servers: 3}'",
           kAllreduce,
           {},
           "key 'topology.params.servers' is given twice"},
          {"a second YAML document",
           "{dir}/s.yaml",
           kAllreduce + "---\nname: other\n",
           {},
           "s.yaml:10: a second YAML document; expected one document per file"},
          {"a duplicated key in the topology file",
           "{dir}/s.yaml",
           with(kAllreduce, "{root}/topologies/cloud-vms.yaml", "{dir}/t.yaml"),
           {{"t.yaml",
             "name: t\nservers: 2\nservers: 3\nserver: {nic: {bandwidth: 1Gbps, "
             "latency: 1us}, pcie: {bandwidth: 1GB/s, latency: 1us}}\nfabric: {kind: "
             "switch}\n"}},
           "t.yaml:3: key 'servers' is given twice"},
          {"a duplicated key in the device profile",
           "{dir}/s.yaml",
           with(kTraining, "{root}/traces/devices/k80-half.yaml", "{dir}/d.yaml"),
           {{"d.yaml", "name: a\nname: b\n"}},
           "d.yaml:2: key 'name' is given twice"},
          {"aliases that expand exponentially",
           "{dir}/s.yaml",
           kAllreduce + "description: &a [x, x, x, x, x, x, x, x]\n"
                        "x1: &b [*a, *a, *a, *a, *a, *a, *a, *a]\n"
                        "x2: &c [*b, *b, *b, *b, *b, *b, *b, *b]\n"
                        "x3: &d [*c, *c, *c, *c, *c, *c, *c, *c]\n"
                        "x4: &e [*d, *d, *d, *d, *d, *d, *d, *d]\n"
                        "x5: &f [*e, *e, *e, *e, *e, *e, *e, *e]\n",
           {},
           "anchors and aliases expand to more values than the file could hold"},
      });
}

TEST_CASE("bad input: a value given in the scenario is blamed on the scenario (item 8)") {
  // Every parameter of every shipped topology, given a value no key accepts (a list where a
  // scalar or a mapping is expected), is reported at the scenario's line, not the topology's.
  std::vector<Case> cases;
  for (const auto& entry : fs::directory_iterator(kRoot / "topologies")) {
    std::ifstream in(entry.path());
    std::string line;
    bool in_params = false;
    while (std::getline(in, line)) {
      if (line.rfind("params:", 0) == 0) {
        in_params = true;
        continue;
      }
      if (!in_params) continue;
      if (!line.empty() && line[0] != ' ' && line[0] != '#') break;
      if (line.size() < 3 || line[2] == ' ' || line[2] == '#') continue;
      const std::string name = line.substr(2, line.find(':') - 2);
      cases.push_back({entry.path().filename().string() + " " + name,
                       "{dir}/s.yaml",
                       "name: small\ntopology:\n  file: " + entry.path().string() +
                           "\n  params:\n    " + name +
                           ": [1, 2]\nworkload: {kind: allreduce, strategies: [STAR], "
                           "min_bytes: 1KiB, max_bytes: 1KiB}\n",
                       {},
                       "{dir}/s.yaml:5: key '"});
    }
  }
  CHECK(cases.size() >= 20);  // 22 parameters across the six shipped topologies (2026-11)
  // Inside a mapping given as a parameter's value: the value's own line in the scenario.
  const std::string nic =
      "name: small\ntopology:\n  file: {root}/topologies/cloud-vms.yaml\n  params:\n"
      "    nic_bandwidth: VALUE\nworkload: {kind: allreduce, strategies: [STAR], min_bytes: 1KiB, "
      "max_bytes: 1KiB}\n";
  cases.push_back({"a list inside a parameter's mapping",
                   "{dir}/s.yaml",
                   with(nic, "VALUE", "{value: [1], source: x}"),
                   {},
                   "{dir}/s.yaml:5: key 'server.nic.bandwidth.value': expected a string"});
  cases.push_back({"an unknown key inside a parameter's mapping",
                   "{dir}/s.yaml",
                   with(nic, "VALUE", "{value: 1Gbps, sorce: x}"),
                   {},
                   "{dir}/s.yaml:5: unknown key 'server.nic.bandwidth.sorce'"});
  cases.push_back({"an unknown key inside a --set parameter's mapping",
                   "{dir}/s.yaml --set 'topology.params.nic_bandwidth={value: 1Gbps, sorce: x}'",
                   with(nic, "VALUE", "1Gbps"),
                   {},
                   "--set topology.params.nic_bandwidth={value: 1Gbps, sorce: x}: unknown key "
                   "'server.nic.bandwidth.sorce'"});
  check_cases("params", cases);
}

TEST_CASE("bad input: a Horovod cycle below its stated minimum (item 1)") {
  // cycle_time 0 on one worker recursed between the cycle's start and its request handler until
  // the stack was gone (SIGSEGV at run); 1e-30s rounds to 0 ns; 1 ns took hours.
  const std::string one_server = with(kTraining, "{servers: 2}", "{servers: 1}");
  const std::string horovod = with(one_server, "{kind: ideal}", "{kind: horovod, cycle_time: 0s}");
  check_cases("cycle",
              {
                  {"horovod, cycle_time 0s",
                   "{dir}/s.yaml",
                   horovod,
                   {},
                   "s.yaml:13: key 'workload.systems[0].cycle_time': expected at least "
                   "100 us"},
                  {"horovod-nccl, cycle_time 1e-30s",
                   "{dir}/s.yaml",
                   with(one_server, "{kind: ideal}", "{kind: horovod-nccl, cycle_time: 1e-30s}"),
                   {},
                   "key 'workload.systems[0].cycle_time': expected at least 100 us"},
                  {"horovod, cycle_time 1ns via --set",
                   "{dir}/s.yaml --set 'workload.systems=[{kind: horovod, cycle_time: "
                   "1ns}]'",
                   one_server,
                   {},
                   "expected at least 100 us"},
                  {"horovod, cycle_time 99us",
                   "{dir}/s.yaml",
                   with(horovod, "cycle_time: 0s", "cycle_time: 99us"),
                   {},
                   "expected at least 100 us (a tenth of the shortest cycle Horovod's "
                   "autotuner tries; a zero cycle is a busy loop), got 99 us"},
              });
}

TEST_CASE(
    "bad input: Open MPI's and NCCL's models, a horovod system's mpi and an all-reduce sweep's "
    "series (issue 17)") {
  const std::string horovod = with(kTraining, "{kind: ideal}", "{kind: horovod, mpi: MPI}");
  check_cases(
      "mpi", {
                 {"an unknown Open MPI release",
                  "{dir}/s.yaml",
                  with(horovod, "MPI", "{version: 5.0.3}"),
                  {},
                  "s.yaml:13: key 'workload.systems[0].mpi.version': expected an Open MPI "
                  "release from 2.0 to 4.1 (\"4.0.0\", \"4.1\"), got \"5.0.3\""},
                 {"a malformed release",
                  "{dir}/s.yaml",
                  with(horovod, "MPI", "{version: four}"),
                  {},
                  "key 'workload.systems[0].mpi.version': expected an Open MPI release from "
                  "2.0 to 4.1"},
                 {"an unknown algorithm",
                  "{dir}/s.yaml",
                  with(horovod, "MPI", "{algorithm: tree}"),
                  {},
                  "key 'workload.systems[0].mpi.algorithm'"},
                 {"a segment size without the segmented ring",
                  "{dir}/s.yaml",
                  with(horovod, "MPI", "{algorithm: ring, segment_size: 1MiB}"),
                  {},
                  "key 'workload.systems[0].mpi.segment_size': applies to algorithm: "
                  "segmented_ring only"},
                 {"an eager limit of 0",
                  "{dir}/s.yaml",
                  with(horovod, "MPI", "{eager_limit: 0B}"),
                  {},
                  "key 'workload.systems[0].mpi.eager_limit': must be > 0"},
                 {"an unknown way to run MPI live",
                  "{dir}/s.yaml",
                  with(horovod, "MPI", "{live: real}"),
                  {},
                  "key 'workload.systems[0].mpi.live'"},
                 {"the MPI library without ob1's rendezvous",
                  "{dir}/s.yaml",
                  with(horovod, "MPI", "{live: library, rendezvous: false}"),
                  {},
                  "key 'workload.systems[0].mpi.rendezvous': false is a model's ablation: the "
                  "MPI library (live: library) always uses ob1's rendezvous above its eager "
                  "limit"},
                 {"the MPI library with the model's late matching",
                  "{dir}/s.yaml",
                  with(horovod, "MPI", "{live: library, match_in_receive: false}"),
                  {},
                  "key 'workload.systems[0].mpi.match_in_receive': false is a model's ablation: "
                  "the MPI library (live: library) matches inside its receive call"},
                 {"the negotiation's trees not a boolean",
                  "{dir}/s.yaml",
                  with(horovod, "MPI", "{negotiation_trees: often}"),
                  {},
                  "key 'workload.systems[0].mpi.negotiation_trees'"},
                 {"the MPI library without the negotiation's trees",
                  "{dir}/s.yaml",
                  with(horovod, "MPI", "{live: library, negotiation_trees: false}"),
                  {},
                  "key 'workload.systems[0].mpi.negotiation_trees': false is a model's "
                  "ablation: the MPI library (live: library) runs its own gather and broadcast"},
                 {"the MPI library live on listed hosts",
                  "--live {dir}/s.yaml",
                  with(horovod, "MPI", "{version: 4.1.4, live: library}") +
                      "live: {placement: hosts, hosts: [\"127.0.0.1:7100\", \"127.0.0.1:7101\"]}\n",
                  {},
                  "key 'workload.systems[0].mpi': live: library runs the ranks under mpirun, "
                  "started here or on a testbed: expected live.placement local or testbed (it "
                  "is hosts)",
                  true},
                 {"an unknown key in mpi",
                  "{dir}/s.yaml",
                  with(horovod, "MPI", "{rendevous: false}"),
                  {},
                  "unknown key 'workload.systems[0].mpi.rendevous'"},
                 {"an all-reduce sweep's Open MPI series listed twice",
                  "{dir}/s.yaml",
                  with(kAllreduce, "strategies: [STAR]",
                       "strategies: [STAR]\n  mpi: [{version: 4.1.4}, {version: \"4.1.4\"}]"),
                  {},
                  "key 'workload.mpi[1]': Open MPI series OMPI-4.1.4-fixed is listed twice; "
                  "expected each once"},
                 {"an all-reduce sweep's empty mpi list",
                  "{dir}/s.yaml",
                  with(kAllreduce, "strategies: [STAR]", "strategies: [STAR]\n  mpi: []"),
                  {},
                  "key 'workload.mpi': expected at least one entry"},
                 {"nccl_nvls without NCCL's series",
                  "{dir}/s.yaml",
                  with(kAllreduce, "strategies: [STAR]", "strategies: [STAR]\n  nccl_nvls: false"),
                  {},
                  "key 'workload.nccl_nvls': applies with nccl: true only"},
                 {"an all-reduce sweep's nccl that is not a boolean",
                  "{dir}/s.yaml",
                  with(kAllreduce, "strategies: [STAR]", "strategies: [STAR]\n  nccl: sometimes"),
                  {},
                  "key 'workload.nccl'"},
                 {"mpi on a system that does not use MPI",
                  "{dir}/s.yaml",
                  with(kTraining, "{kind: ideal}", "{kind: kungfu, mpi: {version: 4.0.0}}"),
                  {},
                  "key 'workload.systems[0].mpi': applies to kind: horovod only"},
                 {"an unknown NCCL net transport",
                  "{dir}/s.yaml",
                  with(kTraining, "{kind: ideal}", "{kind: nccl, nccl_net: {transport: tcp}}"),
                  {},
                  "s.yaml:13: key 'workload.systems[0].nccl_net.transport'"},
                 {"NCCL's interfaces with IB verbs",
                  "{dir}/s.yaml",
                  with(kTraining, "{kind: ideal}",
                       "{kind: horovod-nccl, nccl_net: {transport: ib, interfaces: 2}}"),
                  {},
                  "key 'workload.systems[0].nccl_net.interfaces': applies to transport: socket "
                  "only"},
                 {"no interface for NCCL's sockets",
                  "{dir}/s.yaml",
                  with(kTraining, "{kind: ideal}",
                       "{kind: nccl, nccl_net: {transport: socket, interfaces: 0}}"),
                  {},
                  "key 'workload.systems[0].nccl_net.interfaces'"},
                 {"nccl_net on a system whose NCCL stays inside a server",
                  "{dir}/s.yaml",
                  with(kTraining, "{kind: ideal}", "{kind: hierarchical, nccl_net: {}}"),
                  {},
                  "key 'workload.systems[0].nccl_net': applies to kinds nccl and horovod-nccl "
                  "only (hierarchical's NCCL stays inside a server)"},
                 {"an all-reduce sweep's nccl_net without its NCCL series",
                  "{dir}/s.yaml",
                  with(kAllreduce, "strategies: [STAR]",
                       "strategies: [STAR]\n  nccl_net: {transport: socket}"),
                  {},
                  "key 'workload.nccl_net': applies with nccl: true only"},
                 {"a per-connection limit that is not a bandwidth",
                  "{root}/scenarios/fig10.yaml --set topology.params.nic_stream_bandwidth=fast",
                  "",
                  {},
                  "--set topology.params.nic_stream_bandwidth=fast: key "
                  "'server.nic.stream_bandwidth': expected a bandwidth"},
             });
}

TEST_CASE("bad input: chunks whose count would take memory without bound (item 3)") {
  check_cases(
      "chunks",
      {
          {"allreduce: 1 B chunks of 1 GiB",
           "{dir}/s.yaml",
           with(with(kAllreduce, "max_bytes: 64KiB", "max_bytes: 1GiB"), "strategies: [STAR]",
                "strategies: [STAR]\n  chunk_size: 1B"),
           {},
           "key 'workload.chunk_size': a chunk size of 1 B splits max_bytes (1 GiB) into "
           "1073741824 chunks; expected at most 16384"},
          {"allreduce: 64 KiB chunks of 1 GiB + 1 B",
           "{dir}/s.yaml",
           with(with(kAllreduce, "max_bytes: 64KiB", "max_bytes: 1073741825B"),
                "strategies: [STAR]", "strategies: [BINARY_TREE_STAR]\n  chunk_size: 64KiB"),
           {},
           "into 16385 chunks; expected at most 16384"},
          {"training: kungfu with 1 B chunks",
           "{dir}/s.yaml",
           with(kTraining, "{kind: ideal}", "{kind: kungfu, chunk_size: 1B}"),
           {},
           "key 'workload.systems[0].chunk_size': a chunk size of 1 B splits mobilenetv2's "
           "gradients"},
          {"training: hierarchical with 64 B chunks",
           "{dir}/s.yaml",
           with(kTraining, "{kind: ideal}", "{kind: hierarchical, chunk_size: 64B}"),
           {},
           "chunks a step; expected at most 16384"},
      });
}

TEST_CASE("bad input: every quantity within what integer nanoseconds hold (item 5)") {
  std::string profile;
  {
    std::ifstream in(kRoot / "traces/calibration/loopback-tcp-4procs.yaml");
    std::stringstream ss;
    ss << in.rdbuf();
    profile = with(ss.str(), "bandwidth: 2.53221GB/s", "bandwidth: 1e-30GB/s");
  }
  std::string device;
  {
    std::ifstream in(kRoot / "traces/devices/k80-half.yaml");
    std::stringstream ss;
    ss << in.rdbuf();
    device = ss.str();
  }
  const std::string own_device =
      with(kTraining, "{root}/traces/devices/k80-half.yaml", "{dir}/d.yaml");
  check_cases(
      "time",
      {
          {"nic_bandwidth 1e-30Gbps",
           "{dir}/s.yaml",
           with(kAllreduce, "{servers: 2}", "{servers: 2, nic_bandwidth: 1e-30Gbps}"),
           {},
           "s.yaml:4: key 'server.nic.bandwidth': expected a bandwidth from 1 Kbit/s to 1 PB/s"},
          {"nic_latency 1e30s (a Boost negative-weight error at validate)",
           "{dir}/s.yaml",
           with(kAllreduce, "{servers: 2}", "{servers: 2, nic_latency: 1e30s}"),
           {},
           "s.yaml:4: key 'server.nic.latency': expected a duration of at most 1e6 s"},
          {"nic_loss 20 % (the loss model holds for small rates)",
           "{dir}/s.yaml",
           with(kAllreduce, "{servers: 2}", "{servers: 2, nic_loss: 20%}"),
           {},
           "s.yaml:4: key 'server.nic.loss': expected a packet loss rate from 0% to 10%"},
          {"per_message_overhead 1e308s",
           "{dir}/s.yaml",
           kAllreduce + "  per_message_overhead: 1e308s\n",
           {},
           "s.yaml:10: key 'workload.per_message_overhead': expected a duration of at most 1e6 s"},
          {"rto_min 0s (the tail-loss timers)",
           "{dir}/s.yaml",
           kAllreduce + "  rto_min: 0s\n",
           {},
           "s.yaml:10: key 'workload.rto_min': expected a duration > 0 (Linux's default 200ms)"},
          {"fold_servers not a boolean",
           "{dir}/s.yaml",
           kAllreduce + "  fold_servers: sometimes\n",
           {},
           "s.yaml:10: key 'workload.fold_servers'"},
          {"loss_timers not a boolean",
           "{dir}/s.yaml",
           kAllreduce + "  loss_timers: maybe\n",
           {},
           "s.yaml:10: key 'workload.loss_timers'"},
          {"loss_rates: a file that is not there",
           "{dir}/s.yaml",
           kAllreduce + "  loss_rates: nope.csv\n",
           {},
           "s.yaml:10: key 'workload.loss_rates': {dir}/nope.csv: cannot read the file"},
          {"loss_rates: a row of another width",
           "{dir}/s.yaml",
           kAllreduce + "  loss_rates: l.csv\n",
           {{"l.csv", "nic_loss,drop_probability,MBps\n0%,0,119\n1%,0.02\n"}},
           "s.yaml:10: key 'workload.loss_rates': {dir}/l.csv:3: has 2 cells; expected 3"},
          {"a size of 2 PiB",
           "{dir}/s.yaml",
           with(kAllreduce, "64KiB", "2048TiB"),
           {},
           "s.yaml:9: key 'workload.max_bytes': expected a size of at most 1 PiB"},
          {"a calibration profile bandwidth of 1e-30GB/s",
           "{dir}/s.yaml",
           "calibration: {dir}/p.yaml\n" + kAllreduce,
           {{"p.yaml", profile}},
           "p.yaml:42: key 'fits[0].bandwidth': expected a bandwidth from 1 Kbit/s to 1 PB/s"},
          {"a device rate of 1e-9 img/s",
           "{dir}/s.yaml",
           own_device,
           {{"d.yaml", with(device, "rate: 135 img/s", "rate: 1e-9 img/s")}},
           "d.yaml:30: key 'throughput[2].rate': gives a step of 6.4e+10 s at batch 64; expected a "
           "step time from 1 us to 1 h"},
          {"a device rate of 1e300 img/s (inf and nan in the CSV)",
           "{dir}/s.yaml",
           own_device,
           {{"d.yaml", with(device, "rate: 135 img/s", "rate: 1e300 img/s")}},
           "d.yaml:30: key 'throughput[2].rate': expected a rate of at most 1e21 per second"},
          {"a device rate of 1e20 img/s: a step below 1 us",
           "{dir}/s.yaml",
           own_device,
           {{"d.yaml", with(device, "rate: 135 img/s", "rate: 1e20 img/s")}},
           "expected a step time from 1 us to 1 h"},
          {"a compute step beyond 1 h at the workload's batch",
           "{dir}/s.yaml",
           with(kTraining, "batch_per_gpu: 8", "batch_per_gpu: 1048576"),
           {},
           "s.yaml:8: key 'workload.batch_per_gpu': device profile k80-half.yaml gives "
           "mobilenetv2 a compute step of"},
          {"compute_scale 1e-300",
           "{dir}/s.yaml",
           kTraining + "  compute_scale: 1e-300\n",
           {},
           "key 'workload.compute_scale': device profile k80-half.yaml gives mobilenetv2 a "
           "compute step of"},
          {"a buffer whose message outlasts 1e6 s on the slowest link",
           "{dir}/s.yaml",
           with(with(kAllreduce, "{servers: 2}", "{servers: 2, nic_bandwidth: 1Kbps}"), "64KiB",
                "1GiB"),
           {},
           "key 'workload.max_bytes': 1 GiB take 8.59e+06 s over the topology's slowest link "
           "(1 Kbit/s); expected a message to take at most 1e6 s"},
      });
}

TEST_CASE("bad input: no run writes nonsense or rows no one can tell apart (item 6)") {
  check_cases(
      "nonsense",
      {
          {"step_time_cv NaN%",
           "{dir}/s.yaml",
           with(kTraining, "{root}/traces/devices/k80-half.yaml", "{dir}/d.yaml"),
           {{"d.yaml",
             "name: d\ndescription: x\ndefault_precision: fp32\nmemory: {value: 1GiB, "
             "source: x}\nmemory_bandwidth: {value: 1GB/s, source: x}\nstep_time_cv: "
             "{value: NaN%, source: x}\nthroughput:\n  - {model: mobilenetv2, "
             "precision: fp32, batch: 8, rate: 100 img/s, source: x}\n"}},
           "d.yaml:6: key 'step_time_cv.value': expected a percentage such as 2%, got \"NaN%\""},
          {"compute_scale .nan",
           "{dir}/s.yaml",
           kTraining + "  compute_scale: .nan\n",
           {},
           "key 'workload.compute_scale': expected a finite number, got \".nan\""},
          {"learn.lr 0",
           "{dir}/s.yaml",
           with(with(kTraining, "mobilenetv2", "fashion-mlp"), "k80-half", "cpu-core") +
               "  learn: {lr: 0}\n",
           {},
           "s.yaml:14: key 'workload.learn.lr': must be a finite value > 0"},
          {"learn.dynamics missing",
           "{dir}/s.yaml",
           with(with(kTraining, "mobilenetv2", "fashion-mlp"), "k80-half", "cpu-core") +
               "  learn: {lr: 0.05, dynamics: nowhere.yaml}\n",
           {},
           "s.yaml:14: key 'workload.learn.dynamics': "},
          {"learn.dynamics fitted with another learning rate",
           "{dir}/s.yaml",
           with(with(kTraining, "mobilenetv2", "fashion-mlp"), "k80-half", "cpu-core") +
               "  learn: {lr: 0.1, base_batch: 128, dynamics: "
               "{root}/traces/dynamics/fashion-mlp.yaml}\n",
           {},
           "fashion-mlp.yaml was fitted on runs with lr 0.05, base_batch 128, momentum 0.9; this "
           "learn: has lr 0.1, base_batch 128, momentum 0.9"},
          {"compute_cores beside other elastic.server_cores",
           "{dir}/s.yaml",
           with(kTraining, "{kind: ideal}", "{kind: kungfu}") +
               "  compute_cores: 2\n  elastic: {mechanism: kungfu, server_cores: 4}\n",
           {},
           "key 'workload.compute_cores': is 2 and elastic.server_cores 4: a server's cores are "
           "one "
           "number"},
          {"learn beside a model that does not learn",
           "{dir}/s.yaml",
           kTraining + "  learn: {lr: 0.05}\n",
           {},
           "key 'workload.learn': trains the fashion-mlp model for real; expected models: "
           "[fashion-mlp]"},
          {"tcp_windows without tcp sharing",
           "{dir}/s.yaml",
           kTraining + "  tcp_windows: {}\n",
           {},
           "s.yaml:14: key 'workload.tcp_windows': needs sharing: tcp"},
          {"tcp_windows with a misspelt key",
           "{dir}/s.yaml",
           kTraining + "  sharing: tcp\n  tcp_windows: {hystar: false}\n",
           {},
           "s.yaml:15: unknown key 'workload.tcp_windows.hystar' (did you mean 'hystart'?)"},
          {"tcp_windows.restart_after_idle not a boolean",
           "{dir}/s.yaml",
           kTraining + "  sharing: tcp\n  tcp_windows: {restart_after_idle: 0.5}\n",
           {},
           "key 'workload.tcp_windows.restart_after_idle': expected true or false"},
          {"tcp_windows.queue_from_windows not a boolean",
           "{dir}/s.yaml",
           kTraining + "  sharing: tcp\n  tcp_windows: {queue_from_windows: fluid}\n",
           {},
           "key 'workload.tcp_windows.queue_from_windows': expected true or false"},
          {"tcp_windows not a mapping",
           "{dir}/s.yaml",
           kTraining + "  sharing: tcp\n  tcp_windows: yes\n",
           {},
           "key 'workload.tcp_windows': expected a mapping of keys"},
          {"share_cv .inf",
           "{dir}/s.yaml",
           kTraining + "  sharing: tcp\n  share_cv: .inf\n",
           {},
           "key 'workload.share_cv': expected a finite number"},
          {"two systems with the same label",
           "{dir}/s.yaml",
           with(kTraining, "{kind: ideal}", "{kind: ideal}\n    - {label: ideal, kind: kungfu}"),
           {},
           "s.yaml:14: key 'workload.systems[1].label': systems[0] has the label \"ideal\" too"},
          {"two unlabelled systems of one kind",
           "{dir}/s.yaml",
           with(kTraining, "{kind: ideal}", "{kind: kungfu}\n    - {kind: kungfu, strategy: STAR}"),
           {},
           "key 'workload.systems[1].label': systems[0] has the label \"kungfu\" too"},
          {"a model listed twice",
           "{dir}/s.yaml",
           with(kTraining, "[mobilenetv2]", "[mobilenetv2, mobilenetv2]"),
           {},
           "key 'workload.models': model \"mobilenetv2\" is listed twice"},
          {"a strategy listed twice",
           "{dir}/s.yaml",
           with(kAllreduce, "[STAR]", "[STAR, STAR]"),
           {},
           "key 'workload.strategies': strategy STAR is listed twice"},
          {"a sweep value listed twice",
           "{dir}/s.yaml",
           kAllreduce + "sweep:\n  topology.params.servers: [2, 4, 2]\n",
           {},
           "key 'sweep.topology.params.servers': value 2 is listed twice"},
          {"--seed -1",
           "{dir}/s.yaml --seed -1",
           kAllreduce,
           {},
           "--seed -1: expected a whole number from 0 to 9223372036854775807",
           true},
          {"--seed 1e23",
           "{dir}/s.yaml --seed 1e23",
           kAllreduce,
           {},
           "--seed 1e23: expected a whole number",
           true},
          {"--seed 9223372036854775808",
           "{dir}/s.yaml --seed 9223372036854775808",
           kAllreduce,
           {},
           "expected a whole number from 0 to 9223372036854775807",
           true},
          {"name \"\"",
           "{dir}/s.yaml",
           with(kAllreduce, "name: small", "name: \"\""),
           {},
           "s.yaml:1: key 'name': expected 1 to 200 letters, digits"},
          {"name \".\"",
           "{dir}/s.yaml",
           with(kAllreduce, "name: small", "name: ."),
           {},
           "key 'name': expected 1 to 200 letters, digits, '-', '_' and '.', starting with a "
           "letter or digit"},
          {"name \".hidden\"",
           "{dir}/s.yaml",
           with(kAllreduce, "name: small", "name: .hidden"),
           {},
           "key 'name': expected 1 to 200"},
          {"output.csv \"\"",
           "{dir}/s.yaml",
           kAllreduce + "output: {csv: \"\"}\n",
           {},
           "key 'output.csv': expected 1 to 200 letters"},
          {"output.csv \".\" (\"cannot rename the temporary file: Success\")",
           "{dir}/s.yaml",
           kAllreduce + "output: {csv: .}\n",
           {},
           "key 'output.csv': expected 1 to 200 letters"},
          {"output.csv the manifest's name",
           "{dir}/s.yaml",
           kAllreduce + "output: {csv: small.manifest.json}\n",
           {},
           "key 'output.csv': expected a name other than the manifest's"},
          {"float64 sizes below one element (rows of size 0)",
           "{dir}/s.yaml",
           with(with(kAllreduce, "min_bytes: 1KiB", "min_bytes: 1B\n  dtype: float64"), "64KiB",
                "4B"),
           {},
           "key 'workload.max_bytes': no size from min_bytes to max_bytes holds a whole float64 "
           "element (8 B)"},
          {"a description that is not UTF-8",
           "{dir}/s.yaml",
           kAllreduce + "description: \"\xff\xfe\"\n",
           {},
           "s.yaml:10: expected UTF-8 text, found a byte that is not"},
      });
}

TEST_CASE("bad input: an over-long name is refused before anything is written (item 7)") {
  // A 5,000-character name passed validate; run wrote the CSV, failed on the manifest (its name
  // too long for the file system) and left the CSV behind.
  const std::string long_name(5000, 'a');
  check_cases("long_name", {
                               {"a 5,000-character name",
                                "{dir}/s.yaml",
                                with(kAllreduce, "name: small", "name: " + long_name),
                                {},
                                "key 'name': expected 1 to 200 letters"},
                               {"a 201-character CSV name",
                                "{dir}/s.yaml",
                                kAllreduce + "output: {csv: " + std::string(201, 'c') + "}\n",
                                {},
                                "(201 characters)"},
                           });
}

TEST_CASE("a run whose last file cannot be written leaves none of its files (item 7)") {
  // The manifest's name is taken by a folder, so renaming the manifest into place fails after
  // the CSV is written: before, the CSV stayed behind; now the group is all or none.
  const fs::path dir = fs::temp_directory_path() / "simctl_bad_input_partial";
  fs::remove_all(dir);
  fs::create_directories(dir / "out" / "small.manifest.json");
  std::ofstream(dir / "s.yaml") << replace_all(kAllreduce, "{root}", kRoot.string());
  const Result r = run_simctl("run --no-progress " + (dir / "s.yaml").string() + " -o " +
                              (dir / "out").string());
  INFO(r.output);
  CHECK(r.code == 1);
  CHECK(r.output.find("small.manifest.json: cannot rename the temporary file") !=
        std::string::npos);
  CHECK(std::count(r.output.begin(), r.output.end(), '\n') == 1);
  CHECK_FALSE(fs::exists(dir / "out" / "small.csv"));
  // Nothing else either: no temporaries.
  std::size_t entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir / "out"))
    ++entries;
  CHECK(entries == 1);  // the folder that was in the way
}

TEST_CASE(
    "bad input: a command-line error or a multi-line value is one line too (found by the mutation "
    "loop)") {
  // CLI11's own report was two lines ("Could not convert: --seed = x" and "Run with --help for
  // more information.").
  check_cases("cli", {
                         {"--seed x",
                          "{dir}/s.yaml --seed x",
                          kAllreduce,
                          {},
                          "--seed x: expected a whole number",
                          true},
                         {"--threads x",
                          "{dir}/s.yaml --threads x",
                          kAllreduce,
                          {},
                          "--threads: Value x not in range 0 to 4096",
                          true},
                         {"an unknown option",
                          "{dir}/s.yaml --frobnicate",
                          kAllreduce,
                          {},
                          "simctl --help lists the options"},
                         {"no scenario", "", "", {}, "scenario is required"},
                         // A multi-line value quoted in a message: its line breaks are escaped.
                         {"a block scalar where a name is expected",
                          "{dir}/s.yaml",
                          with(kAllreduce, "name: small", "name: |\n  a\n  b"),
                          {},
                          "key 'name': expected 1 to 200 letters, digits, '-', '_' and '.', "
                          "starting with a letter or digit (it names output files), got "
                          "\"a\\nb\\n\""},
                         {"a list item where an integer is expected",
                          "{dir}/s.yaml",
                          kAllreduce + "  step_factor: \"4\\n- x\"\n",
                          {},
                          "key 'workload.step_factor': expected an integer, got \"4\\n- x\""},
                     });
}

TEST_CASE("all-reduce sizes are whole elements, so no two rows are alike (item 6)") {
  // float64 from 1 B to 64 B by 2: 1, 2 and 4 B hold no element (three rows of size 0 before);
  // 8, 16, 32, 64 B remain.
  const fs::path dir = fs::temp_directory_path() / "simctl_bad_input_whole";
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "s.yaml") << replace_all(
      with(with(kAllreduce, "min_bytes: 1KiB", "min_bytes: 1B\n  dtype: float64\n  step_factor: 2"),
           "64KiB", "64B"),
      "{root}", kRoot.string());
  const Result r = run_simctl("run --no-progress " + (dir / "s.yaml").string() + " -o " +
                              (dir / "out").string());
  REQUIRE_MESSAGE(r.code == 0, r.output);
  std::ifstream in(dir / "out" / "small.csv");
  std::string line;
  std::getline(in, line);
  std::vector<std::string> sizes;
  while (std::getline(in, line)) {
    // mode,topology,n_ranks,strategy,size_bytes,...
    std::stringstream cells(line);
    std::string cell;
    for (int c = 0; c < 5; ++c)
      std::getline(cells, cell, ',');
    sizes.push_back(cell);
  }
  CHECK(sizes == std::vector<std::string>{"8", "16", "32", "64"});
}

TEST_CASE("bad input: ranks sharing a host without a loopback are refused when read (item 5)") {
  // Two GPUs per server on one CPU, and the CPU's loopback_bandwidth taken out: the two ranks'
  // host messages have nothing to cross. The run failed with exit 1 ("no loopback") after a valid
  // `validate` (found by the mutation loop).
  std::ifstream in(kRoot / "topologies/cloud-vms.yaml");
  std::stringstream text;
  text << in.rdbuf();
  std::string topology = with(text.str(), "  gpus: 1\n", "  gpus: 2\n");
  const auto from = topology.find("    loopback_bandwidth:");
  const auto to = topology.find("    memory_bandwidth:");
  REQUIRE(from != std::string::npos);
  REQUIRE(to != std::string::npos);
  topology.erase(from, to - from);
  const std::string scenario = with(kAllreduce, "{root}/topologies/cloud-vms.yaml", "{dir}/t.yaml");
  const std::string training = with(kTraining, "{root}/topologies/cloud-vms.yaml", "{dir}/t.yaml");
  check_cases("shared_host",
              {{"all-reduce over host connections",
                "{dir}/s.yaml",
                scenario,
                {{"t.yaml", topology}},
                "s.yaml:6: key 'workload.endpoint': ranks share host s0.cpu0 of topology t.yaml, "
                "which has no server.cpu.loopback_bandwidth"},
               {"training with KungFu",
                "{dir}/s.yaml",
                with(training, "{kind: ideal}", "{kind: kungfu}"),
                {{"t.yaml", topology}},
                "s.yaml:13: key 'workload.systems[0].kind': ranks share host s0.cpu0 of topology "
                "t.yaml"}});
  // The same topology with GPU endpoints, or a system without host messages, still validates.
  const fs::path dir = fs::temp_directory_path() / "simctl_bad_input_shared_host_ok";
  fs::create_directories(dir);
  std::ofstream(dir / "t.yaml") << topology;
  std::ofstream(dir / "s.yaml") << replace_all(
      replace_all(scenario, "{dir}", dir.string()) + "  endpoint: gpu\n", "{root}", kRoot.string());
  std::ofstream(dir / "i.yaml") << replace_all(replace_all(training, "{dir}", dir.string()),
                                               "{root}", kRoot.string());
  CHECK(run_simctl("validate " + (dir / "s.yaml").string()).code == 0);
  CHECK(run_simctl("validate " + (dir / "i.yaml").string()).code == 0);
}

TEST_CASE("bad input: a monitor the run's systems cannot serve, an interval of 0") {
  check_cases(
      "monitors",
      {{"gradient-variance with horovod",
        "{dir}/s.yaml",
        with(kTraining, "{kind: ideal}\n",
             "{kind: horovod}\n  monitors: [{name: gradient-variance}]\n"),
        {},
        "s.yaml:14: key 'workload.monitors': the gradient-variance monitor all-reduces the squared "
        "gradients, which system 'horovod' (horovod) does not run"},
       {"gradient-noise-scale interval 0",
        "{dir}/s.yaml",
        with(kTraining, "{kind: ideal}\n",
             "{kind: kungfu}\n  monitors: [{name: gradient-noise-scale, interval: 0}]\n"),
        {},
        "s.yaml:14: key 'workload.monitors[0].interval'"}});
}

TEST_CASE("bad input: a jobs workload's trace, schedulers, system and elastic keys") {
  const std::string jobs =
      "name: small\n"
      "topology:\n"
      "  file: {root}/topologies/cloud-vms.yaml\n"
      "  params: {servers: 2}\n"
      "workload:\n"
      "  kind: jobs\n"
      "  trace: {dir}/t.csv\n"
      "  device: {root}/traces/devices/k80-half.yaml\n"
      "  batch_per_gpu: 8\n"
      "  schedulers: [fifo, elastic]\n";
  const std::string header = "job_id,gpu_num,submit_time,model,samples\n";
  const std::pair<std::string, std::string> good = {"t.csv", header + "a,1,0,mobilenetv2,64\n"};
  check_cases(
      "jobs",
      {{"unknown scheduler",
        "{dir}/s.yaml",
        with(jobs, "[fifo, elastic]", "[fifo, sjf]"),
        {good},
        "s.yaml:10: key 'workload.schedulers': unknown scheduler 'sjf' (known: fifo, elastic, "
        "elastic-fair)"},
       {"a scheduler twice",
        "{dir}/s.yaml",
        with(jobs, "[fifo, elastic]", "[fifo, fifo]"),
        {good},
        "s.yaml:10: key 'workload.schedulers': scheduler 'fifo' is listed twice"},
       {"a job asks for more GPUs than the cluster has",
        "{dir}/s.yaml",
        jobs,
        {{"t.csv", header + "a,3,0,mobilenetv2,64\n"}},
        "s.yaml:7: key 'workload.trace': {dir}/t.csv:2: column 'gpu_num': '3': expected a whole "
        "number of GPUs from 1 to 2 (the cluster's)"},
       {"a job's model is not in the zoo",
        "{dir}/s.yaml",
        jobs,
        {{"t.csv", header + "a,1,0,resnet51,64\n"}},
        "s.yaml:7: key 'workload.trace': {dir}/t.csv:2: column 'model': unknown model 'resnet51'"},
       {"a trace without samples",
        "{dir}/s.yaml",
        jobs,
        {{"t.csv", "job_id,gpu_num,submit_time,model\na,1,0,mobilenetv2\n"}},
        "{dir}/t.csv:1: column 'samples': is missing from the header"},
       {"a job system that cannot resize",
        "{dir}/s.yaml",
        jobs + "  system: {kind: horovod}\n",
        {good},
        "s.yaml:11: key 'workload.system.kind': a job changes its worker set; expected kungfu"},
       {"initial_workers is the scheduler's",
        "{dir}/s.yaml",
        jobs + "  elastic: {initial_workers: 1}\n",
        {good},
        "s.yaml:11: key 'workload.elastic.initial_workers': is the scheduler's to choose"},
       {"a compute step beyond an hour",
        "{dir}/s.yaml",
        jobs + "  compute_scale: 1e9\n",
        {good},
        "s.yaml:11: key 'workload.compute_scale': device profile k80-half.yaml gives mobilenetv2 a "
        "compute step of"},
       {"a jobs workload live",
        "--live {dir}/s.yaml",
        jobs,
        {good},
        "s.yaml:6: key 'workload.kind': a jobs workload is simulated only",
        true}});
}
