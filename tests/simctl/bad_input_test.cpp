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

namespace fs = std::filesystem;

namespace {

const fs::path kRoot = ADAPTSIM_SOURCE_DIR;

struct Result {
  int code;
  std::string output;  // stdout and stderr together
};

Result run_simctl(const std::string& args) {
  const std::string cmd = std::string(SIMCTL_PATH) + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  std::string out;
  std::array<char, 4096> buf;
  while (std::fgets(buf.data(), buf.size(), p))
    out += buf.data();
  const int status = pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), out};
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
  std::string scenario;                                  // empty: none written
  std::vector<std::pair<std::string, std::string>> files;  // more files for the scratch folder
  std::string expected;  // must appear in the one error line ({root}, {dir} substituted)
  bool run_only = false;
};

// Runs every row with `validate` (unless run_only) and `run`.
void check_cases(const std::string& table, const std::vector<Case>& cases) {
  int index = 0;
  for (const Case& c : cases) {
    const fs::path dir = fs::temp_directory_path() / ("simctl_bad_input_" + table) /
                         std::to_string(index++);
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
  const std::string big_path = (fs::temp_directory_path() / "simctl_bad_input_files_big" /
                                "big.yaml").string();
  check_cases("files",
              {
                  {"scenario is a character device", "/dev/zero", "", {},
                   "/dev/zero: is a character device, not a regular file"},
                  {"scenario is a directory", "{dir}", "", {}, "{dir}: is a directory, not a regular file"},
                  {"scenario is too large", big_path, "", {},
                   big_path + ": larger than 64 MiB, the limit for an input file"},
                  {"topology.file is a character device", "{dir}/s.yaml",
                   with(kAllreduce, "{root}/topologies/cloud-vms.yaml", "/dev/zero"), {},
                   "s.yaml:3: key 'topology.file': topology file /dev/zero: is a character "
                   "device, not a regular file"},
                  {"calibration: is a character device", "{dir}/s.yaml",
                   "calibration: /dev/zero\n" + kAllreduce, {},
                   "s.yaml:1: key 'calibration': calibration profile /dev/zero: is a character "
                   "device"},
                  {"--calibration is a character device", "{dir}/s.yaml --calibration /dev/zero",
                   kAllreduce, {}, "/dev/zero: is a character device, not a regular file"},
                  {"workload.device is a character device", "{dir}/s.yaml",
                   with(kTraining, "{root}/traces/devices/k80-half.yaml", "/dev/zero"), {},
                   "s.yaml:9: key 'workload.device': /dev/zero: is a character device"},
                  {"workload.device is a FIFO-like directory", "{dir}/s.yaml",
                   with(kTraining, "{root}/traces/devices/k80-half.yaml", "{dir}"), {},
                   "key 'workload.device': {dir}: is a directory, not a regular file"},
              });
  (void)big;
}

TEST_CASE("bad input: nothing in a YAML file is silently ignored (item 6)") {
  check_cases(
      "yaml",
      {
          {"a duplicated key", "{dir}/s.yaml", with(kAllreduce, "  max_bytes: 64KiB\n",
                                                    "  max_bytes: 64KiB\n  max_bytes: 1GiB\n"),
           {},
           "s.yaml:10: key 'workload.max_bytes' is given twice in one mapping (first at line 9)"},
          {"a duplicated key in a flow mapping", "{dir}/s.yaml",
           with(kAllreduce, "{servers: 2}", "{servers: 2, servers: 4}"), {},
           "s.yaml:4: key 'topology.params.servers' is given twice"},
          {"a duplicated key in a --set value",
           "{dir}/s.yaml --set 'topology.params={servers: 2, servers: 3}'", kAllreduce, {},
           "key 'topology.params.servers' is given twice"},
          {"a second YAML document", "{dir}/s.yaml", kAllreduce + "---\nname: other\n", {},
           "s.yaml:10: a second YAML document; expected one document per file"},
          {"a duplicated key in the topology file", "{dir}/s.yaml",
           with(kAllreduce, "{root}/topologies/cloud-vms.yaml", "{dir}/t.yaml"),
           {{"t.yaml", "name: t\nservers: 2\nservers: 3\nserver: {nic: {bandwidth: 1Gbps, "
                       "latency: 1us}, pcie: {bandwidth: 1GB/s, latency: 1us}}\nfabric: {kind: "
                       "switch}\n"}},
           "t.yaml:3: key 'servers' is given twice"},
          {"a duplicated key in the device profile", "{dir}/s.yaml",
           with(kTraining, "{root}/traces/devices/k80-half.yaml", "{dir}/d.yaml"),
           {{"d.yaml", "name: a\nname: b\n"}}, "d.yaml:2: key 'name' is given twice"},
          {"aliases that expand exponentially", "{dir}/s.yaml",
           kAllreduce + "description: &a [x, x, x, x, x, x, x, x]\n"
                        "x1: &b [*a, *a, *a, *a, *a, *a, *a, *a]\n"
                        "x2: &c [*b, *b, *b, *b, *b, *b, *b, *b]\n"
                        "x3: &d [*c, *c, *c, *c, *c, *c, *c, *c]\n"
                        "x4: &e [*d, *d, *d, *d, *d, *d, *d, *d]\n"
                        "x5: &f [*e, *e, *e, *e, *e, *e, *e, *e]\n",
           {}, "anchors and aliases expand to more values than the file could hold"},
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
      cases.push_back({entry.path().filename().string() + " " + name, "{dir}/s.yaml",
                       "name: small\ntopology:\n  file: " + entry.path().string() +
                           "\n  params:\n    " + name +
                           ": [1, 2]\nworkload: {kind: allreduce, strategies: [STAR], "
                           "min_bytes: 1KiB, max_bytes: 1KiB}\n",
                       {}, "{dir}/s.yaml:5: key '"});
    }
  }
  CHECK(cases.size() >= 20);  // 22 parameters across the six shipped topologies (2026-11)
  // Inside a mapping given as a parameter's value: the value's own line in the scenario.
  const std::string nic =
      "name: small\ntopology:\n  file: {root}/topologies/cloud-vms.yaml\n  params:\n"
      "    nic_bandwidth: VALUE\nworkload: {kind: allreduce, strategies: [STAR], min_bytes: 1KiB, "
      "max_bytes: 1KiB}\n";
  cases.push_back({"a list inside a parameter's mapping", "{dir}/s.yaml",
                   with(nic, "VALUE", "{value: [1], source: x}"), {},
                   "{dir}/s.yaml:5: key 'server.nic.bandwidth.value': expected a string"});
  cases.push_back({"an unknown key inside a parameter's mapping", "{dir}/s.yaml",
                   with(nic, "VALUE", "{value: 1Gbps, sorce: x}"), {},
                   "{dir}/s.yaml:5: unknown key 'server.nic.bandwidth.sorce'"});
  cases.push_back({"an unknown key inside a --set parameter's mapping",
                   "{dir}/s.yaml --set 'topology.params.nic_bandwidth={value: 1Gbps, sorce: x}'",
                   with(nic, "VALUE", "1Gbps"), {},
                   "--set topology.params.nic_bandwidth={value: 1Gbps, sorce: x}: unknown key "
                   "'server.nic.bandwidth.sorce'"});
  check_cases("params", cases);
}
