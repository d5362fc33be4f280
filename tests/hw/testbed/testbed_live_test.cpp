// The testbed on this machine (root only; live_test_main.cpp skips otherwise): connectivity, real
// RTT, caps measured with iperf3, contention on a fat-tree uplink, complete teardown, stale
// removal after a SIGKILLed owner, and the tool under SIGINT, `down` and `run`.
//
// Goodput expectations: iperf3 reports TCP payload at the receiver, while htb counts whole
// Ethernet frames (without preamble and FCS). With a 1500-byte MTU and TCP timestamps a 1514-byte
// frame carries 1448 bytes of payload, so a cap C gives at most C x 1448 / 1514 = 0.956 C.
#include <doctest/doctest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>

#include "hw/testbed/command.h"
#include "hw/testbed/netns_sysctl.h"
#include "hw/testbed/signal_teardown.h"
#include "hw/testbed/state_file.h"
#include "hw/testbed/testbed.h"
#include "sim/core/error.h"
#include "tests/hw/testbed/live_support.h"

namespace {

using namespace adaptsim;
using namespace adaptsim::testbed;
using namespace adaptsim::testbed::test;

constexpr double kGoodputPerLineRate = 1448.0 / 1514.0;
constexpr int kIperfSeconds = 2;

TestbedOptions with_prefix(const std::string& prefix) {
  TestbedOptions o;
  o.prefix = prefix;
  return o;
}

void check_no_leftovers(const std::string& prefix) {
  std::string what;
  const bool left = leftovers(prefix, &what);
  INFO("left behind: " << what);
  CHECK_FALSE(left);
}

std::string root_sysctl(const std::string& key) {
  std::ifstream in(sysctl_path(key));
  std::string v;
  in >> v;
  return v;
}

// Within 10% below the cap and not above it (2% slack for iperf3's interval edges).
void check_near_cap(double measured_Mbps, double cap_Mbps) {
  INFO("measured " << measured_Mbps << " Mbit/s against a cap of " << cap_Mbps
                   << " Mbit/s (payload ceiling " << cap_Mbps * kGoodputPerLineRate << ")");
  CHECK(measured_Mbps >= 0.9 * cap_Mbps);
  CHECK(measured_Mbps <= 1.02 * cap_Mbps);
}

// Waits (up to 30 s) for a forked child to write its "ready" byte; closes the pipe.
bool wait_ready(int fd) {
  pollfd p{fd, POLLIN, 0};
  char c = 0;
  const bool ok = ::poll(&p, 1, 30000) == 1 && ::read(fd, &c, 1) == 1 && c == 'r';
  ::close(fd);
  return ok;
}

// Forks a child that creates a testbed with `prefix`, reports ready and sleeps; optionally with
// install_signal_teardown() first.
pid_t fork_owner(const topo::ClusterSpec& spec, const std::string& prefix, bool with_handlers,
                 int* ready_fd) {
  int ready[2];
  if (::pipe(ready) != 0) return -1;
  const pid_t child = ::fork();
  if (child == 0) {
    ::close(ready[0]);
    try {
      // doctest's crash handlers are inherited: back to the defaults, which the teardown
      // handler then passes the signal on to.
      for (int sig : {SIGINT, SIGTERM, SIGHUP})
        ::signal(sig, SIG_DFL);
      if (with_handlers) install_signal_teardown();
      Testbed tb = Testbed::create(spec, with_prefix(prefix));
      [[maybe_unused]] auto w = ::write(ready[1], "r", 1);
      while (true)
        ::pause();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "child: %s\n", e.what());
    }
    ::_exit(1);
  }
  ::close(ready[1]);
  *ready_fd = ready[0];
  return child;
}

}  // namespace

TEST_CASE(
    "cloud-vms at 200 Mbit/s: 4 hosts reach each other, iperf3 meets the cap both ways, "
    "nothing remains") {
  const std::string prefix = "tbtvm";
  const std::string rmem_before = root_sysctl("net.core.rmem_max");
  const std::uint64_t wanted = std::stoull(rmem_before) * 2;
  {
    TestbedOptions o = with_prefix(prefix);
    // Ask for twice the machine's socket-buffer maximum: it is raised machine-wide (hosts see the
    // global value) and restored at teardown.
    o.raise_sysctls = {{"net.core.rmem_max", wanted}};
    // A namespace's own sysctl, written in every host (a value with spaces too).
    o.namespace_sysctls = {{"net.ipv4.tcp_slow_start_after_idle", "0"},
                           {"net.ipv4.tcp_rmem", "4096 87380 6291456"}};
    Testbed tb = Testbed::create(
        load_spec("cloud-vms.yaml", {{"servers", "4"}, {"nic_bandwidth", "200Mbps"}}), o);
    REQUIRE(tb.hosts().size() == 4);
    CHECK(tb.exec_prefix(2) == std::vector<std::string>{"ip", "netns", "exec", "tbtvm-h2"});
    REQUIRE(tb.sysctl_changes().size() == 1);
    CHECK(tb.sysctl_changes()[0].old_value == rmem_before);
    CHECK(root_sysctl("net.core.rmem_max") == std::to_string(wanted));
    CHECK(read_netns_sysctl("tbtvm-h0", "net.core.rmem_max").value_or("") ==
          std::to_string(wanted));
    for (const char* ns : {"tbtvm-h0", "tbtvm-h3"}) {
      CHECK(read_netns_sysctl(ns, "net.ipv4.tcp_slow_start_after_idle").value_or("") == "0");
      CHECK(read_netns_sysctl(ns, "net.ipv4.tcp_rmem").value_or("") == "4096\t87380\t6291456");
    }

    // Every ordered pair answers; no latency is emulated, so the RTT is the stack's own.
    for (int a = 0; a < 4; ++a) {
      for (int b = 0; b < 4; ++b) {
        if (a == b) continue;
        const RttStats rtt = udp_rtt(tb, a, b, a == 0 && b == 1 ? 200 : 5);
        CHECK(rtt.lost == 0);
        CHECK(rtt.median_us < 5000);  // "< 5 ms": far below any emulated WAN, just the stack
        if (a == 0 && b == 1) {
          MESSAGE("UDP RTT h0 -> h1 (idle, 200 round trips): min "
                  << rtt.min_us << " us, median " << rtt.median_us << " us, max " << rtt.max_us
                  << " us");
        }
      }
    }
    if (!have_iperf3()) {
      MESSAGE("iperf3 not installed (scripts/setup.sh installs it): throughput not measured");
    } else {
      // h1 -> h0 is bounded by h1's egress and h0's ingress, both 200 Mbit/s.
      const double forward = iperf3_goodput_Mbps(tb, {{1, 0}}, kIperfSeconds).at(0);
      const double reverse = iperf3_goodput_Mbps(tb, {{1, 0}}, kIperfSeconds, true).at(0);
      MESSAGE("iperf3 cap 200 Mbit/s: h1->h0 " << forward << " Mbit/s, h0->h1 (-R) " << reverse
                                               << " Mbit/s; ceiling " << 200 * kGoodputPerLineRate);
      check_near_cap(forward, 200);
      check_near_cap(reverse, 200);
      // Loaded RTT: the FIFO behind the cap holds at most 5 ms (262144 B at 25e6 B/s = 10.5 ms
      // here, the 4 x 64 KiB floor), so pings during a flow stay within a few tens of ms.
    }
    tb.teardown();
    CHECK_FALSE(tb.active());
    check_no_leftovers(prefix);
  }
  check_no_leftovers(prefix);
  // Restored, unless another testbed (not this test's) is up and still relies on it.
  bool others = false;
  for (const FoundState& s : list_states())
    others = others || s.owner_alive;
  if (!others) CHECK(root_sysctl("net.core.rmem_max") == rmem_before);
}

TEST_CASE("an egress cap below the NIC bandwidth holds per sender while the receiver takes both") {
  if (!have_iperf3()) {
    MESSAGE("iperf3 not installed: skipped");
    return;
  }
  Testbed tb = Testbed::create(load_spec("cloud-vms.yaml", {{"servers", "3"},
                                                            {"nic_bandwidth", "200Mbps"},
                                                            {"nic_egress_bandwidth", "100Mbps"}}),
                               with_prefix("tbteg"));
  // h1 -> h0 and h2 -> h0 at once: each sender is held to its 100 Mbit/s egress; h0's ingress
  // (200 Mbit/s) fits both, so the sum is ~2 x 100 x 0.956 = 191 Mbit/s, not 100.
  // Meanwhile the RTT from h1 to h0 includes h1's full egress FIFO: at most 262144 B at
  // 12.5e6 B/s = 21 ms (the 4 x 64 KiB floor of the FIFO, above 5 ms at this rate).
  RttStats loaded;
  const std::vector<double> flows = iperf3_goodput_Mbps(tb, {{1, 0}, {2, 0}}, kIperfSeconds, false,
                                                        [&] { loaded = udp_rtt(tb, 1, 0, 50); });
  MESSAGE("egress 100 / ingress 200 Mbit/s: h1->h0 "
          << flows[0] << ", h2->h0 " << flows[1] << " Mbit/s; UDP RTT h1->h0 under load: min "
          << loaded.min_us << " us, median " << loaded.median_us << " us, max " << loaded.max_us
          << " us, lost " << loaded.lost);
  CHECK(loaded.median_us < 30000);
  check_near_cap(flows[0], 100);
  check_near_cap(flows[1], 100);
  check_near_cap(flows[0] + flows[1], 200);
  tb.teardown();
  check_no_leftovers("tbteg");
}

TEST_CASE("fat tree: two flows crossing one capped uplink share it") {
  if (!have_iperf3()) {
    MESSAGE("iperf3 not installed: skipped");
    return;
  }
  // Two leaves of two servers; NICs are the topology's 100 GbE (effectively uncapped here), the
  // leaf uplink 200 Mbit/s with one spine.
  Testbed tb = Testbed::create(load_spec("fat-tree.yaml", {{"servers", "4"},
                                                           {"servers_per_leaf", "2"},
                                                           {"spines", "1"},
                                                           {"uplink_bandwidth", "200Mbps"}}),
                               with_prefix("tbtft"));
  REQUIRE(tb.plan().uplinks.size() == 2);
  // h0 -> h2 and h1 -> h3 both leave leaf 0 through its uplink: together at most
  // 200 x 0.956 = 191 Mbit/s, and 100 x 0.956 = 96 Mbit/s each (one share per source host).
  const std::vector<double> flows = iperf3_goodput_Mbps(tb, {{0, 2}, {1, 3}}, kIperfSeconds);
  MESSAGE("fat tree uplink 200 Mbit/s shared by 2 flows: " << flows[0] << " + " << flows[1] << " = "
                                                           << flows[0] + flows[1] << " Mbit/s");
  check_near_cap(flows[0] + flows[1], 200);
  // The uplink's per-host classes make the split even: each near the 100 Mbit/s share.
  check_near_cap(flows[0], 100);
  check_near_cap(flows[1], 100);
  tb.teardown();
  check_no_leftovers("tbtft");
}

TEST_CASE("a testbed left by a SIGKILLed owner is removed by the next create") {
  const std::string prefix = "tbtkill";
  const topo::ClusterSpec spec = load_spec("cloud-vms.yaml", {{"servers", "2"}});
  int ready = -1;
  const pid_t child = fork_owner(spec, prefix, false, &ready);
  REQUIRE(child > 0);
  REQUIRE(wait_ready(ready));
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);

  // The dead owner's objects and record are still there, and the record reads as stale.
  std::string what;
  CHECK(leftovers(prefix, &what));
  // The bridge, two namespaces and the veths' root-namespace ends: 1 + 2 + 2.
  CHECK(existing_objects(prefix).size() == 5);
  bool found_stale = false;
  for (const FoundState& s : list_states()) {
    if (s.record.prefix == prefix) found_stale = !s.owner_alive && s.record.owner_pid == child;
  }
  CHECK(found_stale);

  {
    Testbed tb = Testbed::create(spec, with_prefix(prefix));
    CHECK(tb.hosts().size() == 2);
    CHECK(udp_rtt(tb, 0, 1, 3).lost == 0);
    // While this process holds the prefix, another create with it is refused.
    CHECK_THROWS_WITH_AS(
        Testbed::create(spec, with_prefix(prefix)),
        doctest::Contains(("in use by process " + std::to_string(::getpid())).c_str()),
        RuntimeFailure);
    CHECK(remove_stale(prefix) == 0);  // the live owner's testbed is not stale
    CHECK(tb.active());
  }
  check_no_leftovers(prefix);
  CHECK(remove_stale(prefix) == 0);
}

TEST_CASE("install_signal_teardown: SIGTERM removes the testbed, then ends the process by it") {
  const std::string prefix = "tbtsig";
  int ready = -1;
  const pid_t child =
      fork_owner(load_spec("cloud-vms.yaml", {{"servers", "2"}}), prefix, true, &ready);
  REQUIRE(child > 0);
  REQUIRE(wait_ready(ready));
  CHECK(leftovers(prefix, nullptr));
  ::kill(child, SIGTERM);
  int status = 0;
  bool exited = false;
  for (int i = 0; i < 1500 && !exited; ++i) {  // up to 15 s
    exited = ::waitpid(child, &status, WNOHANG) == child;
    if (!exited) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (!exited) {
    ::kill(child, SIGKILL);
    ::waitpid(child, &status, 0);
  }
  CHECK(exited);
  CHECK(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGTERM);
  check_no_leftovers(prefix);
}

TEST_CASE("adaptsim-testbed up: SIGINT tears the testbed down: so does `down` from elsewhere") {
  const std::string topo = std::string(ADAPTSIM_SOURCE_DIR) + "/topologies/cloud-vms.yaml";
  for (const bool by_down : {false, true}) {
    CAPTURE(by_down);
    const std::string prefix = by_down ? "tbtdown" : "tbtint";
    BackgroundProcess up({tool_path(), "up", topo, "--set", "servers=2", "--set",
                          "nic_bandwidth=100Mbps", "--prefix", prefix});
    REQUIRE_MESSAGE(up.wait_for_output("tears it down", 20 * kNsPerSecond), up.output());
    CHECK(up.output().find(prefix + "-h1") != std::string::npos);
    CHECK(up.output().find("latency is not emulated") != std::string::npos);
    CHECK(leftovers(prefix, nullptr));
    const ToolResult status = run_tool({"status"});
    CHECK(status.exit_code == 0);
    CHECK(status.out.find("testbed \"" + prefix + "\"") != std::string::npos);
    CHECK(status.out.find("(running)") != std::string::npos);
    if (by_down) {
      const ToolResult down = run_tool({"down", "--prefix", prefix}, 30 * kNsPerSecond);
      CHECK(down.exit_code == 0);
      CHECK(up.wait(15 * kNsPerSecond) == 0);
    } else {
      up.signal(SIGINT);
      CHECK(up.wait(15 * kNsPerSecond) == 0);
    }
    CHECK(up.output().find("torn down") != std::string::npos);
    check_no_leftovers(prefix);
  }
}

TEST_CASE(
    "adaptsim-testbed run: the command sees the hosts and their congestion control, its exit "
    "code is returned") {
  const std::string topo = std::string(ADAPTSIM_SOURCE_DIR) + "/topologies/cloud-vms.yaml";
  // Cubic, which a namespace may take as its default only once the machine allows it (this
  // machine allows "reno bbr"): the testbed adds it to the list while up.
  const std::string allowed_key = "net.ipv4.tcp_allowed_congestion_control";
  const std::string allowed_before = root_sysctl(allowed_key);
  const ToolResult r = run_tool(
      {"run", topo, "--set", "servers=2", "--prefix", "tbtrun", "--subnet", "10.231.0.0/16", "-q",
       "--congestion-control", "cubic", "--", "sh", "-c",
       "echo \"$ADAPTSIM_TESTBED_HOSTS|$ADAPTSIM_TESTBED_NS\"; "
       "ip netns exec tbtrun-h1 ip -o -4 addr show dev eth0 | grep -q 10.231.1.2/16 || exit 9; "
       "ip netns exec tbtrun-h1 cat /proc/sys/net/ipv4/tcp_congestion_control; exit 7"});
  CHECK(r.exit_code == 7);
  CHECK(r.out == "10.231.1.1,10.231.1.2|tbtrun-h0,tbtrun-h1\ncubic\n");
  CHECK(r.err.empty());
  check_no_leftovers("tbtrun");
  bool others = false;
  for (const FoundState& s : list_states())
    others = others || s.owner_alive;
  if (!others) CHECK(root_sysctl(allowed_key) == allowed_before);

  // Not a name: refused before anything is built.
  const ToolResult bad = run_tool({"run", topo, "--set", "servers=2", "--prefix", "tbtrun", "-q",
                                   "--congestion-control", "cubic;reboot", "--", "true"});
  CHECK(bad.exit_code == 2);
  CHECK(bad.err.find("\"cubic;reboot\" is not a TCP congestion control's name") !=
        std::string::npos);
  check_no_leftovers("tbtrun");
}

TEST_CASE("adaptsim-testbed without root: one line and exit code 2") {
  if (!find_program("setpriv")) {
    MESSAGE("setpriv not installed: skipped");
    return;
  }
  const std::string topo = std::string(ADAPTSIM_SOURCE_DIR) + "/topologies/cloud-vms.yaml";
  CommandOptions o;
  o.timeout_ns = 20 * kNsPerSecond;
  const CommandResult r =
      run_command({"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", tool_path(), "up",
                   topo, "--prefix", "tbtnoroot"},
                  o);
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("needs root") != std::string::npos);
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  check_no_leftovers("tbtnoroot");
}
