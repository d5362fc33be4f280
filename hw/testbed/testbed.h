#pragma once
// An emulated cluster on one Linux machine: every server of a topology becomes a network
// namespace with one capped NIC, joined by bridges as switches (testbed_plan.h has the model and
// the tc settings). Live workers run inside the namespaces (exec_prefix) and bind to the hosts'
// addresses; the simulator's topology file describes both.
//
// Lifetime: create() builds everything or nothing (a failed command tears down what was made and
// throws RuntimeFailure naming the command and its stderr). The destructor or teardown() removes
// it all, killing processes still inside the namespaces. A crashed owner's testbed is found by
// its state file (state_file.h) and removed by remove_stale(), which create() runs first.
// Signals: install_signal_teardown() (signal_teardown.h) or the tool's own handling.
//
// Needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN for namespaces), `ip` and `tc` (iproute2), and a
// kernel with veth, bridge and htb; testbed_supported() checks all of it in a throwaway namespace.

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "hw/testbed/sysctl_guard.h"
#include "hw/testbed/testbed_plan.h"
#include "sim/core/time.h"
#include "sim/topo/cluster_spec.h"

namespace adaptsim::testbed {

// Whether testbeds can be built here; otherwise `why` (if given) says what is missing, in one line.
bool testbed_supported(std::string* why);

// The FIFO depth when neither the options nor the topology give one.
inline constexpr TimeNs kDefaultQueueDelayNs = 5 * kNsPerMs;

struct TestbedOptions {
  std::string prefix = "adaptsim";  // letters and digits; names "<prefix>-h<i>", "<prefix>-br"...
  // x of the hosts' subnet 10.x.0.0/16; -1: the first of default_subnet_candidates() that no
  // address or route of this machine overlaps. (The hosts live in their own namespaces, so an
  // overlap would only matter to traffic between them and the root namespace.)
  int subnet_octet = -1;
  // Depth of the FIFO behind every shaper, as queueing time at the link's rate (Shaping).
  // 0: the topology's NIC `queue` when it gives one, else kDefaultQueueDelayNs.
  TimeNs queue_delay_ns = 0;
  // Machine-wide sysctls raised to at least these values while any testbed is up, restored by
  // the last one to go (sysctl_guard.h). Default: the live transport's 4 MiB socket buffers.
  std::vector<std::pair<std::string, std::uint64_t>> raise_sysctls = {
      {"net.core.rmem_max", 4u << 20}, {"net.core.wmem_max", 4u << 20}};
  // Words added to machine-wide list sysctls while any testbed is up, restored by the last one to
  // go (sysctl_guard.h), e.g. {"net.ipv4.tcp_allowed_congestion_control", "cubic"}: a host's
  // namespace may then take it as its default congestion control.
  std::vector<std::pair<std::string, std::string>> include_in_sysctl_lists;
  // Every host namespace's default TCP congestion control (net.ipv4.tcp_congestion_control),
  // for programs that do not choose one per socket (an MPI library, iperf3); the word is added
  // to net.ipv4.tcp_allowed_congestion_control while the testbed is up, since a namespace other
  // than the first may only take an allowed one (the kernel's tcp_set_default_congestion_control).
  // Empty: what a new namespace inherits (this machine's: BBR).
  std::string congestion_control;
  // Sysctls written in every host's namespace once it is up (after congestion_control), e.g.
  // {"net.ipv4.tcp_slow_start_after_idle", "0"}; gone with the namespaces.
  std::vector<std::pair<std::string, std::string>> namespace_sysctls;
  TimeNs command_timeout_ns = 10 * kNsPerSecond;  // per ip/tc command
};

struct Host {
  std::string ns;  // network namespace
  std::string ip;  // IPv4 address of its eth0
  double egress_Bps = 0;
  double ingress_Bps = 0;
};

class Testbed {
 public:
  // Removes stale testbeds with the same prefix, then builds one for `spec`. Throws InputError
  // for what cannot be emulated (testbed_plan.h) and RuntimeFailure for anything at run time
  // (not supported, prefix held by a live process, a failed command).
  static Testbed create(const topo::ClusterSpec& spec, TestbedOptions options = {});

  Testbed(Testbed&&) noexcept;
  Testbed& operator=(Testbed&&) noexcept;
  ~Testbed();  // teardown(); errors are printed to stderr, never thrown

  const std::vector<Host>& hosts() const;
  const TestbedPlan& plan() const;
  const std::string& prefix() const;
  const std::vector<SysctlChange>& sysctl_changes() const;  // made by this testbed
  const std::vector<std::string>& sysctl_notes() const;     // what could not be raised
  bool active() const;                                      // false after teardown()

  // Prepended to a command to run it on `host`: {"ip", "netns", "exec", ns}.
  std::vector<std::string> exec_prefix(int host) const;

  // Changes `host`'s NIC caps, both directions, to `rate_Bps` while the testbed runs (a straggling
  // link from a step on), with the queue behind each cap sized as at the build. Throws
  // RuntimeFailure naming the failed command.
  void set_host_rate(int host, double rate_Bps) const;

  // Removes every object (processes left in the namespaces are killed first) and the state
  // file, and restores raised sysctls if no other testbed is up. Idempotent. Throws
  // RuntimeFailure listing what could not be removed.
  void teardown();

 private:
  struct Impl;
  explicit Testbed(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Removes the leftovers of testbeds with `prefix` whose owner is gone: the objects its state file
// records, plus any namespace or interface named like a testbed object of that prefix (in case
// the record is lost). A testbed whose owner is alive is left alone. Restores raised sysctls when
// no testbed is left up. Returns the number of namespaces and interfaces removed. Throws
// RuntimeFailure when something remains.
int remove_stale(const std::string& prefix);

// Namespaces and interfaces of this machine named like objects of a testbed with `prefix`.
std::vector<std::string> existing_objects(const std::string& prefix);

}  // namespace adaptsim::testbed
