#include "tests/simctl/live_support.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace adaptsim::simctl_test {
namespace fs = std::filesystem;

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void sleep_ms(int ms) {
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
}

namespace {

std::vector<std::string> simctl_argv(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {SIMCTL_PATH};
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

}  // namespace

SimctlProcess::SimctlProcess(const std::vector<std::string>& args, const fs::path& tmpdir)
    : process_(simctl_argv(args), {"TMPDIR=" + tmpdir.string()}) {}

std::vector<std::string> sim_or_live_args(bool live, const fs::path& scenario, const fs::path& dir,
                                          const std::vector<std::string>& extra) {
  const std::string mode = live ? "live" : "sim";
  std::vector<std::string> a = {"run", scenario.string(), "-o", (dir / mode).string(),
                                "--no-progress"};
  if (live) a.insert(a.begin() + 1, "--live");
  for (std::string e : extra) {
    const auto at = e.find("{}");
    if (at != std::string::npos) e.replace(at, 2, mode);
    a.push_back(e);
  }
  return a;
}

std::string LiveScenario::text() const {
  const fs::path root = ADAPTSIM_SOURCE_DIR;
  std::string systems_text;
  for (const std::string& sys : systems)
    systems_text += "    - " + sys + "\n";
  return "name: live-test\n"
         "seed: 1\n"
         "topology:\n"
         "  file: " +
         (root / "topologies/cloud-vms.yaml").string() +
         "\n"
         "  params: {servers: " +
         std::to_string(servers) + ", nic_bandwidth: " + nic_bandwidth +
         "}\n"
         "workload:\n"
         "  kind: training\n"
         "  models: [mobilenetv2]\n"
         "  batch_per_gpu: 32\n"
         "  device: " +
         (root / "traces/devices/k80-half.yaml").string() +
         "\n"
         "  compute_scale: " +
         std::to_string(compute_scale) +
         "\n"
         "  warmup_steps: " +
         std::to_string(warmup_steps) +
         "\n"
         "  steps: " +
         std::to_string(steps) +
         "\n"
         "  systems:\n" +
         systems_text + workload_extra + "live: {" + live + "}\n";
}

fs::path scratch_dir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("simctl_live_test_" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::vector<std::map<std::string, std::string>> read_csv(const fs::path& path) {
  std::ifstream in(path);
  std::vector<std::map<std::string, std::string>> rows;
  auto split = [](const std::string& line) {
    // Every cell, a trailing empty one included ("...,STAR," has an empty last column); a quoted
    // cell (RFC 4180, as io::CsvTable writes one holding a comma: a sweep's params) is one cell.
    std::vector<std::string> cells(1);
    bool quoted = false;
    for (std::size_t i = 0; i < line.size(); ++i) {
      const char c = line[i];
      if (c == '"') {
        if (quoted && i + 1 < line.size() && line[i + 1] == '"') {
          cells.back() += '"';
          ++i;
        } else {
          quoted = !quoted;
        }
      } else if (c == ',' && !quoted) {
        cells.emplace_back();
      } else {
        cells.back() += c;
      }
    }
    return cells;
  };
  std::string line;
  if (!std::getline(in, line)) return rows;
  const std::vector<std::string> header = split(line);
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    const std::vector<std::string> cells = split(line);
    std::map<std::string, std::string> row;
    for (std::size_t i = 0; i < header.size() && i < cells.size(); ++i)
      row[header[i]] = cells[i];
    rows.push_back(std::move(row));
  }
  return rows;
}

std::vector<pid_t> processes_mentioning(const std::string& text) {
  std::vector<pid_t> out;
  for (const auto& e : fs::directory_iterator("/proc")) {
    const std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    const pid_t pid = static_cast<pid_t>(std::stol(name));
    if (pid == ::getpid()) continue;
    std::ifstream in(e.path() / "cmdline", std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    std::string cmdline = ss.str();
    // A zombie (exited, not yet reaped) has an empty command line: it runs nothing any more.
    if (cmdline.find(text) != std::string::npos) out.push_back(pid);
  }
  return out;
}

std::vector<int> free_loopback_ports(int n) {
  std::vector<int> fds, ports;
  for (int i = 0; i < n; ++i) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
      throw std::runtime_error("cannot bind a loopback port");
    }
    fds.push_back(fd);  // held until all are picked, so the ports differ
    ports.push_back(ntohs(a.sin_port));
  }
  for (int fd : fds)
    ::close(fd);
  return ports;
}

}  // namespace adaptsim::simctl_test
