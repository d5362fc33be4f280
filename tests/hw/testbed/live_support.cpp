#include "tests/hw/testbed/live_support.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "hw/testbed/command.h"
#include "hw/testbed/state_file.h"
#include "sim/io/topology_loader.h"

namespace adaptsim::testbed::test {
namespace {

std::vector<std::string> on_host(const Testbed& tb, int host, std::vector<std::string> argv) {
  std::vector<std::string> out = tb.exec_prefix(host);
  out.insert(out.end(), argv.begin(), argv.end());
  return out;
}

void enter_netns(const std::string& ns) {
  const int fd = ::open(("/run/netns/" + ns).c_str(), O_RDONLY);
  if (fd < 0 || ::setns(fd, CLONE_NEWNET) != 0) ::_exit(90);
  ::close(fd);
}

sockaddr_in address(const std::string& ip, int port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  ::inet_pton(AF_INET, ip.c_str(), &a.sin_addr);
  return a;
}

}  // namespace

topo::ClusterSpec load_spec(const std::string& file,
                           const std::vector<std::pair<std::string, std::string>>& params) {
  io::Params overrides;
  for (const auto& [k, v] : params)
    overrides[k] = io::Param{YAML::Load(v), "test " + k};
  return io::load_topology(std::filesystem::path(ADAPTSIM_SOURCE_DIR) / "topologies" / file,
                           overrides)
      .spec;
}

bool have_iperf3() {
  return find_program("iperf3").has_value();
}

std::vector<double> iperf3_goodput_Mbps(const Testbed& tb,
                                        const std::vector<std::pair<int, int>>& flows, int seconds,
                                        bool reverse, const std::function<void()>& during) {
  std::vector<std::unique_ptr<BackgroundProcess>> servers, clients;
  // One server per flow, each on its own port (two flows may go to one host).
  auto port = [](std::size_t flow) { return std::to_string(5201 + flow); };
  for (std::size_t f = 0; f < flows.size(); ++f) {
    const int server = flows[f].second;
    const std::string& ip = tb.hosts()[static_cast<std::size_t>(server)].ip;
    servers.push_back(std::make_unique<BackgroundProcess>(
        on_host(tb, server, {"iperf3", "-s", "-1", "-B", ip, "-p", port(f), "--forceflush"})));
  }
  for (auto& s : servers) {
    if (!s->wait_for_output("Server listening", 5 * kNsPerSecond)) {
      throw std::runtime_error("iperf3 server did not start: " + s->output());
    }
  }
  for (std::size_t f = 0; f < flows.size(); ++f) {
    const auto [client, server] = flows[f];
    std::vector<std::string> argv = {"iperf3",
                                     "-c",
                                     tb.hosts()[static_cast<std::size_t>(server)].ip,
                                     "-p",
                                     port(f),
                                     "-t",
                                     std::to_string(seconds),
                                     "-O",
                                     "1",
                                     "-J"};
    if (reverse) argv.push_back("-R");
    clients.push_back(std::make_unique<BackgroundProcess>(on_host(tb, client, argv)));
  }
  if (during) {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    during();
  }
  std::vector<double> out;
  const TimeNs limit = static_cast<TimeNs>((seconds + 11) * 1e9);
  for (auto& c : clients) {
    const int code = c->wait(limit);
    const std::string text = c->output();
    if (code != 0)
      throw std::runtime_error("iperf3 client failed (" + std::to_string(code) + "): " + text);
    const nlohmann::json j = nlohmann::json::parse(text);
    out.push_back(j.at("end").at("sum_received").at("bits_per_second").get<double>() / 1e6);
  }
  for (auto& s : servers)
    s->wait(5 * kNsPerSecond);
  return out;
}

RttStats udp_rtt(const Testbed& tb, int from, int to, int count) {
  const Host& dst = tb.hosts()[static_cast<std::size_t>(to)];
  const Host& src = tb.hosts()[static_cast<std::size_t>(from)];
  constexpr int kPort = 7777;
  int ready[2];
  if (::pipe(ready) != 0) throw std::runtime_error("pipe");
  const pid_t server = ::fork();
  if (server == 0) {  // echo server inside `to`
    enter_netns(dst.ns);
    const int s = ::socket(AF_INET, SOCK_DGRAM, 0);
    const sockaddr_in a = address(dst.ip, kPort);
    if (::bind(s, reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0) ::_exit(91);
    [[maybe_unused]] auto w = ::write(ready[1], "r", 1);
    char buf[256];
    while (true) {
      sockaddr_in peer{};
      socklen_t len = sizeof peer;
      const ssize_t n = ::recvfrom(s, buf, sizeof buf, 0, reinterpret_cast<sockaddr*>(&peer), &len);
      if (n > 0)
        ::sendto(s, buf, static_cast<std::size_t>(n), 0, reinterpret_cast<sockaddr*>(&peer), len);
    }
  }
  ::close(ready[1]);
  char c = 0;
  pollfd pfd{ready[0], POLLIN, 0};
  const bool up = ::poll(&pfd, 1, 5000) == 1 && ::read(ready[0], &c, 1) == 1;
  ::close(ready[0]);
  int samples[2];
  if (!up || ::pipe(samples) != 0) {
    ::kill(server, SIGKILL);
    ::waitpid(server, nullptr, 0);
    throw std::runtime_error("UDP echo server did not start in " + dst.ns);
  }
  const pid_t client = ::fork();
  if (client == 0) {  // pings from `from`; writes one double (us, or -1 when lost) per round
    enter_netns(src.ns);
    const int s = ::socket(AF_INET, SOCK_DGRAM, 0);
    const sockaddr_in a = address(dst.ip, kPort);
    if (::connect(s, reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0) ::_exit(92);
    char buf[64] = {};
    for (int i = 0; i < count; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      ::send(s, buf, sizeof buf, 0);
      pollfd p{s, POLLIN, 0};
      double us = -1;
      if (::poll(&p, 1, 1000) == 1 && ::recv(s, buf, sizeof buf, 0) > 0) {
        us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0)
                 .count();
      }
      [[maybe_unused]] auto w = ::write(samples[1], &us, sizeof us);
    }
    ::_exit(0);
  }
  ::close(samples[1]);
  std::vector<double> rtts;
  RttStats stats;
  double us;
  while (::read(samples[0], &us, sizeof us) == sizeof us) {
    if (us < 0) {
      ++stats.lost;
    } else {
      rtts.push_back(us);
    }
  }
  ::close(samples[0]);
  ::waitpid(client, nullptr, 0);
  ::kill(server, SIGKILL);
  ::waitpid(server, nullptr, 0);
  if (rtts.empty()) throw std::runtime_error("no UDP echo came back from " + dst.ns);
  std::sort(rtts.begin(), rtts.end());
  stats.min_us = rtts.front();
  stats.median_us = rtts[rtts.size() / 2];
  stats.max_us = rtts.back();
  return stats;
}

std::string tool_path() {
  return ADAPTSIM_TESTBED_TOOL;
}

ToolResult run_tool(const std::vector<std::string>& args, TimeNs timeout_ns) {
  std::vector<std::string> argv = {tool_path()};
  argv.insert(argv.end(), args.begin(), args.end());
  CommandOptions o;
  o.timeout_ns = timeout_ns;
  const CommandResult r = run_command(argv, o);
  return {r.signal ? 128 + r.signal : r.exit_code, r.out, r.err};
}

bool leftovers(const std::string& prefix, std::string* what) {
  std::string found;
  for (const std::string& name : existing_objects(prefix))
    found += name + " ";
  if (std::filesystem::exists(state_path(prefix))) found += state_path(prefix).string();
  if (what) *what = found;
  return !found.empty();
}

}  // namespace adaptsim::testbed::test
