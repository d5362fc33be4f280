#include "hw/testbed/testbed.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <iostream>
#include <sstream>

#include "hw/testbed/command.h"
#include "hw/testbed/netns_sysctl.h"
#include "hw/testbed/signal_teardown.h"
#include "hw/testbed/state_file.h"
#include "sim/core/error.h"

namespace adaptsim::testbed {
namespace {

constexpr TimeNs kQueryTimeout = 10 * kNsPerSecond;

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty()) out.push_back(line);
  }
  return out;
}

CommandResult query(const std::vector<std::string>& argv) {
  CommandResult r = run_command(argv, {kQueryTimeout});
  if (!r.ok()) throw RuntimeFailure("testbed: " + describe_failure(argv, r));
  return r;
}

// Interface names of the root namespace ("12: a-v0@if2: <...>" -> "a-v0").
std::vector<std::string> list_links() {
  std::vector<std::string> out;
  for (const std::string& line : lines_of(query({"ip", "-o", "link", "show"}).out)) {
    const std::size_t colon = line.find(": ");
    if (colon == std::string::npos) continue;
    std::string name = line.substr(colon + 2);
    name = name.substr(0, name.find_first_of(":@ "));
    out.push_back(name);
  }
  return out;
}

// Named namespaces ("a-h0 (id: 3)" -> "a-h0").
std::vector<std::string> list_netns() {
  std::vector<std::string> out;
  for (const std::string& line : lines_of(query({"ip", "netns", "list"}).out)) {
    out.push_back(line.substr(0, line.find(' ')));
  }
  return out;
}

bool exists(const PlannedObject& o, const std::vector<std::string>& links,
            const std::vector<std::string>& netns) {
  const auto& names = o.kind == ObjectKind::kLink ? links : netns;
  return std::find(names.begin(), names.end(), o.name) != names.end();
}

// SIGKILLs every process inside the namespace (except this one): a namespace with a process in it
// outlives `ip netns del`.
void kill_netns_processes(const std::string& ns) {
  const CommandResult r = run_command({"ip", "netns", "pids", ns}, {kQueryTimeout});
  if (!r.ok()) return;  // gone already
  for (const std::string& line : lines_of(r.out)) {
    const int pid = std::atoi(line.c_str());
    if (pid > 1 && pid != ::getpid()) ::kill(pid, SIGKILL);
  }
}

// Removes `objects` (newest first), then checks that none remains. Returns how many existed, or
// throws RuntimeFailure naming what remains and why its removal failed.
int destroy(const std::vector<PlannedObject>& objects, TimeNs timeout_ns) {
  const std::vector<std::string> links_before = list_links();
  const std::vector<std::string> netns_before = list_netns();
  int existed = 0;
  std::vector<std::pair<PlannedObject, std::string>> failures;
  for (const PlannedObject& o : objects) {
    if (o.kind == ObjectKind::kNetns && exists(o, links_before, netns_before)) {
      kill_netns_processes(o.name);
    }
  }
  for (auto it = objects.rbegin(); it != objects.rend(); ++it) {
    if (!exists(*it, links_before, netns_before)) continue;
    ++existed;
    const std::vector<std::string> argv =
        it->kind == ObjectKind::kLink ? std::vector<std::string>{"ip", "link", "del", it->name}
                                      : std::vector<std::string>{"ip", "netns", "del", it->name};
    const CommandResult r = run_command(argv, {timeout_ns});
    if (!r.ok()) failures.emplace_back(*it, describe_failure(argv, r));
  }
  // Deleting one end of a veth removes the other, so a failed delete is only an error if the
  // object is still there.
  const std::vector<std::string> links_after = list_links();
  const std::vector<std::string> netns_after = list_netns();
  std::string remaining;
  for (const PlannedObject& o : objects) {
    if (!exists(o, links_after, netns_after)) continue;
    std::string why;
    for (const auto& [f, message] : failures) {
      if (f == o) why = message;
    }
    remaining += (remaining.empty() ? "" : "; ") + o.name + (why.empty() ? "" : " (" + why + ")");
  }
  if (!remaining.empty()) throw RuntimeFailure("testbed teardown left: " + remaining);
  return existed;
}

std::vector<PlannedObject> dedupe(std::vector<PlannedObject> objects) {
  std::vector<PlannedObject> out;
  for (PlannedObject& o : objects) {
    if (std::find(out.begin(), out.end(), o) == out.end()) out.push_back(std::move(o));
  }
  return out;
}

std::vector<Ipv4Net> addresses_in_use() {
  std::vector<Ipv4Net> out;
  auto scan = [&](const std::string& text, bool words_after_inet) {
    for (const std::string& line : lines_of(text)) {
      std::istringstream words(line);
      std::string w, prev;
      while (words >> w) {
        Ipv4Net net;
        const bool candidate = words_after_inet ? prev == "inet" : prev.empty();
        if (candidate && parse_ipv4_net(w, &net)) out.push_back(net);
        prev = w;
        if (!words_after_inet) break;  // a route's destination is its first word
      }
    }
  };
  scan(query({"ip", "-o", "-4", "addr", "show"}).out, true);
  scan(query({"ip", "-4", "route", "show", "table", "all"}).out, false);
  return out;
}

bool any_testbed_alive() {
  const std::vector<FoundState> states = list_states();
  return std::any_of(states.begin(), states.end(),
                     [](const FoundState& s) { return s.owner_alive; });
}

void print_teardown_error(const std::string& prefix, const std::exception& e) {
  std::cerr << "adaptsim-testbed: teardown of " << prefix << ": " << e.what() << std::endl;
}

}  // namespace

bool testbed_supported(std::string* why) {
  auto fail = [&](const std::string& message) {
    if (why) *why = message;
    return false;
  };
  if (::geteuid() != 0) {
    return fail("needs root (network namespaces, veths, bridges and tc); run it with sudo");
  }
  for (const char* program : {"ip", "tc"}) {
    if (!find_program(program)) {
      return fail(std::string("`") + program + "` not found (install iproute2)");
    }
  }
  // Probes in throwaway namespaces: each vanishes with its child process.
  const std::vector<std::vector<std::string>> probes = {
      {"ip", "link", "add", "tbprobe0", "type", "bridge"},
      {"ip", "link", "add", "tbprobe1", "type", "veth", "peer", "name", "tbprobe2"},
      {"tc", "qdisc", "add", "dev", "lo", "root", "handle", "1:", "htb", "default", "1"},
  };
  for (const auto& argv : probes) {
    CommandOptions o;
    o.new_netns = true;
    o.timeout_ns = kQueryTimeout;
    try {
      const CommandResult r = run_command(argv, o);
      if (!r.ok()) return fail("probe " + describe_failure(argv, r));
    } catch (const RuntimeFailure& e) {
      return fail(e.what());
    }
  }
  return true;
}

std::vector<std::string> existing_objects(const std::string& prefix) {
  std::vector<std::string> out;
  for (const std::string& n : list_netns()) {
    if (is_testbed_name(prefix, n)) out.push_back(n);
  }
  for (const std::string& n : list_links()) {
    if (is_testbed_name(prefix, n)) out.push_back(n);
  }
  return out;
}

int remove_stale(const std::string& prefix) {
  std::string why;
  if (!valid_prefix(prefix, &why)) throw InputError("testbed: " + why);
  int lock_fd = -1;
  bool owner_alive = false;
  std::optional<StateRecord> record = claim_stale(prefix, &lock_fd, &owner_alive);
  if (owner_alive) return 0;
  std::vector<PlannedObject> objects;
  if (record) objects = record->objects;
  // The sweep by name: objects of this prefix whose record is lost. destroy() removes in
  // reverse order, so links go before namespaces, as at teardown.
  for (const std::string& n : list_netns()) {
    if (is_testbed_name(prefix, n)) objects.push_back({ObjectKind::kNetns, n});
  }
  for (const std::string& n : list_links()) {
    if (is_testbed_name(prefix, n)) objects.push_back({ObjectKind::kLink, n});
  }
  int removed = 0;
  try {
    removed = destroy(dedupe(std::move(objects)), kQueryTimeout);
  } catch (...) {
    if (lock_fd >= 0) ::close(lock_fd);  // keep the record for the next attempt
    throw;
  }
  if (record) release_stale(prefix, lock_fd);
  restore_sysctls_if_last(any_testbed_alive);
  return removed;
}

struct Testbed::Impl {
  TestbedOptions options;
  TestbedPlan plan;
  std::vector<Host> hosts;
  std::vector<SysctlChange> sysctls;
  std::vector<std::string> sysctl_notes;
  std::vector<PlannedObject> created;
  StateFile state;
  std::unique_ptr<EmergencyTeardown> emergency;
  int emergency_slot = -1;
  bool active = false;
};

Testbed::Testbed(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Testbed::Testbed(Testbed&&) noexcept = default;

Testbed& Testbed::operator=(Testbed&& other) noexcept {
  if (this != &other) {
    try {
      teardown();
    } catch (const std::exception& e) {
      print_teardown_error(prefix(), e);
    }
    impl_ = std::move(other.impl_);
  }
  return *this;
}

Testbed::~Testbed() {
  if (!impl_) return;
  try {
    teardown();
  } catch (const std::exception& e) {
    print_teardown_error(impl_->plan.prefix, e);
  }
}

const std::vector<Host>& Testbed::hosts() const {
  return impl_->hosts;
}
const TestbedPlan& Testbed::plan() const {
  return impl_->plan;
}
const std::string& Testbed::prefix() const {
  return impl_->plan.prefix;
}
const std::vector<SysctlChange>& Testbed::sysctl_changes() const {
  return impl_->sysctls;
}
const std::vector<std::string>& Testbed::sysctl_notes() const {
  return impl_->sysctl_notes;
}
bool Testbed::active() const {
  return impl_ && impl_->active;
}

void Testbed::set_host_rate(int host, double rate_Bps) const {
  const PlannedHost& h = impl_->plan.hosts.at(static_cast<std::size_t>(host));
  const Shaping shaping = make_shaping(rate_Bps, impl_->plan.queue_delay_ns);
  for (const auto& [netns, device] :
       {std::pair<std::string, std::string>{h.ns, "eth0"}, {"", h.bridge_port}}) {
    for (const std::vector<std::string>& argv :
         tc_change_shaping_commands(netns, device, shaping)) {
      const CommandResult r = run_command(argv, {impl_->options.command_timeout_ns});
      if (!r.ok()) throw RuntimeFailure(describe_failure(argv, r));
    }
  }
}

std::vector<std::string> Testbed::exec_prefix(int host) const {
  if (host < 0 || host >= static_cast<int>(impl_->hosts.size())) {
    throw std::out_of_range("testbed: no host " + std::to_string(host));
  }
  return {"ip", "netns", "exec", impl_->hosts[static_cast<std::size_t>(host)].ns};
}

Testbed Testbed::create(const topo::ClusterSpec& spec, TestbedOptions options) {
  SignalHoldoff holdoff;  // a SIGINT now is handled once the testbed is complete (or gone)
  // Input first: everything the user can get wrong is reported before touching the machine.
  PlanOptions po;
  po.prefix = options.prefix;
  if (options.queue_delay_ns == 0) {
    options.queue_delay_ns =
        spec.server.nic.queue_ns > 0 ? spec.server.nic.queue_ns : kDefaultQueueDelayNs;
  }
  po.queue_delay_ns = options.queue_delay_ns;
  if (options.subnet_octet > 255) {
    throw InputError("testbed: subnet 10." + std::to_string(options.subnet_octet) +
                     ".0.0/16 is not an IPv4 network");
  }
  if (options.queue_delay_ns <= 0) throw InputError("testbed: the queue delay must be > 0");
  for (const auto& [key, value] : options.raise_sysctls) {
    if (!valid_sysctl_key(key)) throw InputError("testbed: invalid sysctl key \"" + key + "\"");
  }
  for (const auto& [key, value] : options.namespace_sysctls) {
    if (!valid_sysctl_key(key)) throw InputError("testbed: invalid sysctl key \"" + key + "\"");
  }
  for (const auto& [key, word] : options.include_in_sysctl_lists) {
    if (!valid_sysctl_key(key)) throw InputError("testbed: invalid sysctl key \"" + key + "\"");
    if (word.empty() || word.find_first_of(" \t\n") != std::string::npos) {
      throw InputError("testbed: \"" + word + "\" is not one word of sysctl " + key);
    }
  }
  if (!options.congestion_control.empty()) {
    const std::string& cc = options.congestion_control;
    if (!std::all_of(cc.begin(), cc.end(), [](char c) {
          return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
        })) {
      throw InputError("testbed: \"" + cc +
                       "\" is not a TCP congestion control's name (e.g. cubic, reno, bbr)");
    }
    options.include_in_sysctl_lists.emplace_back("net.ipv4.tcp_allowed_congestion_control", cc);
  }
  make_plan(spec, po);

  std::string why;
  if (!testbed_supported(&why)) throw RuntimeFailure("testbed not supported here: " + why);
  if (spec.server.nic.loss > 0 && !find_program("iptables")) {
    throw RuntimeFailure("testbed: the NICs' loss needs `iptables` (apt-get install iptables)");
  }
  remove_stale(options.prefix);
  po.subnet_octet = options.subnet_octet >= 0
                        ? static_cast<std::uint8_t>(options.subnet_octet)
                        : choose_subnet_octet(addresses_in_use(), default_subnet_candidates());

  auto impl = std::make_unique<Impl>();
  impl->options = options;
  impl->plan = make_plan(spec, po);
  impl->state = StateFile::create(options.prefix, spec.name, impl->plan.subnet);
  for (const PlannedHost& h : impl->plan.hosts) {
    impl->hosts.push_back({h.ns, h.ip, h.egress_Bps, h.ingress_Bps});
    std::ostringstream line;
    line << "host " << h.ns << ' ' << h.ip << ' ' << h.egress_Bps << ' ' << h.ingress_Bps;
    impl->state.append(line.str());
  }

  try {
    for (const PlanStep& step : impl->plan.steps) {
      if (step.creates_object) {
        impl->state.record(step.object);  // before: a crash right after leaves no orphan
        impl->created.push_back(step.object);
      }
      const CommandResult r = run_command(step.argv, {options.command_timeout_ns});
      if (!r.ok()) throw RuntimeFailure(describe_failure(step.argv, r));
    }
    impl->sysctls = raise_sysctls(options.raise_sysctls, &impl->sysctl_notes);
    for (SysctlChange& c :
         include_in_sysctl_lists(options.include_in_sysctl_lists, &impl->sysctl_notes)) {
      impl->sysctls.push_back(std::move(c));
    }
    for (const SysctlChange& c : impl->sysctls) {
      impl->state.append("sysctl " + c.key + " " + c.old_value + " " + c.new_value);
    }
    for (const Host& h : impl->hosts) {
      if (!options.congestion_control.empty()) {
        write_netns_sysctl(h.ns, "net.ipv4.tcp_congestion_control", options.congestion_control);
      }
      for (const auto& [key, value] : options.namespace_sysctls)
        write_netns_sysctl(h.ns, key, value);
    }
  } catch (const std::exception& e) {
    std::string message = "testbed " + options.prefix + ": " + e.what();
    try {
      destroy(impl->created, options.command_timeout_ns);
      impl->state.remove();
      restore_sysctls_if_last(any_testbed_alive);
    } catch (const std::exception& cleanup) {
      message += "; cleaning up: " + std::string(cleanup.what());
    }
    throw RuntimeFailure(message);
  }

  std::vector<std::vector<std::string>> commands;
  const std::string ip = find_program("ip").value_or("/usr/sbin/ip");
  for (auto it = impl->created.rbegin(); it != impl->created.rend(); ++it) {
    commands.push_back(it->kind == ObjectKind::kLink
                           ? std::vector<std::string>{"ip", "link", "del", it->name}
                           : std::vector<std::string>{"ip", "netns", "del", it->name});
  }
  impl->emergency = std::make_unique<EmergencyTeardown>(ip, commands, impl->state.path().string());
  impl->emergency_slot = register_emergency(impl->emergency.get());
  impl->active = true;
  return Testbed(std::move(impl));
}

void Testbed::teardown() {
  if (!impl_ || !impl_->active) return;
  SignalHoldoff holdoff;
  impl_->active = false;
  unregister_emergency(impl_->emergency_slot);
  impl_->emergency_slot = -1;
  destroy(impl_->created, impl_->options.command_timeout_ns);  // throws: the record stays
  impl_->state.remove();
  restore_sysctls_if_last(any_testbed_alive);
}

}  // namespace adaptsim::testbed
