// adaptsim-testbed: an emulated cluster on this machine (network namespaces, veths, bridges, tc)
// built from a topology file.
//
//   adaptsim-testbed up topologies/cloud-vms.yaml --set servers=4 --set nic_bandwidth=200Mbps
//   adaptsim-testbed run topologies/fat-tree.yaml --set servers=4 -- ./my-experiment.sh
//   adaptsim-testbed down [--prefix P]
//   adaptsim-testbed status
//
// `run` gives CMD ADAPTSIM_TESTBED_HOSTS=ip0,ip1,... and ADAPTSIM_TESTBED_NS=ns0,ns1,... (host
// order) and exits with CMD's exit code (128 + signal when a signal ended it).
// Exit codes otherwise: 0 success; 1 a run-time failure; 2 bad input or not supported (no root).

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>
#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "hw/testbed/state_file.h"
#include "hw/testbed/testbed.h"
#include "sim/core/error.h"
#include "sim/core/units.h"
#include "sim/io/topology_loader.h"

namespace {

using namespace adaptsim;
using namespace adaptsim::testbed;

constexpr const char* kEnvHosts = "ADAPTSIM_TESTBED_HOSTS";
constexpr const char* kEnvNamespaces = "ADAPTSIM_TESTBED_NS";
constexpr const char* kEnvPrefix = "ADAPTSIM_TESTBED_PREFIX";
// After forwarding a signal to `run`'s command, how long it may take to exit before SIGKILL.
constexpr auto kCommandGrace = std::chrono::seconds(10);
// How long `down` waits for a live owner to tear its testbed down after SIGTERM.
constexpr auto kOwnerGrace = std::chrono::seconds(15);

struct ToolOptions {
  std::string topology;
  std::vector<std::string> sets;
  std::string prefix = TestbedOptions{}.prefix;
  std::string subnet;
  std::string queue_delay;         // empty: the topology's NIC queue, else 5 ms
  std::string congestion_control;  // empty: what new namespaces inherit
  bool quiet = false;
  std::vector<std::string> command;
};

sigset_t handled_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  return set;
}

void require_support() {
  std::string why;
  if (!testbed_supported(&why)) throw InputError("cannot build a testbed: " + why);
}

io::Params parse_sets(const std::vector<std::string>& sets) {
  io::Params params;
  for (const std::string& s : sets) {
    const std::size_t eq = s.find('=');
    if (eq == std::string::npos || eq == 0) {
      throw InputError("--set " + s + ": expected param=value (e.g. --set nic_bandwidth=200Mbps)");
    }
    YAML::Node value;
    try {
      value = YAML::Load(s.substr(eq + 1));
    } catch (const YAML::Exception& e) {
      throw InputError("--set " + s + ": invalid value: " + e.msg);
    }
    params[s.substr(0, eq)] = io::Param{value, "--set " + s};
  }
  return params;
}

TestbedOptions testbed_options(const ToolOptions& t) {
  TestbedOptions o;
  o.prefix = t.prefix;
  std::string why;
  if (!valid_prefix(o.prefix, &why)) throw InputError("--prefix: " + why);
  if (!t.subnet.empty()) {
    Ipv4Net net;
    if (!parse_ipv4_net(t.subnet, &net) || net.length != 16 || (net.address >> 24) != 10 ||
        (net.address & 0xffff) != 0) {
      throw InputError("--subnet: expected 10.X.0.0/16, got \"" + t.subnet + "\"");
    }
    o.subnet_octet = static_cast<int>((net.address >> 16) & 0xff);
  }
  if (!t.queue_delay.empty()) {
    o.queue_delay_ns = parse_duration_ns(t.queue_delay);
    if (o.queue_delay_ns <= 0) throw InputError("--queue-delay: must be > 0");
  }
  o.congestion_control = t.congestion_control;
  return o;
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& s : items)
    out += (out.empty() ? "" : ",") + s;
  return out;
}

void print_testbed(std::ostream& out, const Testbed& tb, const io::LoadedTopology& topo,
                   const std::string& cc) {
  const TestbedPlan& plan = tb.plan();
  out << "testbed \"" << tb.prefix() << "\": " << topo.spec.name << ", " << tb.hosts().size()
      << " hosts, "
      << (plan.fabric == topo::FabricKind::kSwitch ? std::string("one switch bridge")
          : plan.fabric == topo::FabricKind::kWan
              ? std::to_string(plan.bridges.size() - 1) + " region bridges + 1 hub bridge"
              : std::to_string(plan.bridges.size() - 1) + " leaf bridges + 1 spine bridge")
      << ", subnet " << plan.subnet << "\n";
  out << "  host  namespace        address          egress          ingress\n";
  for (std::size_t i = 0; i < tb.hosts().size(); ++i) {
    const Host& h = tb.hosts()[i];
    out << "  " << std::left << std::setw(6) << i << std::setw(17) << h.ns << std::setw(17) << h.ip
        << std::setw(16) << format_bandwidth(h.egress_Bps) << format_bandwidth(h.ingress_Bps)
        << "\n";
  }
  if (plan.fabric != topo::FabricKind::kWan) {
    for (const PlannedUplink& u : plan.uplinks) {
      out << "  uplink " << u.leaf_bridge << " <-> " << u.spine_bridge << ": "
          << format_bandwidth(u.bandwidth_Bps) << " each way\n";
    }
  }
  for (const PlannedWanLink& l : plan.wan_links) {
    out << "  wan " << l.from << " -> " << l.to << ": " << format_bandwidth(l.bandwidth_Bps) << " ("
        << l.device << ")\n";
  }
  out << "latency is not emulated (topology NIC latency "
      << format_duration(topo.spec.server.nic.latency_ns)
      << "); paths have the real RTT of veths and bridges\n";
  for (const SysctlChange& c : tb.sysctl_changes()) {
    out << "sysctl " << c.key << " raised " << c.old_value << " -> " << c.new_value
        << " (restored when the last testbed goes)\n";
  }
  for (const std::string& note : tb.sysctl_notes())
    out << "sysctl " << note << "\n";
  if (!cc.empty()) out << "every host's default TCP congestion control: " << cc << "\n";
}

int cmd_up(const ToolOptions& t) {
  const io::LoadedTopology topo = io::load_topology(t.topology, parse_sets(t.sets));
  const TestbedOptions options = testbed_options(t);
  require_support();
  const sigset_t signals = handled_signals();
  sigprocmask(SIG_BLOCK, &signals, nullptr);  // held until the loop below waits for them
  Testbed tb = Testbed::create(topo.spec, options);
  print_testbed(std::cout, tb, topo, options.congestion_control);
  std::cout << "run on a host: ip netns exec " << tb.hosts().front().ns << " COMMAND\n"
            << "up; Ctrl-C (or adaptsim-testbed down --prefix " << tb.prefix() << ") tears it down"
            << std::endl;
  int sig = 0;
  while (sig <= 0)
    sig = sigwaitinfo(&signals, nullptr);
  tb.teardown();
  std::cout << "testbed \"" << tb.prefix() << "\" torn down (" << strsignal(sig) << ")"
            << std::endl;
  return 0;
}

int cmd_run(const ToolOptions& t) {
  if (t.command.empty()) throw InputError("run: expected a command after --");
  const io::LoadedTopology topo = io::load_topology(t.topology, parse_sets(t.sets));
  const TestbedOptions options = testbed_options(t);
  require_support();
  const sigset_t signals = handled_signals();
  sigprocmask(SIG_BLOCK, &signals, nullptr);
  Testbed tb = Testbed::create(topo.spec, options);
  std::vector<std::string> ips, namespaces;
  for (const Host& h : tb.hosts()) {
    ips.push_back(h.ip);
    namespaces.push_back(h.ns);
  }
  if (!t.quiet) {
    std::cerr << "adaptsim-testbed: \"" << tb.prefix() << "\" up with " << ips.size() << " hosts ("
              << join(ips) << "); running " << t.command.front() << std::endl;
  }
  const std::string hosts_env = join(ips), ns_env = join(namespaces);
  std::vector<std::string> args = t.command;
  std::vector<char*> argv;
  for (std::string& a : args)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  std::cout.flush();
  const pid_t child = fork();
  if (child < 0) throw RuntimeFailure("fork: " + std::string(strerror(errno)));
  if (child == 0) {
    sigprocmask(SIG_UNBLOCK, &signals, nullptr);
    setenv(kEnvHosts, hosts_env.c_str(), 1);
    setenv(kEnvNamespaces, ns_env.c_str(), 1);
    setenv(kEnvPrefix, tb.prefix().c_str(), 1);
    execvp(argv[0], argv.data());
    std::fprintf(stderr, "adaptsim-testbed: cannot execute %s: %s\n", argv[0], strerror(errno));
    _exit(127);
  }
  int status = 0;
  int forwarded = 0;
  auto first_signal = std::chrono::steady_clock::now();
  const timespec tick{0, 100 * 1000 * 1000};
  while (true) {
    const pid_t done = waitpid(child, &status, WNOHANG);
    if (done == child) break;
    const int sig = sigtimedwait(&signals, nullptr, &tick);
    if (sig > 0) {
      if (forwarded++ == 0) first_signal = std::chrono::steady_clock::now();
      kill(child, forwarded > 1 ? SIGKILL : sig);  // a second signal means "now"
    }
    if (forwarded > 0 && std::chrono::steady_clock::now() - first_signal > kCommandGrace) {
      kill(child, SIGKILL);
    }
  }
  tb.teardown();
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return WEXITSTATUS(status);
}

int cmd_down(const ToolOptions& t) {
  std::string why;
  if (!valid_prefix(t.prefix, &why)) throw InputError("--prefix: " + why);
  require_support();
  for (const FoundState& s : list_states()) {
    if (s.record.prefix != t.prefix || !s.owner_alive) continue;
    // A live owner tears its own testbed down on SIGTERM; signal it only if the pid still names
    // the process that wrote the record (pids are reused).
    const int pid = s.record.owner_pid;
    if (pid <= 1 || process_start_ticks(pid) != s.record.owner_start_ticks) {
      throw RuntimeFailure("testbed \"" + t.prefix + "\" is held by a process other than its " +
                           "recorded owner " + std::to_string(pid) + "; not touching it");
    }
    std::cout << "asking the owner (pid " << pid << ") to tear testbed \"" << t.prefix << "\" down"
              << std::endl;
    kill(pid, SIGTERM);
    const auto deadline = std::chrono::steady_clock::now() + kOwnerGrace;
    bool alive = true;
    while (alive && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      alive = false;
      for (const FoundState& again : list_states()) {
        if (again.record.prefix == t.prefix && again.owner_alive) alive = true;
      }
    }
    if (alive) {
      throw RuntimeFailure("the owner (pid " + std::to_string(pid) + ") of testbed \"" + t.prefix +
                           "\" did not finish within 15 s");
    }
  }
  const int removed = remove_stale(t.prefix);
  std::cout << (removed > 0 ? "removed " + std::to_string(removed) +
                                  " namespaces and interfaces of testbed \"" + t.prefix + "\""
                            : "nothing left of testbed \"" + t.prefix + "\"")
            << std::endl;
  return 0;
}

int cmd_status() {
  const std::vector<FoundState> states = list_states();
  if (states.empty()) {
    std::cout << "no testbeds (" << kStateDir << " holds no state files)" << std::endl;
    return 0;
  }
  for (const FoundState& s : states) {
    const StateRecord& r = s.record;
    std::cout << "testbed \"" << r.prefix << "\": " << r.topology << ", " << r.host_lines.size()
              << " hosts, subnet " << r.subnet << ", owner pid " << r.owner_pid
              << (s.owner_alive ? " (running)" : " (dead: stale, removed by the next up/down)")
              << "\n";
    for (const std::string& line : r.host_lines) {
      std::istringstream in(line);
      std::string ns, ip;
      double egress = 0, ingress = 0;
      in >> ns >> ip >> egress >> ingress;
      std::cout << "  " << std::left << std::setw(17) << ns << std::setw(17) << ip << std::setw(16)
                << format_bandwidth(egress) << format_bandwidth(ingress) << "\n";
    }
  }
  std::cout.flush();
  return 0;
}

int run_tool(int argc, char** argv) {
  ToolOptions t;
  CLI::App app{
      "Emulated cluster on this machine: network namespaces joined by bridges, NICs "
      "capped with tc, built from a topology file"};
  app.set_help_flag("-h,--help", "Print this help and exit");
  app.footer(R"(Needs root (namespaces, bridges, tc). `run` gives CMD ADAPTSIM_TESTBED_HOSTS and
ADAPTSIM_TESTBED_NS (host order). SUBCOMMAND --help lists a subcommand's options.
Examples:
  adaptsim-testbed up topologies/cloud-vms.yaml --set servers=4 --set nic_bandwidth=200Mbps
  adaptsim-testbed run topologies/fat-tree.yaml --set servers=4 -- ./my-experiment.sh
  adaptsim-testbed down
  adaptsim-testbed status
Exit codes: `run` exits with CMD's code (128 + signal when a signal ended it); otherwise 0 success,
1 run-time failure, 2 bad input or not supported (no root).)");
  app.require_subcommand(1);
  auto add_build_options = [&](CLI::App* sub) {
    sub->add_option("topology", t.topology, "Topology file (topologies/*.yaml)")->required();
    sub->add_option("--set", t.sets, "Topology parameter: param=value (repeatable)");
    sub->add_option("--prefix", t.prefix, "Name prefix of namespaces and interfaces")
        ->capture_default_str();
    sub->add_option("--subnet", t.subnet, "Hosts' subnet 10.X.0.0/16 (default: a free one)");
    sub->add_option("--queue-delay", t.queue_delay,
                    "FIFO depth behind each cap, as time (default: the topology's NIC queue, "
                    "else 5ms)");
    sub->add_option("--congestion-control", t.congestion_control,
                    "Every host's default TCP congestion control, for programs that choose none "
                    "(e.g. cubic; allowed machine-wide while up; default: what a new namespace "
                    "inherits)");
  };
  CLI::App* up = app.add_subcommand("up", "Create a testbed and keep it up until Ctrl-C");
  add_build_options(up);
  CLI::App* run = app.add_subcommand("run", "Create a testbed, run CMD, tear it down");
  add_build_options(run);
  run->add_flag("-q,--quiet", t.quiet, "No line on stderr when the testbed is up");
  run->footer("Usage: adaptsim-testbed run TOPOLOGY [--set p=v]... -- CMD ARGS...");
  CLI::App* down = app.add_subcommand("down", "Remove a testbed (stopping its owner) or leftovers");
  down->add_option("--prefix", t.prefix, "Name prefix")->capture_default_str();
  CLI::App* status = app.add_subcommand("status", "List testbeds and whether their owner lives");
  // Everything after the first "--" is `run`'s command, verbatim: CLI11 would read dashed words of
  // the command (bash -c, calibrate --hosts ...) as options of a subcommand.
  int tool_argc = argc;
  for (int i = 1; i < argc; ++i) {
    if (std::string_view(argv[i]) == "--") {
      tool_argc = i;
      t.command.assign(argv + i + 1, argv + argc);
      break;
    }
  }
  try {
    app.parse(tool_argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    throw InputError(e.what());
  }
  if (up->parsed()) return cmd_up(t);
  if (run->parsed()) return cmd_run(t);
  if (down->parsed()) return cmd_down(t);
  if (status->parsed()) return cmd_status();
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  // A closed stdout (`up | head -1`) must fail a write, not kill the process before teardown.
  signal(SIGPIPE, SIG_IGN);
  try {
    return run_tool(argc, argv);
  } catch (const adaptsim::InputError& e) {
    adaptsim::print_error_line("adaptsim-testbed", e.what());
    return 2;
  } catch (const std::exception& e) {
    adaptsim::print_error_line("adaptsim-testbed", e.what());
    return 1;
  }
}
