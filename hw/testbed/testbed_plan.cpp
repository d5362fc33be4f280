#include "hw/testbed/testbed_plan.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>

#include "sim/core/error.h"
#include "sim/core/units.h"
#include "sim/topo/topology.h"

namespace adaptsim::testbed {
namespace {

constexpr std::uint64_t kGsoMaxBytes = 64 * 1024;  // largest GSO super-packet on a veth
constexpr TimeNs kBurstTime = kNsPerMs;
constexpr std::size_t kMaxPrefix = 12;  // leaves room for "-br", "-v<i>", "-u<k>a"

PlanStep command(std::vector<std::string> argv) {
  return PlanStep{std::move(argv), false, {}};
}

PlanStep create(ObjectKind kind, const std::string& name, std::vector<std::string> argv) {
  return PlanStep{std::move(argv), true, PlannedObject{kind, name}};
}

bool all_digits(const std::string& s, std::size_t from, std::size_t to) {
  if (from >= to) return false;
  for (std::size_t i = from; i < to; ++i) {
    if (!std::isdigit(static_cast<unsigned char>(s[i]))) return false;
  }
  return true;
}

void add_shaping(std::vector<PlanStep>& steps, const std::string& netns, const std::string& device,
                 double rate_Bps, TimeNs queue_delay_ns) {
  if (rate_Bps <= 0) return;
  for (auto& argv : tc_shaping_commands(netns, device, make_shaping(rate_Bps, queue_delay_ns))) {
    steps.push_back(command(std::move(argv)));
  }
}

}  // namespace

Shaping make_shaping(double rate_Bps, TimeNs queue_delay_ns) {
  Shaping s;
  s.rate_Bps = rate_Bps;
  const auto at_rate = [&](TimeNs t) {
    return static_cast<std::uint64_t>(std::ceil(rate_Bps * to_seconds(t)));
  };
  s.burst_bytes = std::max(at_rate(kBurstTime), kGsoMaxBytes);
  s.quantum_bytes = kGsoMaxBytes;
  s.queue_limit_bytes = std::max(at_rate(queue_delay_ns), 4 * kGsoMaxBytes);
  return s;
}

std::string tc_rate(double rate_Bps) {
  return std::to_string(static_cast<std::uint64_t>(std::llround(rate_Bps * 8))) + "bit";
}

std::vector<std::vector<std::string>> tc_shaping_commands(const std::string& netns,
                                                          const std::string& device,
                                                          const Shaping& s) {
  std::vector<std::string> tc = {"tc"};
  if (!netns.empty()) tc.insert(tc.end(), {"-n", netns});
  auto with = [&](std::initializer_list<std::string> rest) {
    std::vector<std::string> argv = tc;
    argv.insert(argv.end(), rest);
    return argv;
  };
  const std::string rate = tc_rate(s.rate_Bps);
  const std::string burst = std::to_string(s.burst_bytes) + "b";
  return {
      with({"qdisc", "add", "dev", device, "root", "handle", "1:", "htb", "default", "1"}),
      with({"class", "add", "dev", device, "parent", "1:", "classid", "1:1", "htb", "rate", rate,
            "ceil", rate, "burst", burst, "cburst", burst, "quantum",
            std::to_string(s.quantum_bytes)}),
      with({"qdisc", "add", "dev", device, "parent", "1:1", "handle", "10:", "bfifo", "limit",
            std::to_string(s.queue_limit_bytes)}),
  };
}

std::vector<std::vector<std::string>> tc_change_shaping_commands(const std::string& netns,
                                                                 const std::string& device,
                                                                 const Shaping& s) {
  std::vector<std::vector<std::string>> argvs = tc_shaping_commands(netns, device, s);
  argvs.erase(argvs.begin());  // the root qdisc stays
  for (std::vector<std::string>& argv : argvs)
    *std::find(argv.begin(), argv.end(), "add") = "change";
  return argvs;
}

std::vector<std::vector<std::string>> tc_fair_shaping_commands(
    const std::string& netns, const std::string& device, const Shaping& s,
    const std::vector<std::string>& host_ips, bool match_source) {
  std::vector<std::string> tc = {"tc"};
  if (!netns.empty()) tc.insert(tc.end(), {"-n", netns});
  auto with = [&](std::initializer_list<std::string> rest) {
    std::vector<std::string> argv = tc;
    argv.insert(argv.end(), rest);
    return argv;
  };
  const std::string ceil = tc_rate(s.rate_Bps);
  const std::string burst = std::to_string(s.burst_bytes) + "b";
  const std::string quantum = std::to_string(s.quantum_bytes);
  const std::string limit = std::to_string(s.queue_limit_bytes);
  auto child = [&](const std::string& id, double rate_Bps) {
    return with({"class", "add", "dev", device, "parent", "1:1", "classid", "1:" + id, "htb",
                 "rate", tc_rate(rate_Bps), "ceil", ceil, "burst", burst, "cburst", burst,
                 "quantum", quantum});
  };
  std::vector<std::vector<std::string>> out = {
      with({"qdisc", "add", "dev", device, "root", "handle", "1:", "htb", "default", "2"}),
      with({"class", "add", "dev", device, "parent", "1:", "classid", "1:1", "htb", "rate", ceil,
            "ceil", ceil, "burst", burst, "cburst", burst, "quantum", quantum}),
      // The default class only carries ARP and strays: a token guarantee (1%, >= 8 kbit/s).
      child("2", std::max(s.rate_Bps / 100, 1000.0)),
      with({"qdisc", "add", "dev", device, "parent", "1:2", "handle", "2:", "bfifo", "limit",
            limit}),
  };
  const double share = s.rate_Bps / static_cast<double>(std::max<std::size_t>(host_ips.size(), 1));
  for (std::size_t j = 0; j < host_ips.size(); ++j) {
    char id[16];
    std::snprintf(id, sizeof id, "%zx", 0x100 + j);  // tc class and handle ids are hexadecimal
    out.push_back(child(id, share));
    out.push_back(with({"qdisc", "add", "dev", device, "parent", std::string("1:") + id, "handle",
                        std::string(id) + ":", "bfifo", "limit", limit}));
    out.push_back(with({"filter", "add", "dev", device, "parent", "1:", "protocol", "ip", "prio",
                        "1", "u32", "match", "ip", match_source ? "src" : "dst",
                        host_ips[j] + "/32", "flowid", std::string("1:") + id}));
  }
  return out;
}

std::vector<std::vector<std::string>> tc_wan_shaping_commands(
    const std::string& device, const std::vector<PlannedWanLink>& links, TimeNs queue_delay_ns) {
  auto tc = [&](std::initializer_list<std::string> rest) {
    std::vector<std::string> argv = {"tc"};
    argv.insert(argv.end(), rest);
    return argv;
  };
  std::vector<std::vector<std::string>> out = {
      tc({"qdisc", "add", "dev", device, "root", "handle", "1:", "htb", "default", "2"}),
  };
  // The default class: ARP and strays, unshaped (a veth's line rate is far above any cap here).
  const Shaping line = make_shaping(100e9, queue_delay_ns);
  out.push_back(tc({"class", "add", "dev", device, "parent", "1:", "classid", "1:2", "htb", "rate",
                    tc_rate(line.rate_Bps), "burst", std::to_string(line.burst_bytes) + "b",
                    "quantum", std::to_string(line.quantum_bytes)}));
  int id = 0x10;
  for (const PlannedWanLink& l : links) {
    const Shaping s = make_shaping(l.bandwidth_Bps, queue_delay_ns);
    const std::string ceil = tc_rate(s.rate_Bps), burst = std::to_string(s.burst_bytes) + "b",
                      quantum = std::to_string(s.quantum_bytes),
                      limit = std::to_string(s.queue_limit_bytes);
    char link_id[16];
    std::snprintf(link_id, sizeof link_id, "%x", id++);  // tc ids are hexadecimal
    out.push_back(tc({"class", "add", "dev", device, "parent", "1:", "classid",
                      std::string("1:") + link_id, "htb", "rate", ceil, "ceil", ceil, "burst",
                      burst, "cburst", burst, "quantum", quantum}));
    const double share =
        s.rate_Bps / static_cast<double>(std::max<std::size_t>(l.src_ips.size(), 1));
    for (const std::string& src : l.src_ips) {
      char host_id[16];
      std::snprintf(host_id, sizeof host_id, "%x", id++);
      const std::string cls = std::string("1:") + host_id;
      out.push_back(tc({"class", "add", "dev", device, "parent", std::string("1:") + link_id,
                        "classid", cls, "htb", "rate", tc_rate(share), "ceil", ceil, "burst", burst,
                        "cburst", burst, "quantum", quantum}));
      out.push_back(tc({"qdisc", "add", "dev", device, "parent", cls, "handle",
                        std::string(host_id) + ":", "bfifo", "limit", limit}));
      for (const std::string& dst : l.dst_ips) {
        out.push_back(tc({"filter",    "add",   "dev", device, "parent",    "1:",     "protocol",
                          "ip",        "prio",  "1",   "u32",  "match",     "ip",     "src",
                          src + "/32", "match", "ip",  "dst",  dst + "/32", "flowid", cls}));
      }
    }
  }
  return out;
}

std::string host_address(std::uint8_t subnet_octet, int host) {
  return "10." + std::to_string(subnet_octet) + "." + std::to_string(1 + host / 250) + "." +
         std::to_string(1 + host % 250);
}

bool valid_prefix(const std::string& prefix, std::string* why) {
  auto fail = [&](const std::string& message) {
    if (why) *why = message;
    return false;
  };
  if (prefix.empty() || prefix.size() > kMaxPrefix) {
    return fail("the prefix must have 1 to " + std::to_string(kMaxPrefix) + " characters, got \"" +
                prefix + "\"");
  }
  if (!std::isalpha(static_cast<unsigned char>(prefix[0]))) {
    return fail("the prefix must start with a letter, got \"" + prefix + "\"");
  }
  for (char c : prefix) {
    if (!std::isalnum(static_cast<unsigned char>(c))) {
      return fail("the prefix may hold only letters and digits, got \"" + prefix + "\"");
    }
  }
  return true;
}

bool is_testbed_name(const std::string& prefix, const std::string& name) {
  const std::string head = prefix + "-";
  if (name.size() <= head.size() || name.compare(0, head.size(), head) != 0) return false;
  const std::string rest = name.substr(head.size());
  if (rest == "br" || rest == "sp") return true;
  const char kind = rest[0];
  if (kind == 'h' || kind == 'v' || kind == 'l') return all_digits(rest, 1, rest.size());
  if (kind == 'u') {
    return rest.size() >= 3 && (rest.back() == 'a' || rest.back() == 'b') &&
           all_digits(rest, 1, rest.size() - 1);
  }
  return false;
}

namespace {

// iptables' statistic match takes a probability with up to 10 decimals.
std::string format_probability(double p) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.10f", p);
  return buf;
}

// A WAN fabric's bridges, uplinks and link classes (testbed_plan.h, "wan").
void plan_wan(const topo::ClusterSpec& spec, const PlanOptions& options, TestbedPlan& plan,
              std::vector<std::string>& host_bridge) {
  const std::string& p = options.prefix;
  if (spec.extra_hosts > 0) {
    throw InputError("testbed: topology '" + spec.name +
                     "' has a WAN fabric; hosts outside the job need a switch or fat_tree");
  }
  // The topology as the simulator builds it: a region pair's traffic must take its direct link
  // (the testbed joins regions through one hub, so it has no other path to emulate).
  const topo::Topology topology = topo::build_cluster(spec);
  struct Region {
    std::string name;
    int first = 0, count = 0;
    std::string bridge, uplink;
  };
  std::vector<Region> regions;
  int next = 0;
  for (const topo::WanRegionSpec& r : spec.fabric.regions) {
    Region g{r.name, next, r.servers, "", ""};
    next += r.servers;
    if (g.count == 0) continue;  // a region without servers carries nothing
    const int k = static_cast<int>(regions.size());
    g.bridge = p + "-l" + std::to_string(k);
    g.uplink = p + "-u" + std::to_string(k) + "a";
    plan.bridges.push_back(g.bridge);
    for (int i = g.first; i < g.first + g.count; ++i)
      host_bridge[static_cast<std::size_t>(i)] = g.bridge;
    regions.push_back(std::move(g));
  }
  plan.bridges.push_back(p + "-sp");
  for (std::size_t k = 0; k < regions.size(); ++k) {
    plan.uplinks.push_back({regions[k].bridge,
                            p + "-sp",
                            regions[k].uplink,
                            p + "-u" + std::to_string(k) + "b",
                            0,
                            {}});
  }
  auto ips = [&](const Region& g) {
    std::vector<std::string> out;
    for (int i = g.first; i < g.first + g.count; ++i)
      out.push_back(host_address(options.subnet_octet, i));
    return out;
  };
  for (const Region& from : regions) {
    for (const Region& to : regions) {
      if (&from == &to) continue;
      const topo::WanLinkSpec* link = nullptr;
      for (const topo::WanLinkSpec& l : spec.fabric.wan_links) {
        if ((l.a == from.name && l.b == to.name) || (l.a == to.name && l.b == from.name)) link = &l;
      }
      const auto a = topology.find("router." + from.name), b = topology.find("router." + to.name);
      if (link == nullptr || !a || !b || topology.route(*a, *b).size() != 1) {
        throw InputError("testbed: regions '" + from.name + "' and '" + to.name +
                         "' do not talk over their own WAN link in topology '" + spec.name +
                         "'; the testbed emulates direct links between regions only");
      }
      if (link->params.loss > 0) {
        throw InputError("testbed: the WAN link between '" + from.name + "' and '" + to.name +
                         "' has a loss; the testbed drops packets at the hosts' NICs only");
      }
      if (link->params.latency_ns > kNsPerMs) {
        throw InputError("testbed: the WAN link between '" + from.name + "' and '" + to.name +
                         "' has a latency of " + format_duration(link->params.latency_ns) +
                         ", which the testbed cannot add (no netem on this kernel); expected at "
                         "most 1 ms (set the link's latency to the testbed's to compare)");
      }
      plan.wan_links.push_back(
          {from.uplink, from.name, to.name, link->params.bandwidth_Bps, ips(from), ips(to)});
    }
  }
}

}  // namespace

TestbedPlan make_plan(const topo::ClusterSpec& spec, const PlanOptions& options) {
  std::string why;
  if (!valid_prefix(options.prefix, &why)) throw InputError("testbed: " + why);
  if (spec.servers < 1) throw InputError("testbed: the topology has no servers");
  if (spec.server.nics < 1) {
    throw InputError("testbed: topology '" + spec.name + "' gives its servers no NIC");
  }
  if (spec.server.nic.bandwidth_Bps <= 0) {
    throw InputError("testbed: topology '" + spec.name + "' gives its NIC no bandwidth");
  }
  if (spec.server.nic.stream_bandwidth_Bps > 0) {
    throw InputError("testbed: topology '" + spec.name +
                     "' limits each connection through its NIC (stream_bandwidth); the testbed "
                     "caps a host's whole NIC, not each connection");
  }
  if (spec.fabric.kind == topo::FabricKind::kFatTree && spec.fabric.uplink.loss > 0) {
    throw InputError("testbed: topology '" + spec.name +
                     "' sets a loss on its fat tree's uplinks; the testbed drops packets at the "
                     "hosts' NICs only");
  }
  const std::string& p = options.prefix;
  TestbedPlan plan;
  plan.prefix = p;
  plan.subnet = "10." + std::to_string(options.subnet_octet) + ".0.0/16";
  plan.fabric = spec.fabric.kind;
  plan.queue_delay_ns = options.queue_delay_ns;
  // Every host-to-host packet crosses two NIC links (the sender's egress, the receiver's
  // ingress), each dropping `loss` of its packets in the simulator. The testbed drops them where
  // Linux handles a drop as the network's, on arrival (iptables INPUT in the receiver's
  // namespace; a drop in OUTPUT is reported to the sending socket instead), with the probability
  // of the two links together.
  const double loss = spec.server.nic.loss;
  plan.input_drop_probability = 1 - (1 - loss) * (1 - loss);

  // Every host: the job's servers, then the extra hosts outside the job (ClusterSpec::hosts()).
  const int hosts = spec.hosts();
  std::vector<std::string> host_bridge(static_cast<std::size_t>(hosts));
  if (spec.fabric.kind == topo::FabricKind::kSwitch) {
    plan.bridges.push_back(p + "-br");
    std::fill(host_bridge.begin(), host_bridge.end(), p + "-br");
  } else if (spec.fabric.kind == topo::FabricKind::kWan) {
    plan_wan(spec, options, plan, host_bridge);
  } else {
    const int per_leaf = spec.fabric.servers_per_leaf;
    if (per_leaf < 1) throw InputError("testbed: fat_tree needs servers_per_leaf >= 1");
    if (spec.fabric.spines < 1) throw InputError("testbed: fat_tree needs spines >= 1");
    if (spec.fabric.uplink.bandwidth_Bps <= 0) {
      throw InputError("testbed: fat_tree needs an uplink bandwidth");
    }
    const int leaves = (hosts + per_leaf - 1) / per_leaf;
    for (int k = 0; k < leaves; ++k)
      plan.bridges.push_back(p + "-l" + std::to_string(k));
    plan.bridges.push_back(p + "-sp");
    for (int k = 0; k < leaves; ++k) {
      plan.uplinks.push_back({plan.bridges[static_cast<std::size_t>(k)],
                              p + "-sp",
                              p + "-u" + std::to_string(k) + "a",
                              p + "-u" + std::to_string(k) + "b",
                              spec.fabric.uplink.bandwidth_Bps * spec.fabric.spines,
                              {}});
    }
    for (int i = 0; i < hosts; ++i) {
      host_bridge[static_cast<std::size_t>(i)] =
          plan.bridges[static_cast<std::size_t>(i / per_leaf)];
      plan.uplinks[static_cast<std::size_t>(i / per_leaf)].leaf_host_ips.push_back(
          host_address(options.subnet_octet, i));
    }
  }
  const double ingress = spec.server.nic.bandwidth_Bps;
  const double egress = spec.server.nic_egress_bandwidth_Bps.value_or(ingress);
  for (int i = 0; i < hosts; ++i) {
    plan.hosts.push_back({p + "-h" + std::to_string(i), host_address(options.subnet_octet, i),
                          p + "-v" + std::to_string(i), host_bridge[static_cast<std::size_t>(i)],
                          egress, ingress});
  }

  // Interface names are limited to 15 characters: check the longest of each kind.
  std::vector<std::string> names = plan.bridges;
  names.push_back(plan.hosts.back().bridge_port);
  if (!plan.uplinks.empty()) names.push_back(plan.uplinks.back().spine_end);
  for (const std::string& n : names) {
    if (n.size() > kMaxInterfaceName) {
      throw InputError("testbed: prefix \"" + p + "\" is too long for " + std::to_string(hosts) +
                       " hosts: interface name \"" + n + "\" exceeds " +
                       std::to_string(kMaxInterfaceName) + " characters");
    }
  }

  auto& steps = plan.steps;
  for (const std::string& br : plan.bridges) {
    steps.push_back(create(ObjectKind::kLink, br, {"ip", "link", "add", br, "type", "bridge"}));
    steps.push_back(command({"ip", "link", "set", br, "up"}));
  }
  for (const PlannedUplink& u : plan.uplinks) {
    steps.push_back(
        create(ObjectKind::kLink, u.leaf_end,
               {"ip", "link", "add", u.leaf_end, "type", "veth", "peer", "name", u.spine_end}));
    steps.push_back(command({"ip", "link", "set", u.leaf_end, "master", u.leaf_bridge}));
    steps.push_back(command({"ip", "link", "set", u.spine_end, "master", u.spine_bridge}));
    steps.push_back(command({"ip", "link", "set", u.leaf_end, "up"}));
    steps.push_back(command({"ip", "link", "set", u.spine_end, "up"}));
    if (plan.fabric == topo::FabricKind::kWan) {
      // The region's end carries its WAN links' classes; the hub's end forwards as it comes.
      std::vector<PlannedWanLink> leaving;
      for (const PlannedWanLink& l : plan.wan_links)
        if (l.device == u.leaf_end) leaving.push_back(l);
      for (auto& argv : tc_wan_shaping_commands(u.leaf_end, leaving, options.queue_delay_ns))
        steps.push_back(command(std::move(argv)));
      continue;
    }
    const Shaping shaping = make_shaping(u.bandwidth_Bps, options.queue_delay_ns);
    // Leaf -> spine traffic is told apart by its source (a host of this leaf), spine -> leaf
    // traffic by its destination.
    for (auto& argv : tc_fair_shaping_commands("", u.leaf_end, shaping, u.leaf_host_ips, true)) {
      steps.push_back(command(std::move(argv)));
    }
    for (auto& argv : tc_fair_shaping_commands("", u.spine_end, shaping, u.leaf_host_ips, false)) {
      steps.push_back(command(std::move(argv)));
    }
  }
  for (const PlannedHost& h : plan.hosts) {
    steps.push_back(create(ObjectKind::kNetns, h.ns, {"ip", "netns", "add", h.ns}));
    steps.push_back(create(ObjectKind::kLink, h.bridge_port,
                           {"ip", "link", "add", h.bridge_port, "type", "veth", "peer", "name",
                            "eth0", "netns", h.ns}));
    steps.push_back(command({"ip", "link", "set", h.bridge_port, "master", h.bridge}));
    steps.push_back(command({"ip", "link", "set", h.bridge_port, "up"}));
    steps.push_back(command({"ip", "-n", h.ns, "addr", "add", h.ip + "/16", "dev", "eth0"}));
    steps.push_back(command({"ip", "-n", h.ns, "link", "set", "lo", "up"}));
    steps.push_back(command({"ip", "-n", h.ns, "link", "set", "eth0", "up"}));
    add_shaping(steps, h.ns, "eth0", h.egress_Bps, options.queue_delay_ns);
    add_shaping(steps, "", h.bridge_port, h.ingress_Bps, options.queue_delay_ns);
    if (plan.input_drop_probability > 0) {
      steps.push_back(command({"ip", "netns", "exec", h.ns, "iptables", "-A", "INPUT", "-m",
                               "statistic", "--mode", "random", "--probability",
                               format_probability(plan.input_drop_probability), "-j", "DROP"}));
    }
  }
  return plan;
}

bool parse_ipv4_net(const std::string& text, Ipv4Net* out) {
  unsigned a, b, c, d;
  int len = 32;
  char tail = 0;
  int n = std::sscanf(text.c_str(), "%u.%u.%u.%u/%d%c", &a, &b, &c, &d, &len, &tail);
  if (n == 4) {
    len = 32;
  } else if (n != 5) {
    return false;
  }
  if (a > 255 || b > 255 || c > 255 || d > 255 || len < 0 || len > 32) return false;
  out->address = (a << 24) | (b << 16) | (c << 8) | d;
  out->length = len;
  return true;
}

bool overlaps(const Ipv4Net& a, const Ipv4Net& b) {
  const int len = std::min(a.length, b.length);
  const std::uint32_t mask = len == 0 ? 0 : ~std::uint32_t{0} << (32 - len);
  return (a.address & mask) == (b.address & mask);
}

std::uint8_t choose_subnet_octet(const std::vector<Ipv4Net>& in_use,
                                 const std::vector<std::uint8_t>& candidates) {
  for (std::uint8_t x : candidates) {
    const Ipv4Net net{(10u << 24) | (std::uint32_t{x} << 16), 16};
    const bool clash = std::any_of(in_use.begin(), in_use.end(), [&](const Ipv4Net& used) {
      return used.length > 0 && overlaps(net, used);  // a default route (/0) is no clash
    });
    if (!clash) return x;
  }
  throw RuntimeFailure(
      "testbed: every candidate subnet 10.x.0.0/16 overlaps an address or route "
      "of this machine; pass one with --subnet");
}

std::vector<std::uint8_t> default_subnet_candidates() {
  std::vector<std::uint8_t> out;
  for (int x = 213; x <= 254; ++x)
    out.push_back(static_cast<std::uint8_t>(x));
  for (int x = 200; x < 213; ++x)
    out.push_back(static_cast<std::uint8_t>(x));
  return out;
}

}  // namespace adaptsim::testbed
